//===- WireKernels.h - CUDA pack/unpack kernels of wire data ----*- C++ -*-===//
//
// The device counterpart of convert() in WireFormat.h: the same values, bit
// for bit, computed by one fused cast+scale kernel.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_CUDA_WIREKERNELS_H
#define COMMRT_CUDA_WIREKERNELS_H

#include "commrt/commrt.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace commrt::cuda {

/// Enqueues on `stream` the conversion of `count` elements of `from` at
/// `input` to `to` at `output`, `output[i] = round(widen(input[i]) * scale)`,
/// computed as the host's convert() computes it. Both pointers are device
/// memory; `output` may be `input` when the types have the same size. With
/// `from` == `to` and `scale` 1 it enqueues a copy (none when `output` is
/// `input`). Returns the launch error, if any.
cudaError_t convert(const void *input, commrt_dtype from, void *output,
                    commrt_dtype to, int64_t count, double scale,
                    cudaStream_t stream);

} // namespace commrt::cuda

#endif // COMMRT_CUDA_WIREKERNELS_H
