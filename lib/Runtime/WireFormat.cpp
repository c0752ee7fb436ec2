//===- WireFormat.cpp - Host pack/unpack of reduced-precision wire data ---===//

#include "WireFormat.h"

namespace commrt {

void packWire(const float *input, uint16_t *wireOut, int64_t count,
              commrt_dtype wire, float scale) {
  auto narrow = wire == COMMRT_F16 ? floatToHalf : floatToBFloat16;
  for (int64_t i = 0; i < count; ++i)
    wireOut[i] = narrow(input[i] * scale);
}

void unpackWire(const uint16_t *wireIn, float *output, int64_t count,
                commrt_dtype wire, float scale) {
  auto widen = wire == COMMRT_F16 ? halfToFloat : bfloat16ToFloat;
  for (int64_t i = 0; i < count; ++i)
    output[i] = widen(wireIn[i]) * scale;
}

} // namespace commrt
