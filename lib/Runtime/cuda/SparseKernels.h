//===- SparseKernels.h - CUDA kernels of the sparse allreduce ---*- C++ -*-===//
//
// The device steps of commrt_sparse_allreduce under the NCCL backend, each
// computing what the host path of Sparse.cpp computes: the same selections
// (the radix searches of Selection.h on device histograms), bit for bit the
// same sums, and chunk norms up to the order of their additions. Every
// function enqueues its work on `stream` and returns the first CUDA error,
// if any; pointers are device memory unless said otherwise. Counts and
// indices are 64-bit throughout.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_CUDA_SPARSEKERNELS_H
#define COMMRT_CUDA_SPARSEKERNELS_H

#include "../Selection.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace commrt::cuda {

/// Enqueues `residual[i] += grad[i]` for the `count` entries.
cudaError_t accumulate(float *residual, const float *grad, int64_t count,
                       cudaStream_t stream);

/// Enqueues the histogram of pass `pass` with prefix `prefix` (see
/// RadixSearch) over the `count` entries at `acc` into `histogram`
/// (RadixSearch::bins(pass) counts, which this call zeroes first): the
/// counts commrt::histogramPass computes on the host.
cudaError_t histogram(const float *acc, int64_t count, int pass,
                      uint32_t prefix, unsigned long long *histogram,
                      cudaStream_t stream);

/// Enqueues the number of the `count` entries at `acc` that `cut` selects
/// into `*selected`, which this call zeroes first.
cudaError_t countSelected(const float *acc, int64_t count, Cut cut,
                          unsigned long long *selected, cudaStream_t stream);

/// Enqueues, for each tile of the range `search` searches (search.tiles()
/// of them), the number of its entries of `acc` whose key is `key`, into
/// `tileCounts`.
cudaError_t countTies(const float *acc, const TieSearch &search, uint32_t key,
                      unsigned long long *tileCounts, cudaStream_t stream);

/// Enqueues the order-preserving compaction of the indices of the `count`
/// entries at `acc` that `cut` selects into `indices`, their values into
/// `values`, and their number into `*selected` (device memory). `indices`
/// and `values` must have room for every selected entry (countSelected
/// tells how many). With `temp` null it only sets `tempBytes` to the
/// temporary storage it needs for `count` entries; otherwise `temp` holds
/// `tempBytes` bytes.
cudaError_t select(const float *acc, int64_t count, Cut cut, int64_t *indices,
                   float *values, int64_t *selected, void *temp,
                   size_t &tempBytes, cudaStream_t stream);

/// Enqueues the order-preserving compaction of the indices i < `count`
/// whose `marks[i]` is nonzero into `indices`, `source[i]` of each into
/// `values`, and their number into `*selected`. Temporary storage as for
/// select().
cudaError_t selectMarked(const unsigned char *marks, int64_t count,
                         const float *source, int64_t *indices, float *values,
                         int64_t *selected, void *temp, size_t &tempBytes,
                         cudaStream_t stream);

/// Device memory and pinned host memory of RadixSearch::kMaxBins counts
/// each, through which the searches below read their histograms.
struct SearchBuffers {
  unsigned long long *device;
  unsigned long long *pinned;
};

/// Runs RadixSearch for the `k` largest magnitudes of the `count` entries at
/// `acc` with device histograms and sets `threshold` to its threshold, the
/// one commrt::findThreshold finds. Synchronises `stream` after every pass
/// to advance the search on the host.
cudaError_t findThreshold(const float *acc, int64_t count, int64_t k,
                          const SearchBuffers &buffers, cudaStream_t stream,
                          uint32_t &threshold);

/// Runs TopkSearch (and TieSearch where the cut splits ties) for exactly the
/// `k` (1..count) largest magnitudes of the `count` entries at `acc` with
/// device histograms and sets `cut` to the cut commrt::findTopkCut finds.
/// Synchronises `stream` after every pass.
cudaError_t findTopkCut(const float *acc, int64_t count, int64_t k,
                        const SearchBuffers &buffers, cudaStream_t stream,
                        Cut &cut);

/// Enqueues `target[indices[j]] += values[j]` for the `pairs` pairs, whose
/// indices must be distinct (one rank's pairs), and sets `marks[i]` to 1 at
/// those indices unless `marks` is null. Pairs of several ranks are added
/// one rank after another, as the host adds them.
cudaError_t scatterAdd(float *target, const int64_t *indices,
                       const float *values, int64_t pairs, unsigned char *marks,
                       cudaStream_t stream);

/// Enqueues `data[indices[j]] = 0` for the `pairs` indices.
cudaError_t zeroAt(float *data, const int64_t *indices, int64_t pairs,
                   cudaStream_t stream);

/// Enqueues the zeroing of `count` floats at `data`.
cudaError_t fillZero(float *data, int64_t count, cudaStream_t stream);

/// Enqueues `data[i] /= divisor` (an IEEE division, as the host's) for the
/// `count` entries.
cudaError_t divide(float *data, int64_t count, float divisor,
                   cudaStream_t stream);

/// Enqueues the squared norm, in double, of every chunk of `chunkElements`
/// consecutive entries of the `count` at `acc` (the last possibly shorter)
/// into `norms`: one block per chunk (blocks take several beyond 65536).
cudaError_t chunkNorms(const float *acc, int64_t count, int64_t chunkElements,
                       double *norms, cudaStream_t stream);

/// Enqueues the packing of the `picked` chunks `chunks` (ascending, device
/// memory) of `acc` into `packed`, `picked * chunkElements` floats: chunk
/// chunks[j] at offset j * chunkElements, zeros past the end of a short last
/// chunk, so that every rank packs the same number of floats.
cudaError_t packChunks(const float *acc, int64_t count, int64_t chunkElements,
                       const int64_t *chunks, int64_t picked, float *packed,
                       cudaStream_t stream);

/// Enqueues the inverse of packChunks into `grad`, and the zeroing of the
/// same entries of `residual`; the rest of both is left alone.
cudaError_t unpackChunks(const float *packed, int64_t count,
                         int64_t chunkElements, const int64_t *chunks,
                         int64_t picked, float *grad, float *residual,
                         cudaStream_t stream);

} // namespace commrt::cuda

#endif // COMMRT_CUDA_SPARSEKERNELS_H
