//===- WireKernels.cu - Fused cast+scale pack/unpack kernels --------------===//

#include "../WireFormat.h"
#include "WireKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

namespace {

/// Rounds `value` to float toward zero, setting the lowest mantissa bit when
/// that dropped anything (see roundToOdd in WireFormat.h).
__device__ float roundToOdd(double value) {
  float truncated = __double2float_rz(value);
  if (static_cast<double>(truncated) == value)
    return truncated;
  return __uint_as_float(__float_as_uint(truncated) | 1u);
}

/// How the device stores, widens and rounds (to nearest even) elements of a
/// commrt_dtype.
template <commrt_dtype> struct Device;
template <> struct Device<COMMRT_F32> {
  using Storage = float;
  static __device__ float widen(float value) { return value; }
  static __device__ float narrow(float value) { return value; }
  static __device__ float narrow(double value) {
    return __double2float_rn(value);
  }
};
template <> struct Device<COMMRT_F64> {
  using Storage = double;
  static __device__ double widen(double value) { return value; }
  static __device__ double narrow(double value) { return value; }
};
template <> struct Device<COMMRT_F16> {
  using Storage = uint16_t;
  static __device__ float widen(uint16_t value) {
    return __half2float(__ushort_as_half(value));
  }
  static __device__ uint16_t narrow(float value) {
    return __half_as_ushort(__float2half_rn(value));
  }
  static __device__ uint16_t narrow(double value) {
    return narrow(roundToOdd(value));
  }
};
template <> struct Device<COMMRT_BF16> {
  using Storage = uint16_t;
  static __device__ float widen(uint16_t value) {
    return __bfloat162float(__ushort_as_bfloat16(value));
  }
  static __device__ uint16_t narrow(float value) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  }
  static __device__ uint16_t narrow(double value) {
    return narrow(roundToOdd(value));
  }
};

/// Computes in double when either type is f64, in float otherwise.
template <commrt_dtype From, commrt_dtype To>
using Compute =
    std::conditional_t<From == COMMRT_F64 || To == COMMRT_F64, double, float>;

template <commrt_dtype From, commrt_dtype To>
__global__ void convertKernel(const typename Device<From>::Storage *input,
                              typename Device<To>::Storage *output,
                              int64_t count, Compute<From, To> scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    output[i] = Device<To>::narrow(
        static_cast<Compute<From, To>>(Device<From>::widen(input[i])) * scale);
}

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `count` elements.
unsigned blocksFor(int64_t count) {
  return unsigned(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

template <commrt_dtype From, commrt_dtype To>
cudaError_t launch(const void *input, void *output, int64_t count, double scale,
                   cudaStream_t stream) {
  convertKernel<From, To><<<blocksFor(count), kThreads, 0, stream>>>(
      static_cast<const typename Device<From>::Storage *>(input),
      static_cast<typename Device<To>::Storage *>(output), count,
      static_cast<Compute<From, To>>(scale));
  return cudaGetLastError();
}

template <commrt_dtype From>
cudaError_t launchFrom(const void *input, void *output, commrt_dtype to,
                       int64_t count, double scale, cudaStream_t stream) {
  switch (to) {
  case COMMRT_F32:
    return launch<From, COMMRT_F32>(input, output, count, scale, stream);
  case COMMRT_F64:
    return launch<From, COMMRT_F64>(input, output, count, scale, stream);
  case COMMRT_F16:
    return launch<From, COMMRT_F16>(input, output, count, scale, stream);
  case COMMRT_BF16:
    return launch<From, COMMRT_BF16>(input, output, count, scale, stream);
  }
  return cudaErrorInvalidValue;
}

} // namespace

cudaError_t commrt::cuda::convert(const void *input, commrt_dtype from,
                                  void *output, commrt_dtype to, int64_t count,
                                  double scale, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (from == to && scale == 1.0) {
    if (input == output)
      return cudaSuccess;
    return cudaMemcpyAsync(output, input, count * elementSize(from),
                           cudaMemcpyDeviceToDevice, stream);
  }
  switch (from) {
  case COMMRT_F32:
    return launchFrom<COMMRT_F32>(input, output, to, count, scale, stream);
  case COMMRT_F64:
    return launchFrom<COMMRT_F64>(input, output, to, count, scale, stream);
  case COMMRT_F16:
    return launchFrom<COMMRT_F16>(input, output, to, count, scale, stream);
  case COMMRT_BF16:
    return launchFrom<COMMRT_BF16>(input, output, to, count, scale, stream);
  }
  return cudaErrorInvalidValue;
}
