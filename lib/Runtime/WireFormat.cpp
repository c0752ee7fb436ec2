//===- WireFormat.cpp - Host pack/unpack of fused and wire data -----------===//

#include "WireFormat.h"

#include <type_traits>

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

} // namespace

void convert(const void *input, commrt_dtype from, void *output,
             commrt_dtype to, int64_t count, double scale) {
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

} // namespace commrt
