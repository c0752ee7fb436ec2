//===- WireFormat.h - f16/bf16 conversions and wire pack/unpack -*- C++ -*-===//
//
// Portable IEEE half (f16) and bfloat16 conversions with round to nearest
// even, and the host reference of the pack/unpack steps of
// commrt_allreduce_wire. The CUDA kernels in cuda/WireKernels.cu compute the
// same values bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_WIREFORMAT_H
#define COMMRT_WIREFORMAT_H

#include "commrt/commrt.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace commrt {

/// Size in bytes of one element of `dtype`.
inline size_t elementSize(commrt_dtype dtype) {
  return dtype == COMMRT_F64 ? 8 : dtype == COMMRT_F32 ? 4 : 2;
}

/// Returns the bits of `value`.
inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Returns the float whose bits are `bits`.
inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Rounds `value` to the nearest f16 (ties to even); overflow gives infinity,
/// NaN stays NaN.
inline uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: keep it quiet.
    return sign | 0x7e00;
  if (magnitude >= 0x477ff000) // Rounds to 65536 or more, or is infinite.
    return sign | 0x7c00;
  if (magnitude < 0x38800000) {
    // Below 2^-14, f16 is subnormal in steps of 2^-24. Adding 0.5, whose ulp
    // is 2^-24, lets the FPU round to that grid, ties to even.
    float shifted = floatFromBits(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(floatBits(shifted) - 0x3f000000);
  }
  // Normal: rebias the exponent (127 -> 15), then round 23 to 10 mantissa
  // bits; a carry out of the mantissa correctly bumps the exponent.
  uint32_t rebiased = magnitude - 0x38000000;
  uint32_t rounded = rebiased + 0xfff + ((rebiased >> 13) & 1);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

/// Widens the f16 `half` to float (exact).
inline float halfToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1f;
  uint32_t mantissa = half & 0x3ff;
  if (exponent == 0) { // Zero or subnormal: mantissa * 2^-24.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) // Infinity or NaN.
    return floatFromBits(sign | 0x7f800000 | (mantissa << 13));
  return floatFromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// Rounds `value` to the nearest bfloat16 (ties to even); NaN stays NaN.
inline uint16_t floatToBFloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

/// Widens the bfloat16 `value` to float (exact).
inline float bfloat16ToFloat(uint16_t value) {
  return floatFromBits(static_cast<uint32_t>(value) << 16);
}

/// The reduction the wire values go through for `reduce`: AVG sums and
/// divides when unpacking.
inline commrt_reduce wireReduce(commrt_reduce reduce) {
  return reduce == COMMRT_AVG ? COMMRT_SUM : reduce;
}

/// The factor that unpacking applies to the reduced wire values: it undoes
/// `prescale` and, for AVG, divides by the number of ranks `size`.
inline float wireUnpackScale(commrt_reduce reduce, float prescale, int size) {
  return 1.0f / (reduce == COMMRT_AVG ? prescale * static_cast<float>(size)
                                      : prescale);
}

/// Host reference of packing: `wireOut[i] = round(input[i] * scale)` in the
/// 16-bit type `wire` (COMMRT_F16 or COMMRT_BF16).
void packWire(const float *input, uint16_t *wireOut, int64_t count,
              commrt_dtype wire, float scale);

/// Host reference of unpacking: `output[i] = widen(wireIn[i]) * scale`.
void unpackWire(const uint16_t *wireIn, float *output, int64_t count,
                commrt_dtype wire, float scale);

} // namespace commrt

#endif // COMMRT_WIREFORMAT_H
