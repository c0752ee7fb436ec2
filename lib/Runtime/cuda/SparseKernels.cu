//===- SparseKernels.cu - CUDA kernels of the sparse allreduce ------------===//
//
// Elementwise kernels are grid-stride loops over 64-bit indices. Histograms
// count in shared memory per block and add the block's counts to the global
// ones; compactions are CUB's DeviceSelect over a counting iterator, which
// keeps index order.
//
//===----------------------------------------------------------------------===//

#include "SparseKernels.h"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <array>

using namespace commrt;
using namespace commrt::cuda;

namespace {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `count` elements, at most `cap`.
unsigned blocksFor(int64_t count, int64_t cap = 4096) {
  return unsigned(
      std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, cap));
}

/// The first index of this thread in a grid-stride loop.
__device__ int64_t firstIndex() {
  return blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
}

/// The stride of a grid-stride loop.
__device__ int64_t gridStride() { return int64_t(gridDim.x) * blockDim.x; }

/// The lesser of two indices (std::min is host code).
__device__ int64_t lesser(int64_t a, int64_t b) { return a < b ? a : b; }

/// `residual[i] += grad[i]`.
__global__ void accumulateKernel(float *residual, const float *grad,
                                 int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride())
    residual[i] += grad[i];
}

/// Counts the keys of one pass in shared memory (32-bit counts: a block sees
/// fewer than 2^32 entries, see histogramBlocks), then adds them to the
/// global histogram.
__global__ void histogramKernel(const float *acc, int64_t count, int pass,
                                uint32_t prefix,
                                unsigned long long *histogram) {
  __shared__ unsigned int local[RadixSearch::kMaxBins];
  const int bins = RadixSearch::bins(pass);
  for (int b = threadIdx.x; b < bins; b += blockDim.x)
    local[b] = 0;
  __syncthreads();
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    uint32_t key = magnitudeBits(acc[i]);
    if (RadixSearch::inPass(key, pass, prefix))
      atomicAdd(&local[RadixSearch::digit(key, pass)], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x)
    if (local[b] != 0)
      atomicAdd(&histogram[b], static_cast<unsigned long long>(local[b]));
}

/// Blocks of a histogram or count over `count` entries: enough to fill the
/// GPU, and enough that no block sees 2^31 entries.
unsigned histogramBlocks(int64_t count) {
  int64_t blocks =
      std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, 1024);
  return unsigned(std::max<int64_t>(blocks, (count >> 31) + 1));
}

using BlockSum = cub::BlockReduce<unsigned long long, kThreads>;

/// Adds the number of entries `cut` selects to `*selected`.
__global__ void countSelectedKernel(const float *acc, int64_t count, Cut cut,
                                    unsigned long long *selected) {
  __shared__ typename BlockSum::TempStorage temp;
  unsigned long long mine = 0;
  for (int64_t i = firstIndex(); i < count; i += gridStride())
    mine += cut.selects(magnitudeBits(acc[i]), i);
  unsigned long long total = BlockSum(temp).Sum(mine);
  if (threadIdx.x == 0 && total != 0)
    atomicAdd(selected, total);
}

/// One block per tile of `tile` entries of [begin, begin + size).
__global__ void countTiesKernel(const float *acc, int64_t begin, int64_t size,
                                int64_t tile, uint32_t key,
                                unsigned long long *tileCounts) {
  __shared__ typename BlockSum::TempStorage temp;
  const int64_t first = begin + blockIdx.x * tile;
  const int64_t end = lesser(first + tile, begin + size);
  unsigned long long mine = 0;
  for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
    mine += magnitudeBits(acc[i]) == key;
  unsigned long long total = BlockSum(temp).Sum(mine);
  if (threadIdx.x == 0)
    tileCounts[blockIdx.x] = total;
}

/// `values[j] = source[indices[j]]` for j < *selected.
__global__ void gatherKernel(float *values, const float *source,
                             const int64_t *indices, const int64_t *selected) {
  const int64_t pairs = *selected;
  for (int64_t j = firstIndex(); j < pairs; j += gridStride())
    values[j] = source[indices[j]];
}

/// Whether an index is selected by a Cut of the magnitudes at `acc`.
struct SelectedBy {
  const float *acc;
  Cut cut;

  /// Whether the entry at index `i` is selected.
  __device__ bool operator()(const int64_t &i) const {
    return cut.selects(magnitudeBits(acc[i]), i);
  }
};

/// `target[indices[j]] += values[j]`, marking the indices when `marks` is
/// not null.
__global__ void scatterAddKernel(float *target, const int64_t *indices,
                                 const float *values, int64_t pairs,
                                 unsigned char *marks) {
  for (int64_t j = firstIndex(); j < pairs; j += gridStride()) {
    const int64_t i = indices[j];
    target[i] += values[j];
    if (marks)
      marks[i] = 1;
  }
}

/// `data[indices[j]] = 0`.
__global__ void zeroAtKernel(float *data, const int64_t *indices,
                             int64_t pairs) {
  for (int64_t j = firstIndex(); j < pairs; j += gridStride())
    data[indices[j]] = 0.0f;
}

/// `data[i] /= divisor`.
__global__ void divideKernel(float *data, int64_t count, float divisor) {
  for (int64_t i = firstIndex(); i < count; i += gridStride())
    data[i] = data[i] / divisor;
}

using BlockSumDouble = cub::BlockReduce<double, kThreads>;

/// Block b computes the norms of chunks b, b + gridDim.x, ...
__global__ void chunkNormsKernel(const float *acc, int64_t count,
                                 int64_t chunkElements, int64_t chunks,
                                 double *norms) {
  __shared__ typename BlockSumDouble::TempStorage temp;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t begin = c * chunkElements;
    const int64_t end = lesser(count, begin + chunkElements);
    double mine = 0.0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const double x = acc[i];
      mine += x * x;
    }
    const double total = BlockSumDouble(temp).Sum(mine);
    if (threadIdx.x == 0)
      norms[c] = total;
    // `temp` is reused by the next chunk's reduction.
    __syncthreads();
  }
}

/// Block b packs chunks j = b, b + gridDim.x, ... of `chunks`.
__global__ void packChunksKernel(const float *acc, int64_t count,
                                 int64_t chunkElements, const int64_t *chunks,
                                 int64_t picked, float *packed) {
  for (int64_t j = blockIdx.x; j < picked; j += gridDim.x) {
    const int64_t source = chunks[j] * chunkElements;
    float *target = packed + j * chunkElements;
    for (int64_t e = threadIdx.x; e < chunkElements; e += blockDim.x)
      target[e] = source + e < count ? acc[source + e] : 0.0f;
  }
}

/// Block b unpacks chunks j = b, b + gridDim.x, ... of `chunks`.
__global__ void unpackChunksKernel(const float *packed, int64_t count,
                                   int64_t chunkElements, const int64_t *chunks,
                                   int64_t picked, float *grad,
                                   float *residual) {
  for (int64_t j = blockIdx.x; j < picked; j += gridDim.x) {
    const int64_t target = chunks[j] * chunkElements;
    const float *source = packed + j * chunkElements;
    for (int64_t e = threadIdx.x; e < chunkElements && target + e < count;
         e += blockDim.x) {
      grad[target + e] = source[e];
      residual[target + e] = 0.0f;
    }
  }
}

/// Copies the first `n` counts of `buffers.device` to `out` on the host,
/// through the pinned buffer, once the work queued on `stream` is done.
cudaError_t countsToHost(const SearchBuffers &buffers, int64_t n,
                         cudaStream_t stream, int64_t *out) {
  if (cudaError_t error = cudaMemcpyAsync(buffers.pinned, buffers.device,
                                          n * sizeof(unsigned long long),
                                          cudaMemcpyDeviceToHost, stream))
    return error;
  // The pinned counts are read below: the copy must have landed.
  if (cudaError_t error = cudaStreamSynchronize(stream))
    return error;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int64_t>(buffers.pinned[i]);
  return cudaSuccess;
}

/// Runs the histogram of pass `pass` with prefix `prefix` and copies its
/// counts into `counts` on the host.
cudaError_t
histogramToHost(const float *acc, int64_t count, int pass, uint32_t prefix,
                const SearchBuffers &buffers, cudaStream_t stream,
                std::array<int64_t, RadixSearch::kMaxBins> &counts) {
  const int bins = RadixSearch::bins(pass);
  if (cudaError_t error =
          histogram(acc, count, pass, prefix, buffers.device, stream))
    return error;
  return countsToHost(buffers, bins, stream, counts.data());
}

/// Runs `search` (a RadixSearch or a TopkSearch) to its end over the `count`
/// entries at `acc`, one device histogram per pass, read into `counts`.
template <typename Search>
cudaError_t runSearch(Search &search, const float *acc, int64_t count,
                      const SearchBuffers &buffers, cudaStream_t stream,
                      std::array<int64_t, RadixSearch::kMaxBins> &counts) {
  while (!search.done()) {
    if (cudaError_t error =
            histogramToHost(acc, count, search.pass(), search.prefix(), buffers,
                            stream, counts))
      return error;
    search.advance(counts.data());
  }
  return cudaSuccess;
}

} // namespace

cudaError_t commrt::cuda::accumulate(float *residual, const float *grad,
                                     int64_t count, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  accumulateKernel<<<blocksFor(count), kThreads, 0, stream>>>(residual, grad,
                                                              count);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::histogram(const float *acc, int64_t count, int pass,
                                    uint32_t prefix,
                                    unsigned long long *histogram,
                                    cudaStream_t stream) {
  if (pass < 0 || pass >= RadixSearch::kPasses)
    return cudaErrorInvalidValue;
  if (cudaError_t error = cudaMemsetAsync(
          histogram, 0, RadixSearch::bins(pass) * sizeof(unsigned long long),
          stream))
    return error;
  if (count == 0)
    return cudaSuccess;
  histogramKernel<<<histogramBlocks(count), kThreads, 0, stream>>>(
      acc, count, pass, prefix, histogram);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::countSelected(const float *acc, int64_t count,
                                        Cut cut, unsigned long long *selected,
                                        cudaStream_t stream) {
  if (cudaError_t error =
          cudaMemsetAsync(selected, 0, sizeof(unsigned long long), stream))
    return error;
  if (count == 0)
    return cudaSuccess;
  countSelectedKernel<<<histogramBlocks(count), kThreads, 0, stream>>>(
      acc, count, cut, selected);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::countTies(const float *acc, const TieSearch &search,
                                    uint32_t key,
                                    unsigned long long *tileCounts,
                                    cudaStream_t stream) {
  const int64_t tiles = search.tiles();
  if (tiles < 1 || tiles > RadixSearch::kMaxBins)
    return cudaErrorInvalidValue;
  countTiesKernel<<<unsigned(tiles), kThreads, 0, stream>>>(
      acc, search.begin(), search.size(), search.tileElements(), key,
      tileCounts);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::select(const float *acc, int64_t count, Cut cut,
                                 int64_t *indices, float *values,
                                 int64_t *selected, void *temp,
                                 size_t &tempBytes, cudaStream_t stream) {
  thrust::counting_iterator<int64_t> first(0);
  if (cudaError_t error =
          cub::DeviceSelect::If(temp, tempBytes, first, indices, selected,
                                count, SelectedBy{acc, cut}, stream))
    return error;
  if (!temp)
    return cudaSuccess;
  gatherKernel<<<blocksFor(count, 1024), kThreads, 0, stream>>>(
      values, acc, indices, selected);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::selectMarked(const unsigned char *marks,
                                       int64_t count, const float *source,
                                       int64_t *indices, float *values,
                                       int64_t *selected, void *temp,
                                       size_t &tempBytes, cudaStream_t stream) {
  thrust::counting_iterator<int64_t> first(0);
  if (cudaError_t error = cub::DeviceSelect::Flagged(
          temp, tempBytes, first, marks, indices, selected, count, stream))
    return error;
  if (!temp)
    return cudaSuccess;
  gatherKernel<<<blocksFor(count, 1024), kThreads, 0, stream>>>(
      values, source, indices, selected);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::findThreshold(const float *acc, int64_t count,
                                        int64_t k, const SearchBuffers &buffers,
                                        cudaStream_t stream,
                                        uint32_t &threshold) {
  RadixSearch search(k);
  std::array<int64_t, RadixSearch::kMaxBins> counts;
  if (cudaError_t error =
          runSearch(search, acc, count, buffers, stream, counts))
    return error;
  threshold = search.threshold();
  return cudaSuccess;
}

cudaError_t commrt::cuda::findTopkCut(const float *acc, int64_t count,
                                      int64_t k, const SearchBuffers &buffers,
                                      cudaStream_t stream, Cut &cut) {
  if (k < 1 || k > count)
    return cudaErrorInvalidValue;
  TopkSearch search(k);
  std::array<int64_t, RadixSearch::kMaxBins> counts;
  if (cudaError_t error =
          runSearch(search, acc, count, buffers, stream, counts))
    return error;
  cut = Cut{search.key(), count};
  if (search.takesAllTies())
    return cudaSuccess;
  TieSearch ties(count, search.tiesWanted());
  while (!ties.done()) {
    const int64_t tiles = ties.tiles();
    if (cudaError_t error =
            countTies(acc, ties, search.key(), buffers.device, stream))
      return error;
    if (cudaError_t error = countsToHost(buffers, tiles, stream, counts.data()))
      return error;
    // The histograms counted these ties: fewer means corrupted counts.
    if (!ties.advance(counts.data()))
      return cudaErrorIllegalState;
  }
  cut.tiesBelow = ties.end();
  return cudaSuccess;
}

cudaError_t commrt::cuda::scatterAdd(float *target, const int64_t *indices,
                                     const float *values, int64_t pairs,
                                     unsigned char *marks,
                                     cudaStream_t stream) {
  if (pairs == 0)
    return cudaSuccess;
  scatterAddKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(
      target, indices, values, pairs, marks);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::zeroAt(float *data, const int64_t *indices,
                                 int64_t pairs, cudaStream_t stream) {
  if (pairs == 0)
    return cudaSuccess;
  zeroAtKernel<<<blocksFor(pairs), kThreads, 0, stream>>>(data, indices, pairs);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::fillZero(float *data, int64_t count,
                                   cudaStream_t stream) {
  return cudaMemsetAsync(data, 0, size_t(count) * sizeof(float), stream);
}

cudaError_t commrt::cuda::divide(float *data, int64_t count, float divisor,
                                 cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  divideKernel<<<blocksFor(count), kThreads, 0, stream>>>(data, count, divisor);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::chunkNorms(const float *acc, int64_t count,
                                     int64_t chunkElements, double *norms,
                                     cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  if (chunkElements < 1)
    return cudaErrorInvalidValue;
  const int64_t chunks = (count - 1) / chunkElements + 1;
  chunkNormsKernel<<<unsigned(std::min<int64_t>(chunks, 65536)), kThreads, 0,
                     stream>>>(acc, count, chunkElements, chunks, norms);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::packChunks(const float *acc, int64_t count,
                                     int64_t chunkElements,
                                     const int64_t *chunks, int64_t picked,
                                     float *packed, cudaStream_t stream) {
  if (picked == 0)
    return cudaSuccess;
  if (chunkElements < 1)
    return cudaErrorInvalidValue;
  packChunksKernel<<<unsigned(std::min<int64_t>(picked, 65536)), kThreads, 0,
                     stream>>>(acc, count, chunkElements, chunks, picked,
                               packed);
  return cudaGetLastError();
}

cudaError_t commrt::cuda::unpackChunks(const float *packed, int64_t count,
                                       int64_t chunkElements,
                                       const int64_t *chunks, int64_t picked,
                                       float *grad, float *residual,
                                       cudaStream_t stream) {
  if (picked == 0)
    return cudaSuccess;
  if (chunkElements < 1)
    return cudaErrorInvalidValue;
  unpackChunksKernel<<<unsigned(std::min<int64_t>(picked, 65536)), kThreads, 0,
                       stream>>>(packed, count, chunkElements, chunks, picked,
                                 grad, residual);
  return cudaGetLastError();
}
