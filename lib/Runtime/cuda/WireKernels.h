//===- WireKernels.h - CUDA pack/unpack kernels of wire data ----*- C++ -*-===//
//
// Device counterparts of packWire/unpackWire in WireFormat.h: the same
// values, bit for bit, computed by one fused cast+scale kernel each.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_CUDA_WIREKERNELS_H
#define COMMRT_CUDA_WIREKERNELS_H

#include "commrt/commrt.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace commrt::cuda {

/// Enqueues `wireOut[i] = round(input[i] * scale)` on `stream`, rounding to
/// the 16-bit `wire` type (COMMRT_F16 or COMMRT_BF16) to nearest even. Both
/// pointers are device memory. Returns the launch error, if any.
cudaError_t packWire(const float *input, uint16_t *wireOut, int64_t count,
                     commrt_dtype wire, float scale, cudaStream_t stream);

/// Enqueues `output[i] = widen(wireIn[i]) * scale` on `stream`. Both pointers
/// are device memory. Returns the launch error, if any.
cudaError_t unpackWire(const uint16_t *wireIn, float *output, int64_t count,
                       commrt_dtype wire, float scale, cudaStream_t stream);

} // namespace commrt::cuda

#endif // COMMRT_CUDA_WIREKERNELS_H
