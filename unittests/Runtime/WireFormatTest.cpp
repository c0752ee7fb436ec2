//===- WireFormatTest.cpp - f16/bf16 conversions and pack/unpack kernels --===//

#include "WireFormat.h"
#include "ReduceElements.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <utility>
#include <vector>

#if COMMRT_HAVE_NCCL
#include "cuda/WireKernels.h"
#endif

using namespace commrt;

namespace {

const float kInfinity = std::numeric_limits<float>::infinity();

#ifdef __FLT16_MAX__
/// The bits of `value` converted by the compiler's own round-to-nearest-even
/// conversion to _Float16.
template <typename T> uint16_t compilersHalfBits(T value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}
#endif

/// The next double of a linear congruential sequence (`state` starts at 1):
/// all 52 mantissa bits in play, positive, the exponent `lowest` + state %
/// `exponents`.
double nextDouble(uint64_t &state, int exponents, int lowest) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  double mantissa = 1.0 + static_cast<double>(state >> 12) * 0x1p-52;
  return std::ldexp(mantissa, static_cast<int>(state % exponents) + lowest);
}

/// A float and the 16 bits it converts to.
struct Conversion {
  float value;
  uint16_t bits;
};

/// Expects `convert` to give each of `conversions`' bits.
void expectConversions(uint16_t (*convert)(float),
                       std::initializer_list<Conversion> conversions) {
  for (const Conversion &c : conversions)
    EXPECT_EQ(convert(c.value), c.bits) << c.value;
}

TEST(Half, ConvertsKnownValues) {
  // Exact: the signed zeros, one and minus two.
  expectConversions(
      floatToHalf,
      {{0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}});
  expectConversions(
      floatToHalf,
      {
          {65504.0f, 0x7bff},        // Largest finite f16.
          {65519.0f, 0x7bff},        // Just below the rounding boundary.
          {65520.0f, 0x7c00},        // Ties to even: overflows to infinity.
          {1e10f, 0x7c00},           // Far out of range.
          {-kInfinity, 0xfc00},      // Infinity stays infinite.
          {0x1p-14f, 0x0400},        // Smallest normal.
          {0x1p-24f, 0x0001},        // Smallest subnormal.
          {0x1p-25f, 0x0000},        // Tie between 0 and 2^-24: to even (0).
          {0x1.8p-25f, 0x0001},      // Above the tie: up.
          {0x1.8p-24f, 0x0002},      // Tie between 1 and 2 ulps: to even (2).
          {0x1.ffcp-15f, 0x0400},    // Subnormal rounding up into the normals.
          {1.0f + 0x1p-11f, 0x3c00}, // Tie: to even (down).
          {1.0f + 0x3p-11f, 0x3c02}, // Tie: to even (up).
          {1.0f + 0x1.01p-11f, 0x3c01} // Above the tie: up.
      });
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
    ASSERT_EQ(floatToHalf(value), compilersHalfBits(value)) << std::hex << bits;
  }
}
#endif

TEST(BFloat16, ConvertsKnownValues) {
  // Exact: the signed zeros, one and minus two.
  expectConversions(
      floatToBFloat16,
      {{0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3f80}, {-2.0f, 0xc000}});
  expectConversions(
      floatToBFloat16,
      {
          {1.0f + 0x1p-8f, 0x3f80},                    // Tie: to even (down).
          {1.0f + 0x3p-8f, 0x3f82},                    // Tie: to even (up).
          {1.0f + 0x1.02p-8f, 0x3f81},                 // Above the tie: up.
          {std::numeric_limits<float>::max(), 0x7f80}, // Rounds to infinity.
          {kInfinity, 0x7f80},
          {0x1p-133f, 0x0001} // Smallest bf16 subnormal.
      });
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

TEST(RoundToOdd, KeepsExactValuesAndMarksInexactOnes) {
  EXPECT_EQ(roundToOdd(1.5), 1.5f);
  EXPECT_EQ(roundToOdd(-0.0), -0.0f);
  EXPECT_EQ(roundToOdd(static_cast<double>(kInfinity)), kInfinity);
  // 1 + 2^-30 truncates to 1 and gets the lowest bit: 1 + 2^-23.
  EXPECT_EQ(floatBits(roundToOdd(1.0 + 0x1p-30)), 0x3f800001u);
  // 1 + 2^-23 - 2^-40 rounds to nearest up, but to odd down to 1 + 2^-23.
  EXPECT_EQ(floatBits(roundToOdd(1.0 + 0x1p-23 - 0x1p-40)), 0x3f800001u);
  EXPECT_EQ(floatBits(roundToOdd(1.0 + 0x2p-23 - 0x1p-40)), 0x3f800001u)
      << "truncated, not rounded up to the even 1 + 2^-22";
  EXPECT_EQ(floatBits(roundToOdd(1e300)), 0x7f7fffffu) << "beyond float's "
                                                          "range: the "
                                                          "largest float";
  EXPECT_EQ(floatBits(roundToOdd(-1e-300)), 0x80000001u)
      << "below float's range: the smallest subnormal, signed";
}

TEST(Half, RoundsDoublesOnce) {
  // Just above the tie between 1 and 1 + 2^-10: through float to nearest it
  // would become the tie and round down to even.
  double aboveTie = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(floatToHalf(static_cast<float>(aboveTie)), 0x3c00);
  EXPECT_EQ(doubleToHalf(aboveTie), 0x3c01);
  EXPECT_EQ(doubleToHalf(1.0 + 0x1p-11), 0x3c00) << "the tie itself";
  EXPECT_EQ(doubleToHalf(65519.99), 0x7bff);
  EXPECT_EQ(doubleToHalf(65520.0), 0x7c00);
  EXPECT_EQ(doubleToHalf(-1e300), 0xfc00);
}

#ifdef __FLT16_MAX__
TEST(Half, RoundsDoublesLikeTheCompilersFloat16) {
  // Doubles around the f16 range with all 52 mantissa bits in play: a
  // linear congruential sequence of mantissas over exponents -30..17.
  uint64_t state = 1;
  for (int i = 0; i < 1000000; ++i) {
    double value = nextDouble(state, 48, -30);
    if (state & 0x800)
      value = -value;
    ASSERT_EQ(doubleToHalf(value), compilersHalfBits(value))
        << std::hexfloat << value;
  }
}
#endif

TEST(BFloat16, RoundsDoublesOnceToNearestEven) {
  EXPECT_EQ(doubleToBFloat16(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  EXPECT_EQ(doubleToBFloat16(1.0 + 0x1p-8), 0x3f80) << "the tie itself";
  // Reference: round to 8 significant bits with nearbyint, exact in double.
  uint64_t state = 1;
  for (int i = 0; i < 1000000; ++i) {
    double value = nextDouble(state, 240, -120);
    double ulp = std::ldexp(1.0, std::ilogb(value) - 7);
    double expected = std::nearbyint(value / ulp) * ulp;
    ASSERT_EQ(bfloat16ToFloat(doubleToBFloat16(value)), expected)
        << std::hexfloat << value;
  }
}

TEST(Convert, PacksAndUnpacksF32WithScale) {
  const float input[] = {3.0f, -0.5f, 1.0f + 0x1p-12f, 70000.0f};
  uint16_t packed[4];
  float output[4];
  convert(input, COMMRT_F32, packed, COMMRT_F16, 4, 0.5);
  EXPECT_EQ(packed[0], floatToHalf(1.5f));
  EXPECT_EQ(packed[1], floatToHalf(-0.25f));
  EXPECT_EQ(packed[2], floatToHalf(0.5f)) << "rounded after scaling";
  EXPECT_EQ(packed[3], floatToHalf(35000.0f)) << "scaled into range";
  convert(packed, COMMRT_F16, output, COMMRT_F32, 4, 2.0);
  EXPECT_EQ(output[0], 3.0f);
  EXPECT_EQ(output[1], -0.5f);
  EXPECT_EQ(output[2], 1.0f);
  EXPECT_EQ(output[3], 70016.0f) << "35000 is 35008 in f16";

  convert(input, COMMRT_F32, packed, COMMRT_BF16, 4, 1.0);
  EXPECT_EQ(packed[0], 0x4040);
  convert(packed, COMMRT_BF16, output, COMMRT_F32, 4, 0.25);
  EXPECT_EQ(output[0], 0.75f);
  EXPECT_EQ(output[1], -0.125f);
}

TEST(Convert, PacksAndUnpacksF64InDouble) {
  const double input[] = {1.0 + 0x1p-11 + 0x1p-40, 6.0, -1e300};
  uint16_t packed[3];
  double output[3];
  convert(input, COMMRT_F64, packed, COMMRT_F16, 3, 1.0);
  EXPECT_EQ(packed[0], 0x3c01) << "rounded once";
  EXPECT_EQ(packed[2], 0xfc00);
  convert(input, COMMRT_F64, packed, COMMRT_BF16, 3, 0.5);
  EXPECT_EQ(packed[1], floatToBFloat16(3.0f));
  // 0.1 is not a float: the product shows the double arithmetic.
  convert(packed, COMMRT_BF16, output, COMMRT_F64, 2, 0.1);
  EXPECT_EQ(output[1], 3.0 * 0.1);
  EXPECT_NE(output[1], static_cast<double>(3.0f * 0.1f));
}

TEST(Convert, ScalesWithoutAWireTypeThroughFloat) {
  uint16_t halves[] = {floatToHalf(3.0f), floatToHalf(-1.0f)};
  convert(halves, COMMRT_F16, halves, COMMRT_F16, 2, 0.5);
  EXPECT_EQ(halfToFloat(halves[0]), 1.5f);
  EXPECT_EQ(halfToFloat(halves[1]), -0.5f);
  float floats[] = {3.0f, 5.0f};
  float scaled[2];
  convert(floats, COMMRT_F32, scaled, COMMRT_F32, 2, 0.25);
  EXPECT_EQ(scaled[0], 0.75f);
  EXPECT_EQ(scaled[1], 1.25f);
}

TEST(Convert, CopiesBitsWithoutAWireTypeAndScale) {
  // A signalling NaN with a payload: any arithmetic would change it.
  const uint16_t input[] = {0x7d23, 0x3c00};
  uint16_t output[2] = {};
  convert(input, COMMRT_F16, output, COMMRT_F16, 2, 1.0);
  EXPECT_EQ(output[0], 0x7d23);
  EXPECT_EQ(output[1], 0x3c00);
}

TEST(Convert, TravelTypeAndReduceFollowTheWire) {
  EXPECT_EQ(travelType(COMMRT_F64, COMMRT_WIRE_NONE), COMMRT_F64);
  EXPECT_EQ(travelType(COMMRT_F32, COMMRT_BF16), COMMRT_BF16);
  EXPECT_EQ(travelReduce(COMMRT_F16, COMMRT_AVG), COMMRT_SUM);
  EXPECT_EQ(travelReduce(COMMRT_F16, COMMRT_MIN), COMMRT_MIN);
  EXPECT_EQ(travelReduce(COMMRT_WIRE_NONE, COMMRT_AVG), COMMRT_AVG)
      << "without a wire type the collective averages";
}

TEST(Convert, UnpackScaleUndoesPrescaleAndAverages) {
  EXPECT_EQ(unpackScale(COMMRT_F32, COMMRT_F16, COMMRT_SUM, 0.25f, 4), 4.0);
  EXPECT_EQ(unpackScale(COMMRT_F32, COMMRT_F16, COMMRT_AVG, 0.25f, 4), 1.0);
  EXPECT_EQ(unpackScale(COMMRT_F32, COMMRT_BF16, COMMRT_MAX, 2.0f, 4), 0.5);
  EXPECT_EQ(unpackScale(COMMRT_F32, COMMRT_WIRE_NONE, COMMRT_AVG, 0.25f, 4),
            4.0)
      << "the collective averaged already";
  EXPECT_EQ(unpackScale(COMMRT_F32, COMMRT_F16, COMMRT_AVG, 1.0f, 3),
            static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(unpackScale(COMMRT_F64, COMMRT_F16, COMMRT_AVG, 1.0f, 3),
            1.0 / 3.0);
}

/// Inputs of `dtype` for the kernel tests: every 16-bit pattern but NaNs,
/// or a stride through the finite floats (for f64, doubles just above them,
/// which exercise the single rounding).
std::vector<unsigned char> kernelInputs(commrt_dtype dtype) {
  std::vector<unsigned char> bytes;
  auto append = [&](const void *value, size_t size) {
    const auto *first = static_cast<const unsigned char *>(value);
    bytes.insert(bytes.end(), first, first + size);
  };
  if (dtype == COMMRT_F16 || dtype == COMMRT_BF16) {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
      auto value = static_cast<uint16_t>(bits);
      float widened =
          dtype == COMMRT_F16 ? halfToFloat(value) : bfloat16ToFloat(value);
      if (!std::isnan(widened))
        append(&value, sizeof value);
    }
    return bytes;
  }
  for (uint64_t bits = 0; bits <= 0xffffffff; bits += 1031) {
    float value = floatFromBits(static_cast<uint32_t>(bits));
    if (!std::isfinite(value))
      continue;
    if (dtype == COMMRT_F32) {
      append(&value, sizeof value);
    } else {
      double above = static_cast<double>(value) * (1.0 + 0x1p-30);
      append(&above, sizeof above);
    }
  }
  return bytes;
}

TEST(WireKernels, MatchTheHostReference) {
#if COMMRT_HAVE_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    GTEST_SKIP() << "no CUDA device visible to run the kernels";
  const std::pair<commrt_dtype, commrt_dtype> conversions[] = {
      {COMMRT_F32, COMMRT_F16}, {COMMRT_F32, COMMRT_BF16},
      {COMMRT_F16, COMMRT_F32}, {COMMRT_BF16, COMMRT_F32},
      {COMMRT_F64, COMMRT_F16}, {COMMRT_F64, COMMRT_BF16},
      {COMMRT_F16, COMMRT_F64}, {COMMRT_BF16, COMMRT_F64},
      {COMMRT_F32, COMMRT_F32}, {COMMRT_F64, COMMRT_F64},
      {COMMRT_F16, COMMRT_F16}, {COMMRT_BF16, COMMRT_BF16}};
  for (auto [from, to] : conversions) {
    std::vector<unsigned char> input = kernelInputs(from);
    const int64_t count = input.size() / elementSize(from);
    void *deviceInput = nullptr, *deviceOutput = nullptr;
    ASSERT_EQ(cudaMalloc(&deviceInput, input.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&deviceOutput, count * elementSize(to)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(deviceInput, input.data(), input.size(),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    for (double scale : {1.0, 0.25, 3.0, 1.0 / 3.0}) {
      std::vector<unsigned char> expected(count * elementSize(to)),
          output(count * elementSize(to));
      convert(input.data(), from, expected.data(), to, count, scale);
      ASSERT_EQ(cuda::convert(deviceInput, from, deviceOutput, to, count, scale,
                              nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaMemcpy(output.data(), deviceOutput, output.size(),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(std::memcmp(&output[i * elementSize(to)],
                              &expected[i * elementSize(to)], elementSize(to)),
                  0)
            << "element " << i << " from " << from << " to " << to
            << " scaled by " << scale;
    }
    cudaFree(deviceInput);
    cudaFree(deviceOutput);
  }
#else
  GTEST_SKIP() << "commrt was built without CUDA and NCCL";
#endif
}

TEST(WireFormat, HardwareHalfMatchesTheScalarReference) {
  // convert() takes F16C where this CPU has it; every non-NaN value must
  // come out as the scalar conversions compute it. The counts are not
  // multiples of 8, so the scalar tails run too.
  std::vector<unsigned char> floatBytes = kernelInputs(COMMRT_F32);
  std::vector<unsigned char> halfBytes = kernelInputs(COMMRT_F16);
  std::vector<float> floats(floatBytes.size() / sizeof(float));
  std::memcpy(floats.data(), floatBytes.data(), floatBytes.size());
  std::vector<uint16_t> halves(halfBytes.size() / sizeof(uint16_t));
  std::memcpy(halves.data(), halfBytes.data(), halfBytes.size());
  floats.resize(floats.size() / 8 * 8 - 3);
  halves.resize(halves.size() / 8 * 8 - 5);
  for (double scale : {1.0, 0.25, 3.0, 1.0 / 3.0}) {
    const auto factor = static_cast<float>(scale);
    std::vector<uint16_t> packed(floats.size());
    convert(floats.data(), COMMRT_F32, packed.data(), COMMRT_F16,
            static_cast<int64_t>(floats.size()), scale);
    for (size_t i = 0; i < floats.size(); ++i)
      ASSERT_EQ(packed[i], floatToHalf(floats[i] * factor))
          << "f32 bits " << floatBits(floats[i]) << " scaled by " << scale;
    std::vector<float> unpacked(halves.size());
    convert(halves.data(), COMMRT_F16, unpacked.data(), COMMRT_F32,
            static_cast<int64_t>(halves.size()), scale);
    for (size_t i = 0; i < halves.size(); ++i)
      ASSERT_EQ(floatBits(unpacked[i]),
                floatBits(halfToFloat(halves[i]) * factor))
          << "f16 bits " << halves[i] << " scaled by " << scale;
  }
  // NaN stays NaN, whatever its payload becomes.
  const float nans[] = {std::nanf(""),
                        floatFromBits(0x7f800001),
                        floatFromBits(0xffc00123),
                        std::nanf(""),
                        std::nanf(""),
                        std::nanf(""),
                        std::nanf(""),
                        std::nanf(""),
                        std::nanf("")};
  uint16_t packedNans[9];
  convert(nans, COMMRT_F32, packedNans, COMMRT_F16, 9, 1.0);
  for (uint16_t half : packedNans)
    EXPECT_TRUE(std::isnan(halfToFloat(half))) << half;
  std::cout << "[          ] f16 conversions in hardware (F16C): "
            << (hasHardwareHalf() ? "yes" : "no") << "\n";
}

TEST(WireFormat, CombineHalvesMatchesTheScalarReference) {
  // Pairs of f16 values of every exponent, including infinities and
  // overflowing sums; the scalar combination is the reference.
  // Signed zeros first: max and min keep the first operand of equal ones,
  // as std::max and std::min do.
  std::vector<uint16_t> a = {0x8000, 0x0000, 0x8000, 0x0000},
                        b = {0x0000, 0x8000, 0x8000, 0x0000};
  for (uint32_t bits = 0; bits <= 0xffff; bits += 7) {
    if (std::isnan(halfToFloat(static_cast<uint16_t>(bits))))
      continue;
    a.push_back(static_cast<uint16_t>(bits));
    b.push_back(static_cast<uint16_t>((bits * 40503u + 12345u) & 0xffff));
    if (std::isnan(halfToFloat(b.back())))
      b.back() = 0x3c00;
  }
  a.resize(a.size() / 8 * 8 - 1);
  b.resize(a.size());
  const std::pair<commrt_reduce, float (*)(float, float)> reductions[] = {
      {COMMRT_SUM, [](float x, float y) { return x + y; }},
      {COMMRT_AVG, [](float x, float y) { return x + y; }},
      {COMMRT_MAX, [](float x, float y) { return std::max(x, y); }},
      {COMMRT_MIN, [](float x, float y) { return std::min(x, y); }}};
  for (auto [reduce, combine] : reductions) {
    std::vector<uint16_t> result = b;
    combineHalves(a.data(), result.data(), static_cast<int64_t>(a.size()),
                  reduce);
    for (size_t i = 0; i < a.size(); ++i) {
      uint16_t expected =
          floatToHalf(combine(halfToFloat(a[i]), halfToFloat(b[i])));
      if (std::isnan(halfToFloat(expected)))
        ASSERT_TRUE(std::isnan(halfToFloat(result[i]))) << "index " << i;
      else
        ASSERT_EQ(result[i], expected)
            << "reduce " << reduce << ", " << a[i] << " and " << b[i];
    }
  }
}

TEST(ReduceElements, CombinesAsTheMpiBackendDoes) {
  // The host reference of the staged ring's device reduction against what
  // the MPI backend's ring combines with: MPI's own operations on f32 and
  // f64 (std::max and std::min of the received value first), combineHalves
  // on f16, and bf16 through float.
  const std::pair<commrt_reduce, double (*)(double, double)> reductions[] = {
      {COMMRT_SUM, [](double x, double y) { return x + y; }},
      {COMMRT_AVG, [](double x, double y) { return x + y; }},
      {COMMRT_MAX, [](double x, double y) { return std::max(x, y); }},
      {COMMRT_MIN, [](double x, double y) { return std::min(x, y); }}};
  std::vector<double> a, b;
  for (int i = -300; i < 300; ++i) {
    a.push_back(std::ldexp(1.0 + i / 7.0, i % 40));
    b.push_back(std::ldexp(-0.75 + i / 11.0, (i * 3) % 40));
  }
  for (auto [reduce, combine] : reductions) {
    SCOPED_TRACE(reduce);
    std::vector<float> floats(b.begin(), b.end());
    std::vector<float> fromFloats(a.begin(), a.end());
    reduceElements(fromFloats.data(), floats.data(),
                   static_cast<int64_t>(a.size()), COMMRT_F32, reduce);
    std::vector<double> doubles = b;
    reduceElements(a.data(), doubles.data(), static_cast<int64_t>(a.size()),
                   COMMRT_F64, reduce);
    std::vector<uint16_t> halves, fromHalves, bfloats, fromBfloats;
    for (size_t i = 0; i < a.size(); ++i) {
      halves.push_back(floatToHalf(static_cast<float>(b[i])));
      fromHalves.push_back(floatToHalf(static_cast<float>(a[i])));
      bfloats.push_back(floatToBFloat16(static_cast<float>(b[i])));
      fromBfloats.push_back(floatToBFloat16(static_cast<float>(a[i])));
    }
    std::vector<uint16_t> expectedHalves = halves;
    combineHalves(fromHalves.data(), expectedHalves.data(),
                  static_cast<int64_t>(a.size()), reduce);
    reduceElements(fromHalves.data(), halves.data(),
                   static_cast<int64_t>(a.size()), COMMRT_F16, reduce);
    reduceElements(fromBfloats.data(), bfloats.data(),
                   static_cast<int64_t>(a.size()), COMMRT_BF16, reduce);
    for (size_t i = 0; i < a.size(); ++i) {
      const float af = static_cast<float>(a[i]), bf = static_cast<float>(b[i]);
      ASSERT_EQ(floatBits(floats[i]),
                floatBits(static_cast<float>(combine(af, bf))))
          << "f32 index " << i;
      ASSERT_EQ(doubles[i], combine(a[i], b[i])) << "f64 index " << i;
      ASSERT_EQ(halves[i], expectedHalves[i]) << "f16 index " << i;
      const float widened =
          static_cast<float>(combine(bfloat16ToFloat(fromBfloats[i]),
                                     bfloat16ToFloat(floatToBFloat16(bf))));
      ASSERT_EQ(bfloats[i], floatToBFloat16(widened)) << "bf16 index " << i;
    }
  }
}

} // namespace
