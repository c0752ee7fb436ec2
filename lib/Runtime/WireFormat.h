//===- WireFormat.h - f16/bf16 conversions and wire pack/unpack -*- C++ -*-===//
//
// Portable IEEE half (f16) and bfloat16 conversions with round to nearest
// even, and the host reference of the pack/unpack steps of the fused and
// reduced-precision collectives. The CUDA kernels in cuda/WireKernels.cu
// compute the same values bit for bit.
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

/// Rounds `value` to float toward zero and sets the lowest mantissa bit when
/// that dropped anything ("round to odd"). Float keeps more than two bits
/// beyond f16 and bf16, so rounding this to either to nearest even gives the
/// correctly rounded `value`, where going through float to nearest could
/// round twice.
inline float roundToOdd(double value) {
  float nearest = static_cast<float>(value);
  if (static_cast<double>(nearest) == value || std::isnan(value))
    return nearest;
  uint32_t bits = floatBits(nearest);
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value))
    --bits; // One step toward zero: the truncation.
  return floatFromBits(bits | 1);
}

/// Rounds `value` to the nearest f16 (ties to even), rounding only once.
inline uint16_t doubleToHalf(double value) {
  return floatToHalf(roundToOdd(value));
}

/// Rounds `value` to the nearest bfloat16 (ties to even), rounding only once.
inline uint16_t doubleToBFloat16(double value) {
  return floatToBFloat16(roundToOdd(value));
}

/// The element type in which the data of a collective over `dtype` with the
/// wire type `wire` (a commrt_dtype or COMMRT_WIRE_NONE) travels.
inline commrt_dtype travelType(commrt_dtype dtype, int32_t wire) {
  return wire == COMMRT_WIRE_NONE ? dtype : static_cast<commrt_dtype>(wire);
}

/// The reduction the travelling values go through for `reduce`: wire values
/// are summed for AVG, and unpacking divides.
inline commrt_reduce travelReduce(int32_t wire, commrt_reduce reduce) {
  return wire != COMMRT_WIRE_NONE && reduce == COMMRT_AVG ? COMMRT_SUM : reduce;
}

/// The factor that unpacking applies to the reduced values of `dtype`
/// buffers sent as `wire`: it undoes `prescale` and, for AVG over a wire
/// type, divides by the number of ranks `size`. Computed as convert()
/// computes: in double for f64 buffers, in float otherwise.
inline double unpackScale(commrt_dtype dtype, int32_t wire,
                          commrt_reduce reduce, float prescale, int size) {
  int divisor = wire != COMMRT_WIRE_NONE && reduce == COMMRT_AVG ? size : 1;
  if (dtype == COMMRT_F64)
    return 1.0 / (static_cast<double>(prescale) * divisor);
  return 1.0f / (prescale * static_cast<float>(divisor));
}

/// Host reference of packing and unpacking: converts `count` elements of
/// `from` at `input` to `to` at `output` (which may be `input` when the types
/// have the same size), as `output[i] = round(widen(input[i]) * scale)`. The
/// product is computed in double when either type is f64 and in float (with
/// `scale` rounded to float) otherwise, and rounded once to `to`, to nearest
/// even. With `from` == `to` and `scale` 1 it copies the bits.
/// Where the CPU converts f16 in hardware (x86 F16C), f32 <-> f16 takes that
/// path, 8 elements at a time: the same values, bit for bit, except that a
/// NaN keeps its payload instead of becoming the canonical quiet NaN.
void convert(const void *input, commrt_dtype from, void *output,
             commrt_dtype to, int64_t count, double scale);

/// Whether this CPU converts f16 in hardware, which convert() and
/// combineHalves() then use.
bool hasHardwareHalf();

/// The reduction of f16 elements that the MPI backend's user op runs:
/// `inOut[i] = narrow(combine(widen(in[i]), widen(inOut[i])))` with the
/// combination of `reduce` in float (AVG sums), where max and min are
/// std::max and std::min.
void combineHalves(const uint16_t *in, uint16_t *inOut, int64_t count,
                   commrt_reduce reduce);

} // namespace commrt

#endif // COMMRT_WIREFORMAT_H
