//===- WireKernelsTest.cpp - Batched pack/unpack against one per buffer
//----===//
//
// commrt::cuda::convertSegments, which packs a plan's buffers in a few
// launches, against commrt::cuda::convert, one launch per buffer, bit for
// bit: every pair of types, scaled and unscaled, on segments of many sizes
// (empty, shorter than a block, several blocks, more segments than one
// launch takes), with NaNs, infinities, signed zeros and values that round
// to 16 bits. Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "cuda/WireKernels.h"
#include "GpuTestUtils.h"
#include "ReduceElements.h"
#include "WireFormat.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using commrt::elementSize;
using commrt::cuda::ConvertSegment;
using commrt::testing::bitsOf;
using commrt::testing::DeviceArray;
using commrt::testing::gpuVisible;

namespace {

/// `count` elements of `dtype`: gaussian values of several magnitudes and
/// the special values, as that type stores them.
std::vector<unsigned char> makeValues(commrt_dtype dtype, int64_t count,
                                      unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double special[] = {0.0,
                            -0.0,
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            65504.0,
                            70000.0,
                            1e-8,
                            1.0 + std::ldexp(1.0, -11)};
  std::vector<unsigned char> bytes(count * elementSize(dtype));
  for (int64_t i = 0; i < count; ++i) {
    double value = i % 17 == 0 ? special[(i / 17) % std::size(special)]
                               : normal(random) * std::pow(10.0, i % 7 - 3);
    unsigned char *at = bytes.data() + i * elementSize(dtype);
    switch (dtype) {
    case COMMRT_F32: {
      float narrow = static_cast<float>(value);
      std::memcpy(at, &narrow, sizeof narrow);
      break;
    }
    case COMMRT_F64:
      std::memcpy(at, &value, sizeof value);
      break;
    case COMMRT_F16: {
      uint16_t bits = commrt::floatToHalf(static_cast<float>(value));
      std::memcpy(at, &bits, sizeof bits);
      break;
    }
    case COMMRT_BF16: {
      uint16_t bits = commrt::floatToBFloat16(static_cast<float>(value));
      std::memcpy(at, &bits, sizeof bits);
      break;
    }
    }
  }
  return bytes;
}

const char *dtypeName(commrt_dtype dtype) {
  switch (dtype) {
  case COMMRT_F32:
    return "f32";
  case COMMRT_F64:
    return "f64";
  case COMMRT_F16:
    return "f16";
  case COMMRT_BF16:
    return "bf16";
  }
  return "?";
}

TEST(WireKernels, ConvertSegmentsMatchesOneConvertPerBuffer) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the kernels";
  // 150 segments: three launches. Sizes from 0 to several blocks of 2048.
  std::vector<int64_t> sizes;
  std::mt19937 random(5);
  for (int i = 0; i < 150; ++i)
    sizes.push_back(i % 10 == 0  ? 0
                    : i % 3 == 0 ? 1 + random() % 20000
                                 : 1 + random() % 300);
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  const commrt_dtype types[] = {COMMRT_F32, COMMRT_F64, COMMRT_F16,
                                COMMRT_BF16};
  for (commrt_dtype from : types)
    for (commrt_dtype to : types)
      for (double scale : {1.0, 0.125, 3.0}) {
        SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + dtypeName(to) +
                     " scale " + std::to_string(scale));
        std::vector<unsigned char> values = makeValues(from, total, 9);
        DeviceArray<unsigned char> input(values);
        DeviceArray<unsigned char> each(total * elementSize(to)),
            batched(total * elementSize(to));
        // Poisoned, so that an element left unwritten shows.
        ASSERT_EQ(cudaMemset(each.get(), 0x7b, each.size()), cudaSuccess);
        ASSERT_EQ(cudaMemset(batched.get(), 0x7b, batched.size()), cudaSuccess);
        std::vector<ConvertSegment> segments;
        int64_t offset = 0;
        for (int64_t n : sizes) {
          const unsigned char *from0 = input.get() + offset * elementSize(from);
          ASSERT_EQ(commrt::cuda::convert(from0, from,
                                          each.get() + offset * elementSize(to),
                                          to, n, scale, nullptr),
                    cudaSuccess);
          segments.push_back(
              {from0, batched.get() + offset * elementSize(to), n});
          offset += n;
        }
        ASSERT_EQ(commrt::cuda::convertSegments(segments.data(),
                                                segments.size(), from, to,
                                                scale, nullptr),
                  cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(batched.download(), each.download());
      }
}

TEST(WireKernels, ConvertSegmentsSkipsWhatNeedsNoWork) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the kernels";
  // An unscaled conversion to the same type in place, and empty segments,
  // leave memory alone; a scaled one in place converts.
  const int64_t count = 5000;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(i) - 2500.5f;
  DeviceArray<float> buffer(values);
  ConvertSegment inPlace[] = {{buffer.get(), buffer.get(), count},
                              {nullptr, nullptr, 0}};
  ASSERT_EQ(commrt::cuda::convertSegments(inPlace, 2, COMMRT_F32, COMMRT_F32,
                                          1.0, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bitsOf(buffer.download()), bitsOf(values));
  ASSERT_EQ(commrt::cuda::convertSegments(inPlace, 1, COMMRT_F32, COMMRT_F32,
                                          2.0, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float &value : values)
    value *= 2.0f;
  EXPECT_EQ(bitsOf(buffer.download()), bitsOf(values));
}

TEST(WireKernels, ReduceIntoMatchesTheHostReference) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the kernels";
  // The staged ring's reduction of a received piece (StagedRing.h): every
  // type and reduction, with the special values, against reduceElements.
  const int64_t count = 70001;
  for (commrt_dtype type : {COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16})
    for (commrt_reduce reduce :
         {COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN}) {
      SCOPED_TRACE(std::string(dtypeName(type)) + " reduce " +
                   std::to_string(reduce));
      std::vector<unsigned char> from = makeValues(type, count, 3);
      std::vector<unsigned char> into = makeValues(type, count, 4);
      DeviceArray<unsigned char> fromOnDevice(from), intoOnDevice(into);
      ASSERT_EQ(commrt::cuda::reduceInto(fromOnDevice.get(), intoOnDevice.get(),
                                         count, type, reduce, nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      commrt::reduceElements(from.data(), into.data(), count, type, reduce);
      EXPECT_EQ(intoOnDevice.download(), into);
    }
}

} // namespace
