//===- RuntimeTestUtils.h - Helpers shared by the commrt tests --*- C++ -*-===//

#ifndef COMMRT_UNITTESTS_RUNTIMETESTUTILS_H
#define COMMRT_UNITTESTS_RUNTIMETESTUTILS_H

#include "WireFormat.h"
#include "commrt/commrt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace commrt::testing {

/// Succeeds when `status` is `expected` and commrt_last_error() is `message`.
inline ::testing::AssertionResult
failedWith(int32_t status, commrt_status expected, const std::string &message) {
  if (status == expected && message == commrt_last_error())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << commrt_status_string(status) << " \""
         << commrt_last_error() << "\"\nwant " << commrt_status_string(expected)
         << " \"" << message << "\"";
}

/// A host buffer of elements of a commrt_dtype, read and written as double.
class TypedBuffer {
public:
  TypedBuffer(commrt_dtype dtype, int64_t count)
      : dtype(dtype), bytes(count * elementSize(dtype)) {}

  void *data() { return bytes.data(); }

  void set(int64_t i, double value) {
    switch (dtype) {
    case COMMRT_F32:
      return store(i, static_cast<float>(value));
    case COMMRT_F64:
      return store(i, value);
    case COMMRT_F16:
      return store(i, floatToHalf(static_cast<float>(value)));
    case COMMRT_BF16:
      return store(i, floatToBFloat16(static_cast<float>(value)));
    }
  }

  double get(int64_t i) const {
    switch (dtype) {
    case COMMRT_F32:
      return load<float>(i);
    case COMMRT_F64:
      return load<double>(i);
    case COMMRT_F16:
      return halfToFloat(load<uint16_t>(i));
    case COMMRT_BF16:
      return bfloat16ToFloat(load<uint16_t>(i));
    }
    return 0;
  }

private:
  template <typename T> void store(int64_t i, T value) {
    std::memcpy(&bytes[i * sizeof(T)], &value, sizeof(T));
  }
  template <typename T> T load(int64_t i) const {
    T value;
    std::memcpy(&value, &bytes[i * sizeof(T)], sizeof(T));
    return value;
  }

  commrt_dtype dtype;
  std::vector<unsigned char> bytes;
};

/// The value rank `r` contributes at index `i`: +-(1..7) * (r + 1). Exact in
/// every dtype, and so are the sums over up to 8 ranks.
inline double contribution(int r, int64_t i) {
  double magnitude = static_cast<double>(i % 7 + 1);
  return (i % 2 ? -magnitude : magnitude) * (r + 1);
}

/// The result of `reduce` over the contributions of `size` ranks at index
/// `i`.
inline double expectedReduction(commrt_reduce reduce, int64_t i, int size) {
  double first = contribution(0, i), last = contribution(size - 1, i);
  double sum = first * size * (size + 1) / 2;
  switch (reduce) {
  case COMMRT_SUM:
    return sum;
  case COMMRT_AVG:
    return sum / size;
  case COMMRT_MAX:
    return std::max(first, last);
  case COMMRT_MIN:
    return std::min(first, last);
  }
  return 0;
}

/// Names of the enum values, for test names and messages.
inline const char *dtypeName(commrt_dtype dtype) {
  static const char *const names[] = {"f32", "f64", "f16", "bf16"};
  return names[dtype];
}
inline const char *reduceName(commrt_reduce reduce) {
  static const char *const names[] = {"sum", "avg", "max", "min"};
  return names[reduce];
}

} // namespace commrt::testing

#endif // COMMRT_UNITTESTS_RUNTIMETESTUTILS_H
