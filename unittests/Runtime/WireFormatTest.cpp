//===- WireFormatTest.cpp - f16/bf16 conversions and pack/unpack kernels --===//

#include "WireFormat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if COMMRT_HAVE_NCCL
#include "cuda/WireKernels.h"
#endif

using namespace commrt;

namespace {

const float kInfinity = std::numeric_limits<float>::infinity();

TEST(Half, ConvertsKnownValues) {
  struct {
    float value;
    uint16_t bits;
  } cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},           // Largest finite f16.
      {65519.0f, 0x7bff},           // Just below the rounding boundary.
      {65520.0f, 0x7c00},           // Ties to even: overflows to infinity.
      {1e10f, 0x7c00},              // Far out of range.
      {-kInfinity, 0xfc00},         // Infinity stays infinite.
      {0x1p-14f, 0x0400},           // Smallest normal.
      {0x1p-24f, 0x0001},           // Smallest subnormal.
      {0x1p-25f, 0x0000},           // Tie between 0 and 2^-24: to even (0).
      {0x1.8p-25f, 0x0001},         // Above the tie: up.
      {0x1.8p-24f, 0x0002},         // Tie between 1 and 2 ulps: to even (2).
      {0x1.ffcp-15f, 0x0400},       // Subnormal rounding up into the normals.
      {1.0f + 0x1p-11f, 0x3c00},    // Tie: to even (down).
      {1.0f + 0x3p-11f, 0x3c02},    // Tie: to even (up).
      {1.0f + 0x1.01p-11f, 0x3c01}, // Above the tie: up.
  };
  for (const auto &c : cases)
    EXPECT_EQ(floatToHalf(c.value), c.bits) << c.value;
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
}

TEST(Half, RoundTripsEveryValue) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto half = static_cast<uint16_t>(bits);
    float value = halfToFloat(half);
    if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff)) {
      EXPECT_TRUE(std::isnan(value)) << bits;
      continue;
    }
    EXPECT_EQ(floatToHalf(value), half) << bits;
  }
}

#ifdef __FLT16_MAX__
TEST(Half, MatchesTheCompilersFloat16) {
  // A stride through all float bit patterns, odd so that every mantissa
  // and exponent pattern is visited, compared with the compiler's own
  // round-to-nearest-even conversion.
  for (uint64_t bits = 0; bits <= 0xffffffff; bits += 4099) {
    float value = floatFromBits(static_cast<uint32_t>(bits));
    if (std::isnan(value))
      continue;
    _Float16 expected = static_cast<_Float16>(value);
    uint16_t expectedBits;
    std::memcpy(&expectedBits, &expected, sizeof expectedBits);
    ASSERT_EQ(floatToHalf(value), expectedBits) << std::hex << bits;
  }
}
#endif

TEST(BFloat16, ConvertsKnownValues) {
  struct {
    float value;
    uint16_t bits;
  } cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3f80},
      {-2.0f, 0xc000},
      {1.0f + 0x1p-8f, 0x3f80},                    // Tie: to even (down).
      {1.0f + 0x3p-8f, 0x3f82},                    // Tie: to even (up).
      {1.0f + 0x1.02p-8f, 0x3f81},                 // Above the tie: up.
      {std::numeric_limits<float>::max(), 0x7f80}, // Rounds to infinity.
      {kInfinity, 0x7f80},
      {0x1p-133f, 0x0001}, // Smallest bf16 subnormal.
  };
  for (const auto &c : cases)
    EXPECT_EQ(floatToBFloat16(c.value), c.bits) << c.value;
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(std::nanf("")))));
  EXPECT_TRUE(
      std::isnan(bfloat16ToFloat(floatToBFloat16(floatFromBits(0x7f800001)))))
      << "a NaN whose payload is in the dropped bits stays NaN";
}

TEST(BFloat16, RoundTripsEveryValue) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto value16 = static_cast<uint16_t>(bits);
    float value = bfloat16ToFloat(value16);
    if (std::isnan(value))
      continue;
    EXPECT_EQ(floatToBFloat16(value), value16) << bits;
  }
}

TEST(BFloat16, RoundsToNearestEvenLikeArithmetic) {
  // Reference: round |value| to 8 significant bits with nearbyint (ties to
  // even in the default rounding mode), in double, where this is exact.
  for (uint64_t bits = 0; bits < 0x7f800000; bits += 4099) {
    float value = floatFromBits(static_cast<uint32_t>(bits));
    int exponent = std::max(std::ilogb(value), -126);
    double ulp = std::ldexp(1.0, exponent - 7);
    double rounded = std::nearbyint(value / ulp) * ulp;
    float expected =
        rounded > 0x1.fep127 ? kInfinity : static_cast<float>(rounded);
    ASSERT_EQ(bfloat16ToFloat(floatToBFloat16(value)), expected)
        << std::hex << bits;
  }
}

TEST(WireReference, PacksAndUnpacksWithScale) {
  const float input[] = {3.0f, -0.5f, 1.0f + 0x1p-12f, 70000.0f};
  uint16_t packed[4];
  float output[4];
  packWire(input, packed, 4, COMMRT_F16, 0.5f);
  EXPECT_EQ(packed[0], floatToHalf(1.5f));
  EXPECT_EQ(packed[1], floatToHalf(-0.25f));
  EXPECT_EQ(packed[2], floatToHalf(0.5f)) << "rounded after scaling";
  EXPECT_EQ(packed[3], floatToHalf(35000.0f)) << "scaled into range";
  unpackWire(packed, output, 4, COMMRT_F16, 2.0f);
  EXPECT_EQ(output[0], 3.0f);
  EXPECT_EQ(output[1], -0.5f);
  EXPECT_EQ(output[2], 1.0f);
  EXPECT_EQ(output[3], 70016.0f) << "35000 is 35008 in f16";

  packWire(input, packed, 4, COMMRT_BF16, 1.0f);
  EXPECT_EQ(packed[0], 0x4040);
  unpackWire(packed, output, 4, COMMRT_BF16, 0.25f);
  EXPECT_EQ(output[0], 0.75f);
  EXPECT_EQ(output[1], -0.125f);
}

TEST(WireReference, UnpackScaleUndoesPrescaleAndAverages) {
  EXPECT_EQ(wireUnpackScale(COMMRT_SUM, 0.25f, 4), 4.0f);
  EXPECT_EQ(wireUnpackScale(COMMRT_AVG, 0.25f, 4), 1.0f);
  EXPECT_EQ(wireUnpackScale(COMMRT_MAX, 2.0f, 4), 0.5f);
  EXPECT_EQ(wireReduce(COMMRT_AVG), COMMRT_SUM);
  EXPECT_EQ(wireReduce(COMMRT_MIN), COMMRT_MIN);
}

TEST(WireKernels, MatchTheHostReference) {
#if COMMRT_HAVE_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    GTEST_SKIP() << "no CUDA device visible to run the kernels";
  // Finite values across the f32 range: overflow, subnormals and ties in
  // both wire types.
  std::vector<float> input;
  for (uint64_t bits = 0; bits <= 0xffffffff; bits += 1031) {
    float value = floatFromBits(static_cast<uint32_t>(bits));
    if (std::isfinite(value))
      input.push_back(value);
  }
  const int64_t count = input.size();
  float *deviceFloats = nullptr;
  uint16_t *deviceWire = nullptr;
  ASSERT_EQ(cudaMalloc(&deviceFloats, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&deviceWire, count * sizeof(uint16_t)), cudaSuccess);
  for (commrt_dtype wire : {COMMRT_F16, COMMRT_BF16}) {
    for (float scale : {1.0f, 0.25f, 3.0f}) {
      std::vector<uint16_t> expectedWire(count), wireOut(count);
      std::vector<float> expectedFloats(count), floatsOut(count);
      packWire(input.data(), expectedWire.data(), count, wire, scale);
      unpackWire(expectedWire.data(), expectedFloats.data(), count, wire,
                 1.0f / scale);
      ASSERT_EQ(cudaMemcpy(deviceFloats, input.data(), count * sizeof(float),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_EQ(
          cuda::packWire(deviceFloats, deviceWire, count, wire, scale, nullptr),
          cudaSuccess);
      ASSERT_EQ(cuda::unpackWire(deviceWire, deviceFloats, count, wire,
                                 1.0f / scale, nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(wireOut.data(), deviceWire, count * sizeof(uint16_t),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(floatsOut.data(), deviceFloats,
                           count * sizeof(float), cudaMemcpyDeviceToHost),
                cudaSuccess);
      for (int64_t i = 0; i < count; ++i) {
        ASSERT_EQ(wireOut[i], expectedWire[i])
            << "pack of " << input[i] << " to wire " << wire;
        ASSERT_EQ(floatBits(floatsOut[i]), floatBits(expectedFloats[i]))
            << "unpack of " << wireOut[i] << " from wire " << wire;
      }
    }
  }
  cudaFree(deviceFloats);
  cudaFree(deviceWire);
#else
  GTEST_SKIP() << "commrt was built without CUDA and NCCL";
#endif
}

} // namespace
