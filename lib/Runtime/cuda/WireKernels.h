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

/// One buffer of a batched conversion: `count` elements at `input`
/// converted into `output` (device memory, as for convert()).
struct ConvertSegment {
  const void *input;
  void *output;
  int64_t count;
};

/// Enqueues on `stream` convert(segments[i].input, from, segments[i].output,
/// to, segments[i].count, scale) for every segment, with the same results bit
/// for bit, in one launch per `kSegmentsPerLaunch` segments instead of one
/// per segment: a plan's buffers are packed into the fusion buffer and back
/// in a few launches, however many small gradients it has. Segments whose
/// output is their input and that need no conversion are skipped. Returns the
/// first launch error, if any.
cudaError_t convertSegments(const ConvertSegment *segments, size_t count,
                            commrt_dtype from, commrt_dtype to, double scale,
                            cudaStream_t stream);

/// Enqueues on `stream` the ring's reduction of the `count` elements of
/// `type` at `from` into those at `into` (device memory both):
/// `into[i] = combine(from[i], into[i])` as the host's reduceElements()
/// computes it (ReduceElements.h), bit for bit. Returns the launch error.
cudaError_t reduceInto(const void *from, void *into, int64_t count,
                       commrt_dtype type, commrt_reduce reduce,
                       cudaStream_t stream);

/// The segments one launch of convertSegments() converts: its table travels
/// as a kernel parameter, which stays within the 4 KiB every GPU allows.
constexpr size_t kSegmentsPerLaunch = 64;

} // namespace commrt::cuda

#endif // COMMRT_CUDA_WIREKERNELS_H
