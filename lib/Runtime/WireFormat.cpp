//===- WireFormat.cpp - Host pack/unpack of fused and wire data -----------===//

#include "WireFormat.h"
#include "ReduceElements.h"

#include <algorithm>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define COMMRT_X86_F16C 1
#endif

namespace commrt {
namespace {

/// How the host stores, widens and rounds elements of a commrt_dtype.
template <commrt_dtype> struct Host;
template <> struct Host<COMMRT_F32> {
  using Storage = float;
  static float widen(float value) { return value; }
  static float narrow(float value) { return value; }
  static float narrow(double value) { return static_cast<float>(value); }
};
template <> struct Host<COMMRT_F64> {
  using Storage = double;
  static double widen(double value) { return value; }
  static double narrow(double value) { return value; }
};
template <> struct Host<COMMRT_F16> {
  using Storage = uint16_t;
  static float widen(uint16_t value) { return halfToFloat(value); }
  static uint16_t narrow(float value) { return floatToHalf(value); }
  static uint16_t narrow(double value) { return doubleToHalf(value); }
};
template <> struct Host<COMMRT_BF16> {
  using Storage = uint16_t;
  static float widen(uint16_t value) { return bfloat16ToFloat(value); }
  static uint16_t narrow(float value) { return floatToBFloat16(value); }
  static uint16_t narrow(double value) { return doubleToBFloat16(value); }
};

template <commrt_dtype Type>
void reduceAs(const void *from, void *into, int64_t count,
              commrt_reduce reduce) {
  const auto *in = static_cast<const typename Host<Type>::Storage *>(from);
  auto *inOut = static_cast<typename Host<Type>::Storage *>(into);
  for (int64_t i = 0; i < count; ++i)
    inOut[i] = Host<Type>::narrow(combineValues(
        Host<Type>::widen(in[i]), Host<Type>::widen(inOut[i]), reduce));
}

template <commrt_dtype From, commrt_dtype To>
void convertAs(const void *input, void *output, int64_t count, double scale) {
  using Compute =
      std::conditional_t<From == COMMRT_F64 || To == COMMRT_F64, double, float>;
  const auto *in = static_cast<const typename Host<From>::Storage *>(input);
  auto *out = static_cast<typename Host<To>::Storage *>(output);
  auto factor = static_cast<Compute>(scale);
  for (int64_t i = 0; i < count; ++i)
    out[i] = Host<To>::narrow(static_cast<Compute>(Host<From>::widen(in[i])) *
                              factor);
}

template <commrt_dtype From>
void convertFrom(const void *input, void *output, commrt_dtype to,
                 int64_t count, double scale) {
  switch (to) {
  case COMMRT_F32:
    return convertAs<From, COMMRT_F32>(input, output, count, scale);
  case COMMRT_F64:
    return convertAs<From, COMMRT_F64>(input, output, count, scale);
  case COMMRT_F16:
    return convertAs<From, COMMRT_F16>(input, output, count, scale);
  case COMMRT_BF16:
    return convertAs<From, COMMRT_BF16>(input, output, count, scale);
  }
}

#if COMMRT_X86_F16C
// F16C converts 8 elements per instruction with round to nearest even, the
// rounding of floatToHalf, so these loops compute the scalar path's values;
// the tails go through it.

__attribute__((target("avx,f16c"))) void
floatsToHalvesF16C(const float *in, uint16_t *out, int64_t count, float scale) {
  const __m256 factor = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(in + i), factor);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(scaled, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < count; ++i)
    out[i] = floatToHalf(in[i] * scale);
}

__attribute__((target("avx,f16c"))) void
halvesToFloatsF16C(const uint16_t *in, float *out, int64_t count, float scale) {
  const __m256 factor = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 wide = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(wide, factor));
  }
  for (; i < count; ++i)
    out[i] = halfToFloat(in[i]) * scale;
}

/// One combination of combineHalves, vectorised; `Scalar` does the tail.
template <__m256 (*Vector)(__m256, __m256), float (*Scalar)(float, float)>
__attribute__((target("avx,f16c"))) void
combineHalvesF16C(const uint16_t *in, uint16_t *inOut, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 a = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i)));
    __m256 b = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(inOut + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(inOut + i),
                     _mm256_cvtps_ph(Vector(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < count; ++i)
    inOut[i] = floatToHalf(Scalar(halfToFloat(in[i]), halfToFloat(inOut[i])));
}

__attribute__((target("avx"))) __m256 addVector(__m256 a, __m256 b) {
  return _mm256_add_ps(a, b);
}
// std::max(a, b) is a < b ? b : a, and _mm256_max_ps(x, y) is x > y ? x : y
// (y when either is NaN): the same with x = b, y = a. Likewise for min.
__attribute__((target("avx"))) __m256 maxVector(__m256 a, __m256 b) {
  return _mm256_max_ps(b, a);
}
__attribute__((target("avx"))) __m256 minVector(__m256 a, __m256 b) {
  return _mm256_min_ps(b, a);
}
#endif

float addScalar(float a, float b) { return a + b; }
float maxScalar(float a, float b) { return std::max(a, b); }
float minScalar(float a, float b) { return std::min(a, b); }

/// combineHalves without hardware conversions.
template <float (*Scalar)(float, float)>
void combineHalvesScalar(const uint16_t *in, uint16_t *inOut, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    inOut[i] = floatToHalf(Scalar(halfToFloat(in[i]), halfToFloat(inOut[i])));
}

} // namespace

bool hasHardwareHalf() {
#if COMMRT_X86_F16C
  static const bool supported =
      __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return supported;
#else
  return false;
#endif
}

void combineHalves(const uint16_t *in, uint16_t *inOut, int64_t count,
                   commrt_reduce reduce) {
#if COMMRT_X86_F16C
  if (hasHardwareHalf()) {
    switch (reduce) {
    case COMMRT_SUM:
    case COMMRT_AVG:
      return combineHalvesF16C<addVector, addScalar>(in, inOut, count);
    case COMMRT_MAX:
      return combineHalvesF16C<maxVector, maxScalar>(in, inOut, count);
    case COMMRT_MIN:
      return combineHalvesF16C<minVector, minScalar>(in, inOut, count);
    }
  }
#endif
  switch (reduce) {
  case COMMRT_SUM:
  case COMMRT_AVG:
    return combineHalvesScalar<addScalar>(in, inOut, count);
  case COMMRT_MAX:
    return combineHalvesScalar<maxScalar>(in, inOut, count);
  case COMMRT_MIN:
    return combineHalvesScalar<minScalar>(in, inOut, count);
  }
}

void convert(const void *input, commrt_dtype from, void *output,
             commrt_dtype to, int64_t count, double scale) {
#if COMMRT_X86_F16C
  if (hasHardwareHalf()) {
    if (from == COMMRT_F32 && to == COMMRT_F16)
      return floatsToHalvesF16C(static_cast<const float *>(input),
                                static_cast<uint16_t *>(output), count,
                                static_cast<float>(scale));
    if (from == COMMRT_F16 && to == COMMRT_F32)
      return halvesToFloatsF16C(static_cast<const uint16_t *>(input),
                                static_cast<float *>(output), count,
                                static_cast<float>(scale));
  }
#endif
  if (from == to && scale == 1.0) {
    if (input != output)
      std::memcpy(output, input, count * elementSize(from));
    return;
  }
  switch (from) {
  case COMMRT_F32:
    return convertFrom<COMMRT_F32>(input, output, to, count, scale);
  case COMMRT_F64:
    return convertFrom<COMMRT_F64>(input, output, to, count, scale);
  case COMMRT_F16:
    return convertFrom<COMMRT_F16>(input, output, to, count, scale);
  case COMMRT_BF16:
    return convertFrom<COMMRT_BF16>(input, output, to, count, scale);
  }
}

void reduceElements(const void *from, void *into, int64_t count,
                    commrt_dtype type, commrt_reduce reduce) {
  switch (type) {
  case COMMRT_F32:
    return reduceAs<COMMRT_F32>(from, into, count, reduce);
  case COMMRT_F64:
    return reduceAs<COMMRT_F64>(from, into, count, reduce);
  case COMMRT_F16:
    return reduceAs<COMMRT_F16>(from, into, count, reduce);
  case COMMRT_BF16:
    return reduceAs<COMMRT_BF16>(from, into, count, reduce);
  }
}

} // namespace commrt
