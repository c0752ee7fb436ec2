//===- NcclSparse.h - Sparse allreduce on the GPU over NCCL -----*- C++ -*-===//
//
// commrt_sparse_allreduce under the NCCL backend: device (or managed) grad
// and residual are reduced on the GPU, host ones on the host over the
// bootstrap communicator (see NcclSparse.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_NCCLSPARSE_H
#define COMMRT_NCCLSPARSE_H

#include "NcclSupport.h"
#include "Sparse.h"

#include <cstdint>
#include <vector>

namespace commrt {

/// Device or pinned host memory that grows on demand and is kept across
/// calls.
class Scratch {
public:
  /// Scratch of pinned host memory when `pinned`, device memory otherwise.
  explicit Scratch(bool pinned = false) : pinned(pinned) {}
  ~Scratch() { release(); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  /// Grows the memory to at least `bytes` (at least 256: never null), once
  /// the work queued on `stream` is done with the old memory. Its contents
  /// are then lost.
  commrt_status reserve(size_t bytes, cudaStream_t stream);

  /// The memory, as an array of `T`.
  template <typename T> T *as() const { return static_cast<T *>(data); }

private:
  /// Frees the memory.
  void release();

  bool pinned;
  void *data = nullptr;
  size_t capacity = 0;
};

/// Runs sparse allreduces for the NCCL backend on its main stream, keeping
/// their scratch memory across calls.
class NcclSparse {
public:
  /// Sparse allreduces on `stream` of device `device` over `comm` (rank
  /// `rank` of `size`), bootstrapped over `bootstrap`, which also agrees
  /// on failures and runs the host path.
  NcclSparse(MPI_Comm bootstrap, ncclComm_t comm, cudaStream_t stream, int rank,
             int size, int device)
      : bootstrap(bootstrap), comm(comm), stream(stream), rank(rank),
        size(size), device(device) {}

  /// Runs the sparse allreduce `args` to completion, collectively: on the
  /// GPU when grad and residual are device (or managed) memory, on the host
  /// when both are host memory.
  commrt_status run(const SparseArguments &args);

private:
  /// Pairs of every rank gathered on the device in rank order.
  struct Gathered {
    int64_t *indices = nullptr;
    float *values = nullptr;
    /// Each rank's number of pairs, and where they start.
    std::vector<int64_t> counts, offsets;
    int64_t total = 0;
  };

  /// Agrees with every rank on `local`, the status of the work so far: all
  /// fail when one did. Called before every NCCL collective.
  commrt_status agree(commrt_status local);

  /// Makes the backend's device current, checks where grad and residual
  /// are and agrees on both with every rank; sets `onDevice` to whether they
  /// are device memory.
  commrt_status place(const SparseArguments &args, bool &onDevice);

  /// The device path, with acc = grad + residual in `args.residual`.
  commrt_status runOnDevice(const SparseArguments &args);

  /// Top-k or threshold selection and the allgather or hash exchange, after
  /// the work of status `local`: every rank reaches the same agreements.
  commrt_status pairsOnDevice(commrt_status local, const SparseArguments &args);

  /// Chunk selection and exchange, after the work of status `local`.
  commrt_status chunksOnDevice(commrt_status local,
                               const SparseArguments &args);

  /// Selects the entries of acc into the local pairs and sets `selected` to
  /// their number.
  commrt_status selectLocal(const SparseArguments &args, int64_t &selected);

  /// After agreeing on `local`, gathers the pairs of every rank, `indices`
  /// and `values`, whose number is at `deviceCount` on the device, into
  /// `gathered`.
  commrt_status allgatherPairs(commrt_status local, const int64_t *indices,
                               const float *values, const int64_t *deviceCount,
                               Gathered &gathered);

  /// After agreeing on `local`, runs the hash exchange of the `selected`
  /// local pairs: their owners add them up in rank order (in `args.grad`)
  /// and the owners' sums are gathered into `gathered`.
  commrt_status hashExchange(commrt_status local, const SparseArguments &args,
                             int64_t selected, Gathered &gathered);

  /// The temporary storage of a CUB call that needs `bytes`, grown to it.
  commrt_status reserveTemp(size_t bytes);

  MPI_Comm bootstrap;
  ncclComm_t comm;
  cudaStream_t stream;
  int rank;
  int size;
  int device;

  /// Histograms of the searches, on the device and read on the host.
  Scratch bins, pinnedBins{true};
  /// Small counts: [0, size * size) every rank's send counts (hash) or
  /// pair counts (allgather), then this rank's send counts; then two
  /// scalars, a selected count (int64) and a counter (unsigned long long).
  Scratch counts, pinnedCounts{true};
  /// This rank's selected pairs.
  Scratch localIndices, localValues;
  /// Every rank's pairs.
  Scratch gatheredIndices, gatheredValues;
  /// The hash exchange: pairs sent (and staged on the host to be bucketed),
  /// pairs received, and marks of the indices received.
  Scratch sendIndices, sendValues, pinnedPairs{true};
  Scratch receivedIndices, receivedValues, marks;
  /// The chunk exchange: norms (also read on the host by rank 0), chosen
  /// chunks and their packed entries.
  Scratch norms, pinnedNorms{true}, chunkIds, packed;
  /// CUB's temporary storage.
  Scratch temp;
  size_t tempBytes = 0;
};

} // namespace commrt

#endif // COMMRT_NCCLSPARSE_H
