//===- RuntimeTestUtils.h - Helpers shared by the commrt tests --*- C++ -*-===//

#ifndef COMMRT_UNITTESTS_RUNTIMETESTUTILS_H
#define COMMRT_UNITTESTS_RUNTIMETESTUTILS_H

#include "WireFormat.h"
#include "commrt/commrt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
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

/// Succeeds when `status` is `expected` and commrt_last_error() contains
/// `message`.
inline ::testing::AssertionResult failedContaining(int32_t status,
                                                   commrt_status expected,
                                                   const std::string &message) {
  std::string error = commrt_last_error();
  if (status == expected && error.find(message) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << commrt_status_string(status) << " \"" << error
         << "\"\nwant " << commrt_status_string(expected) << " with \""
         << message << "\"";
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

/// Rank `r`'s first `count` contributions in `dtype`, between two guard
/// elements that a collective on the contributions must leave untouched.
class GuardedContributions {
public:
  GuardedContributions(commrt_dtype dtype, int64_t count, int r)
      : dtype(dtype), count(count), buffer(dtype, count + 2) {
    buffer.set(0, kFirstGuard);
    buffer.set(count + 1, kLastGuard);
    for (int64_t i = 0; i < count; ++i)
      buffer.set(i + 1, contribution(r, i));
  }

  /// The first contribution.
  void *data() {
    return static_cast<char *>(buffer.data()) + elementSize(dtype);
  }

  /// Element `i` of the contributions, or what a collective left there.
  double get(int64_t i) const { return buffer.get(i + 1); }

  /// Expects both guards untouched.
  void expectGuardsIntact() const {
    EXPECT_EQ(buffer.get(0), kFirstGuard) << "the guard before";
    EXPECT_EQ(buffer.get(count + 1), kLastGuard) << "the guard after";
  }

private:
  static constexpr double kFirstGuard = 42.0, kLastGuard = 43.0;
  commrt_dtype dtype;
  int64_t count;
  TypedBuffer buffer;
};

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

// This rank, the number of ranks and the number of channels, queried once:
// the tests call them per element. Only for tests whose main initialises
// commrt before any test runs (MpiTestMain.cpp).
inline int rank() {
  static const int rank = commrt_rank();
  return rank;
}
inline int size() {
  static const int size = commrt_size();
  return size;
}
inline int channels() {
  static const int channels = commrt_channels();
  return channels;
}

/// Tests run with consistency checks off (false) and on (true).
class ChecksTest : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    ASSERT_EQ(commrt_set_consistency_checks(GetParam()), COMMRT_SUCCESS);
  }
  void TearDown() override { commrt_set_consistency_checks(0); }
};

/// The test name of a ChecksTest parameter: "On" or "Off".
inline std::string checksName(const ::testing::TestParamInfo<bool> &info) {
  return info.param ? "On" : "Off";
}

/// Tests that run with consistency checks on and need two or more ranks.
class CheckedTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (size() < 2)
      GTEST_SKIP() << "needs two or more ranks";
    ASSERT_EQ(commrt_set_consistency_checks(1), COMMRT_SUCCESS);
  }
  void TearDown() override { commrt_set_consistency_checks(0); }

  /// Runs a valid allreduce, showing that an error left no rank behind.
  virtual void expectRanksStillInStep() {
    double value = 1.0;
    ASSERT_EQ(commrt_allreduce(&value, 1, COMMRT_F64, COMMRT_SUM),
              COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_EQ(value, size());
  }

  static int lastRank() { return size() - 1; }
};

/// On one rank, runs `reduceInPlace(data, dtype, reduce)` on four values of
/// every dtype for every reduction, and expects the values unchanged. It
/// stops at the first fatal failure of `reduceInPlace`.
template <typename ReduceInPlace>
void expectOneRankKeepsTheValues(ReduceInPlace reduceInPlace) {
  const double values[] = {1.5, -2.0, 3.0, 0.25};
  for (int dtype = COMMRT_F32; dtype <= COMMRT_BF16; ++dtype) {
    for (int reduce = COMMRT_SUM; reduce <= COMMRT_MIN; ++reduce) {
      TypedBuffer buffer(static_cast<commrt_dtype>(dtype), 4);
      for (int i = 0; i < 4; ++i)
        buffer.set(i, values[i]);
      reduceInPlace(buffer.data(), dtype, reduce);
      if (::testing::Test::HasFatalFailure())
        return;
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(buffer.get(i), values[i])
            << "dtype " << dtype << ", reduce " << reduce;
    }
  }
}

/// A sparse allreduce scheme: selection, exchange and reduction.
using SparseScheme = std::tuple<commrt_select, commrt_exchange, commrt_reduce>;

/// Every valid pairing of selection and exchange, with SUM and AVG.
inline std::vector<SparseScheme> validSparseSchemes() {
  std::vector<SparseScheme> schemes;
  for (commrt_reduce reduce : {COMMRT_SUM, COMMRT_AVG}) {
    for (commrt_select select : {COMMRT_SELECT_TOPK, COMMRT_SELECT_THRESHOLD})
      for (commrt_exchange exchange :
           {COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_HASH})
        schemes.emplace_back(select, exchange, reduce);
    schemes.emplace_back(COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK, reduce);
  }
  return schemes;
}

/// A test name for a scheme, e.g. "topk_hash_avg".
inline std::string
sparseSchemeName(const ::testing::TestParamInfo<SparseScheme> &info) {
  static const char *const selects[] = {"topk", "threshold", "chunk"};
  static const char *const exchanges[] = {"allgather", "hash", "chunk"};
  auto [select, exchange, reduce] = info.param;
  return std::string(selects[select]) + "_" + exchanges[exchange] + "_" +
         reduceName(reduce);
}

} // namespace commrt::testing

#endif // COMMRT_UNITTESTS_RUNTIMETESTUTILS_H
