//===- WireKernels.cu - Fused cast+scale pack/unpack kernels --------------===//

#include "WireKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace {

/// Rounds `value` to the wire type `Wire` (nearest even) and returns its
/// bits.
template <typename Wire> __device__ uint16_t narrow(float value);
template <> __device__ uint16_t narrow<__half>(float value) {
  return __half_as_ushort(__float2half_rn(value));
}
template <> __device__ uint16_t narrow<__nv_bfloat16>(float value) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}

/// Widens the bits `value` of a `Wire` to float.
template <typename Wire> __device__ float widen(uint16_t value);
template <> __device__ float widen<__half>(uint16_t value) {
  return __half2float(__ushort_as_half(value));
}
template <> __device__ float widen<__nv_bfloat16>(uint16_t value) {
  return __bfloat162float(__ushort_as_bfloat16(value));
}

template <typename Wire>
__global__ void packKernel(const float *input, uint16_t *wireOut, int64_t count,
                           float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    wireOut[i] = narrow<Wire>(input[i] * scale);
}

template <typename Wire>
__global__ void unpackKernel(const uint16_t *wireIn, float *output,
                             int64_t count, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    output[i] = widen<Wire>(wireIn[i]) * scale;
}

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `count` elements.
unsigned blocksFor(int64_t count) {
  return unsigned(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

} // namespace

cudaError_t commrt::cuda::packWire(const float *input, uint16_t *wireOut,
                                   int64_t count, commrt_dtype wire,
                                   float scale, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (wire == COMMRT_F16)
    packKernel<__half><<<blocksFor(count), kThreads, 0, stream>>>(
        input, wireOut, count, scale);
  else
    packKernel<__nv_bfloat16><<<blocksFor(count), kThreads, 0, stream>>>(
        input, wireOut, count, scale);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::unpackWire(const uint16_t *wireIn, float *output,
                                     int64_t count, commrt_dtype wire,
                                     float scale, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (wire == COMMRT_F16)
    unpackKernel<__half><<<blocksFor(count), kThreads, 0, stream>>>(
        wireIn, output, count, scale);
  else
    unpackKernel<__nv_bfloat16><<<blocksFor(count), kThreads, 0, stream>>>(
        wireIn, output, count, scale);
  return cudaGetLastError();
}
