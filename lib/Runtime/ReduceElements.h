//===- ReduceElements.h - The ring's combination of two values --*- C++ -*-===//
//
// How a ring combines a received element with the one it holds, shared by
// the host (reduceElements, the reference) and the CUDA kernel that reduces
// staged pieces on the device (cuda::reduceInto in cuda/WireKernels.cu):
// 16-bit floats are widened to float, combined and rounded back to nearest
// even, as the MPI backend's f16 and bf16 operations do; AVG sums (the
// division follows the allreduce).
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_REDUCEELEMENTS_H
#define COMMRT_REDUCEELEMENTS_H

#include "commrt/commrt.h"

#include <cstdint>

#if defined(__CUDACC__)
#define COMMRT_HOST_DEVICE __host__ __device__
#else
#define COMMRT_HOST_DEVICE
#endif

namespace commrt {

/// `in` combined into `inOut` by `reduce`: their sum for SUM and AVG,
/// std::max(in, inOut) for MAX, std::min(in, inOut) for MIN.
template <typename T>
COMMRT_HOST_DEVICE inline T combineValues(T in, T inOut, commrt_reduce reduce) {
  switch (reduce) {
  case COMMRT_MAX:
    return in < inOut ? inOut : in;
  case COMMRT_MIN:
    return inOut < in ? inOut : in;
  case COMMRT_SUM:
  case COMMRT_AVG:
    break;
  }
  return in + inOut;
}

/// Host reference of the device reduction: `into[i] = combine(from[i],
/// into[i])` for the `count` elements of `type` at `from` and `into`, 16-bit
/// types through float (combineValues).
void reduceElements(const void *from, void *into, int64_t count,
                    commrt_dtype type, commrt_reduce reduce);

} // namespace commrt

#endif // COMMRT_REDUCEELEMENTS_H
