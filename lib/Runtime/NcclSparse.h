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
#include "Selection.h"
#include "Sparse.h"

#include <cstdint>
#include <vector>

namespace commrt {

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

  /// The hash exchange's buckets: how many pairs this rank sends to each
  /// owner and receives from each rank, and where each rank's pairs start
  /// in the send and receive buffers.
  struct Buckets {
    std::vector<int64_t> sendCounts, sendOffsets;
    std::vector<int64_t> receiveCounts, receiveOffsets;
  };

  /// How the chunk exchange cuts the `count` entries: `chunks` chunks of
  /// `chunk` entries (the last possibly shorter), of which `picked` are
  /// chosen and packed into `packedCount` floats.
  struct Chunking {
    int64_t count, chunk, chunks, picked, packedCount;
  };

  /// Agrees with every rank on `local`, the status of the work so far: all
  /// fail when one did. Called before every NCCL collective.
  commrt_status agree(commrt_status local);

  /// Makes the backend's device current, checks where grad and residual
  /// are and agrees on both with every rank; sets `onDevice` to whether they
  /// are device memory.
  commrt_status place(const SparseArguments &args, bool &onDevice);

  /// This rank's part of place(): makes the backend's device current, sets
  /// `gradOnDevice` to whether grad is device memory and fails unless the
  /// residual is where grad is.
  commrt_status locate(const SparseArguments &args, bool &gradOnDevice);

  /// The device path, with acc = grad + residual in `args.residual`.
  commrt_status runOnDevice(const SparseArguments &args);
  /// The lossless rows exchange of device memory, reduced dense.
  commrt_status rowsOnDevice(const SparseArguments &args);

  /// Reserves the search and count buffers and enqueues acc = grad +
  /// residual into `args.residual`.
  commrt_status accumulate(const SparseArguments &args);

  /// Top-k or threshold selection and the allgather or hash exchange, after
  /// the work of status `local`: every rank reaches the same agreements.
  commrt_status pairsOnDevice(commrt_status local, const SparseArguments &args);

  /// Chunk selection and exchange, after the work of status `local`.
  commrt_status chunksOnDevice(commrt_status local,
                               const SparseArguments &args);

  /// Selects the entries of acc into the local pairs and sets `selected` to
  /// their number.
  commrt_status selectLocal(const SparseArguments &args, int64_t &selected);

  /// Sets `selected` to the number of the `count` entries of `acc` that
  /// `cut` selects, counted on the device.
  commrt_status countSelected(const float *acc, int64_t count, Cut cut,
                              int64_t &selected);

  /// After agreeing on `local`, gathers the pairs of every rank, `indices`
  /// and `values`, whose number is at `deviceCount` on the device, into
  /// `gathered`.
  commrt_status allgatherPairs(commrt_status local, const int64_t *indices,
                               const float *values, const int64_t *deviceCount,
                               Gathered &gathered);

  /// Gathers every rank's number of pairs, at `deviceCount` on each, into
  /// `gathered` and grows the gathered pairs' buffers to hold them all.
  commrt_status gatherPairCounts(const int64_t *deviceCount,
                                 Gathered &gathered);

  /// After agreeing on `local`, runs the hash exchange of the `selected`
  /// local pairs: their owners add them up in rank order (in `args.grad`)
  /// and the owners' sums are gathered into `gathered`.
  commrt_status hashExchange(commrt_status local, const SparseArguments &args,
                             int64_t selected, Gathered &gathered);

  /// Buckets the `selected` local pairs by owner into the send buffers,
  /// through the host, sets `buckets.sendCounts` and stages them for
  /// exchangeBucketSizes.
  commrt_status bucketPairs(int64_t selected, Buckets &buckets);

  /// Exchanges every rank's send counts, completes `buckets` with what this
  /// rank receives, grows the receive buffers and copies this rank's own
  /// bucket into them.
  commrt_status exchangeBucketSizes(const SparseArguments &args,
                                    Buckets &buckets);

  /// Sends each bucket to its owner and receives this rank's buckets.
  commrt_status sendBuckets(const Buckets &buckets);

  /// Exchanges the buckets and adds up the pairs this rank owns in rank
  /// order, into `args.grad`; compacts the sums into the receive buffers,
  /// their number at selectedCount().
  commrt_status sumOwnedPairs(const SparseArguments &args,
                              const Buckets &buckets);

  /// The chunking of the chunk exchange of `args`.
  static Chunking chunkingOf(const SparseArguments &args);

  /// Grows the chunk exchange's buffers and enqueues the squared norms of
  /// the chunks of acc.
  commrt_status computeChunkNorms(const SparseArguments &args,
                                  const Chunking &c);

  /// Sums the norms on rank 0, which picks the chunks to send.
  commrt_status chooseChunks(const Chunking &c);

  /// Broadcasts the chosen chunks' ids and packs their entries of acc.
  commrt_status shareAndPackChunks(const SparseArguments &args,
                                   const Chunking &c);

  /// Sums the packed chunks of every rank and unpacks them into grad,
  /// zeroing them in the residual.
  commrt_status reduceAndUnpackChunks(const SparseArguments &args,
                                      const Chunking &c);

  /// The temporary storage of a CUB call that needs `bytes`, grown to it.
  commrt_status reserveTemp(size_t bytes);

  /// Where in `counts` the number of selected pairs is (an int64), and the
  /// counter after it (an unsigned long long).
  int64_t selectedSlot() const { return int64_t(size) * size + size; }
  int64_t counterSlot() const { return selectedSlot() + 1; }

  /// The number of selected pairs, on the device.
  int64_t *selectedCount() {
    return counts.device.as<int64_t>() + selectedSlot();
  }

  MPI_Comm bootstrap;
  ncclComm_t comm;
  cudaStream_t stream;
  int rank;
  int size;
  int device;

  /// Histograms of the searches, on the device and read on the host.
  MirroredScratch bins;
  /// Small counts: [0, size * size) every rank's send counts (hash) or
  /// pair counts (allgather), then this rank's send counts; then two
  /// scalars, a selected count (int64) and a counter (unsigned long long).
  MirroredScratch counts;
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
