//===- WireKernels.cu - Fused cast+scale pack/unpack kernels --------------===//

#include "../ReduceElements.h"
#include "../WireFormat.h"
#include "WireKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
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

/// Four elements of `T`, loaded or stored with one access.
template <typename T> struct alignas(4 * sizeof(T)) Quad { T value[4]; };

/// One element converted, or its bits copied where `Copy` (the same type,
/// unscaled: as the cudaMemcpyAsync of convert()).
template <commrt_dtype From, commrt_dtype To, bool Copy>
__device__ typename Device<To>::Storage
convertValue(typename Device<From>::Storage value, Compute<From, To> scale) {
  if constexpr (Copy)
    return value;
  else
    return Device<To>::narrow(
        static_cast<Compute<From, To>>(Device<From>::widen(value)) * scale);
}

/// Converts elements [begin, end) of `input` into `output`, this thread
/// being `lane` of `lanes`. Where both arrays are aligned for it, four
/// elements at a time, with one load and one store each (one element per
/// access leaves 16-bit casts at three quarters of the memory rate); the
/// rest one at a time.
template <commrt_dtype From, commrt_dtype To, bool Copy>
__device__ void convertRange(const typename Device<From>::Storage *input,
                             typename Device<To>::Storage *output,
                             int64_t begin, int64_t end, int64_t lane,
                             int64_t lanes, Compute<From, To> scale) {
  using In = typename Device<From>::Storage;
  using Out = typename Device<To>::Storage;
  int64_t rest = begin;
  if (reinterpret_cast<uintptr_t>(input + begin) % sizeof(Quad<In>) == 0 &&
      reinterpret_cast<uintptr_t>(output + begin) % sizeof(Quad<Out>) == 0) {
    const int64_t quads = (end - begin) / 4;
    const auto *in = reinterpret_cast<const Quad<In> *>(input + begin);
    auto *out = reinterpret_cast<Quad<Out> *>(output + begin);
    for (int64_t q = lane; q < quads; q += lanes) {
      const Quad<In> loaded = in[q];
      Quad<Out> converted;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        converted.value[k] =
            convertValue<From, To, Copy>(loaded.value[k], scale);
      out[q] = converted;
    }
    rest = begin + quads * 4;
  }
  for (int64_t i = rest + lane; i < end; i += lanes)
    output[i] = convertValue<From, To, Copy>(input[i], scale);
}

template <commrt_dtype From, commrt_dtype To>
__global__ void convertKernel(const typename Device<From>::Storage *input,
                              typename Device<To>::Storage *output,
                              int64_t count, Compute<From, To> scale) {
  convertRange<From, To, false>(input, output, 0, count,
                                blockIdx.x * int64_t(blockDim.x) + threadIdx.x,
                                int64_t(gridDim.x) * blockDim.x, scale);
}

constexpr int kThreads = 256;

/// The ring's combination (ReduceElements.h) of `from` into `into`.
template <commrt_dtype Type>
__global__ void reduceKernel(const typename Device<Type>::Storage *from,
                             typename Device<Type>::Storage *into,
                             int64_t count, commrt_reduce reduce) {
  const int64_t lanes = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += lanes)
    into[i] = Device<Type>::narrow(commrt::combineValues(
        Device<Type>::widen(from[i]), Device<Type>::widen(into[i]), reduce));
}

/// Elements one block of convertSegmentsKernel converts.
constexpr int64_t kElementsPerBlock = 8 * kThreads;

/// The segments of one launch of convertSegmentsKernel and, for each, the
/// first of the blocks that convert it (`firstBlock[n]` is the total).
struct SegmentTable {
  const void *input[commrt::cuda::kSegmentsPerLaunch];
  void *output[commrt::cuda::kSegmentsPerLaunch];
  int64_t count[commrt::cuda::kSegmentsPerLaunch];
  int32_t firstBlock[commrt::cuda::kSegmentsPerLaunch + 1];
  int32_t segments;
};
static_assert(sizeof(SegmentTable) + sizeof(double) <= 4096,
              "the table must fit the kernel parameter space");

/// Each block converts `kElementsPerBlock` elements of one segment: it finds
/// the segment by a binary search of `firstBlock`.
template <commrt_dtype From, commrt_dtype To, bool Copy>
__global__ void convertSegmentsKernel(SegmentTable table,
                                      Compute<From, To> scale) {
  int32_t low = 0, high = table.segments - 1;
  const int32_t block = int32_t(blockIdx.x);
  while (low < high) {
    int32_t middle = (low + high + 1) / 2;
    if (table.firstBlock[middle] <= block)
      low = middle;
    else
      high = middle - 1;
  }
  const auto *input =
      static_cast<const typename Device<From>::Storage *>(table.input[low]);
  auto *output = static_cast<typename Device<To>::Storage *>(table.output[low]);
  const int64_t begin =
      int64_t(block - table.firstBlock[low]) * kElementsPerBlock;
  const int64_t end = min(begin + kElementsPerBlock, table.count[low]);
  convertRange<From, To, Copy>(input, output, begin, end, threadIdx.x, kThreads,
                               scale);
}

/// Blocks for a grid-stride loop over `count` items (groups of four
/// elements for convertKernel).
unsigned blocksFor(int64_t count) {
  return unsigned(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

/// A commrt_dtype as a type, for dispatch.
template <commrt_dtype D>
using DtypeConstant = std::integral_constant<commrt_dtype, D>;

/// Calls `body(DtypeConstant<From>{}, DtypeConstant<To>{})` for the run-time
/// types `from` and `to`; cudaErrorInvalidValue for a type that is not a
/// commrt_dtype.
template <typename Body>
cudaError_t dispatchTypes(commrt_dtype from, commrt_dtype to, Body body) {
  auto withTo = [&](auto fromConstant) -> cudaError_t {
    switch (to) {
    case COMMRT_F32:
      return body(fromConstant, DtypeConstant<COMMRT_F32>{});
    case COMMRT_F64:
      return body(fromConstant, DtypeConstant<COMMRT_F64>{});
    case COMMRT_F16:
      return body(fromConstant, DtypeConstant<COMMRT_F16>{});
    case COMMRT_BF16:
      return body(fromConstant, DtypeConstant<COMMRT_BF16>{});
    }
    return cudaErrorInvalidValue;
  };
  switch (from) {
  case COMMRT_F32:
    return withTo(DtypeConstant<COMMRT_F32>{});
  case COMMRT_F64:
    return withTo(DtypeConstant<COMMRT_F64>{});
  case COMMRT_F16:
    return withTo(DtypeConstant<COMMRT_F16>{});
  case COMMRT_BF16:
    return withTo(DtypeConstant<COMMRT_BF16>{});
  }
  return cudaErrorInvalidValue;
}

template <commrt_dtype From, commrt_dtype To>
cudaError_t launch(const void *input, void *output, int64_t count, double scale,
                   cudaStream_t stream) {
  convertKernel<From, To><<<blocksFor((count + 3) / 4), kThreads, 0, stream>>>(
      static_cast<const typename Device<From>::Storage *>(input),
      static_cast<typename Device<To>::Storage *>(output), count,
      static_cast<Compute<From, To>>(scale));
  return cudaGetLastError();
}

template <commrt_dtype From, commrt_dtype To>
cudaError_t launchSegments(const SegmentTable &table, double scale,
                           cudaStream_t stream) {
  const unsigned blocks = unsigned(table.firstBlock[table.segments]);
  if (From == To && scale == 1.0)
    convertSegmentsKernel<From, To, true>
        <<<blocks, kThreads, 0, stream>>>(table, Compute<From, To>(1));
  else
    convertSegmentsKernel<From, To, false><<<blocks, kThreads, 0, stream>>>(
        table, static_cast<Compute<From, To>>(scale));
  return cudaGetLastError();
}

template <commrt_dtype Type>
cudaError_t launchReduce(const void *from, void *into, int64_t count,
                         commrt_reduce reduce, cudaStream_t stream) {
  reduceKernel<Type><<<blocksFor(count), kThreads, 0, stream>>>(
      static_cast<const typename Device<Type>::Storage *>(from),
      static_cast<typename Device<Type>::Storage *>(into), count, reduce);
  return cudaGetLastError();
}

} // namespace

cudaError_t commrt::cuda::reduceInto(const void *from, void *into,
                                     int64_t count, commrt_dtype type,
                                     commrt_reduce reduce,
                                     cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  return dispatchTypes(type, type, [&](auto typeConstant, auto) {
    return launchReduce<decltype(typeConstant)::value>(from, into, count,
                                                       reduce, stream);
  });
}

cudaError_t commrt::cuda::convertSegments(const ConvertSegment *segments,
                                          size_t count, commrt_dtype from,
                                          commrt_dtype to, double scale,
                                          cudaStream_t stream) {
  const bool copy = from == to && scale == 1.0;
  SegmentTable table;
  table.segments = 0;
  table.firstBlock[0] = 0;
  auto flush = [&]() -> cudaError_t {
    if (table.segments == 0)
      return cudaSuccess;
    cudaError_t error =
        dispatchTypes(from, to, [&](auto fromType, auto toType) {
          return launchSegments<decltype(fromType)::value,
                                decltype(toType)::value>(table, scale, stream);
        });
    table.segments = 0;
    return error;
  };
  for (size_t i = 0; i < count; ++i) {
    const ConvertSegment &segment = segments[i];
    if (segment.count == 0 || (copy && segment.input == segment.output))
      continue;
    // A launch stays below 2^31 blocks, the grid's limit (one segment
    // reaches it only beyond 2^42 elements, more than any GPU holds).
    int64_t blocks =
        (segment.count + kElementsPerBlock - 1) / kElementsPerBlock;
    if (table.segments == int32_t(kSegmentsPerLaunch) ||
        table.firstBlock[table.segments] + blocks > INT32_MAX)
      if (cudaError_t error = flush())
        return error;
    int32_t at = table.segments++;
    table.input[at] = segment.input;
    table.output[at] = segment.output;
    table.count[at] = segment.count;
    table.firstBlock[at + 1] = table.firstBlock[at] + int32_t(blocks);
  }
  return flush();
}

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
  return dispatchTypes(from, to, [&](auto fromType, auto toType) {
    return launch<decltype(fromType)::value, decltype(toType)::value>(
        input, output, count, scale, stream);
  });
}
