//===- NcclSparse.cpp - Sparse allreduce on the GPU over NCCL -------------===//
//
// commrt_sparse_allreduce of device buffers under the NCCL backend, on its
// main stream, computing what Sparse.cpp computes on the host:
//
//  1. acc = grad + residual, into residual (a kernel).
//  2. Selection. Threshold: RadixSearch with device histograms (one kernel
//     and one copy of the bins to pinned memory per pass, the bookkeeping on
//     the host between passes), then a count of what reaches the threshold
//     and CUB's order-preserving compaction. Top-k: TopkSearch the same way
//     to the exact k-th largest key, TieSearch where only some of the ties
//     with it are taken, then the same compaction. Chunk: squared norms per
//     chunk in double.
//  3. Exchange. Allgather: ncclAllGather of the pair counts, then an
//     allgatherv as one group of ncclBroadcast per rank; every rank adds the
//     pairs into zeroed grad one rank after another. Hash: the pairs are
//     bucketed by owner on the host (they are ~density of the gradient, and
//     the host must learn the bucket sizes for NCCL anyway; sharing
//     bucketByOwner with Sparse.cpp keeps the two paths alike), exchanged
//     with grouped ncclSend/ncclRecv, added up by their owners in rank order
//     into zeroed grad (used as the dense scratch) while marking the indices
//     seen, compacted, allgathered and added into zeroed grad. Chunk:
//     ncclReduce of the norms to rank 0, which picks the chunks on the host
//     (pickChunks, as Sparse.cpp), ncclBroadcast of their ids, one
//     ncclAllReduce of the packed chunks, unpacked into zeroed grad.
//  4. The residual is zeroed where this rank sent; AVG divides grad.
//
// Every addition happens in the host's order, so grad and residual are
// bit for bit the host's on one rank, and the allgather and hash results on
// any number of ranks; the chunk exchange's allreduce adds in NCCL's order.
// Before every collective the ranks agree over the bootstrap communicator
// on whether the work so far succeeded, so that a rank that failed (an
// allocation, a launch, a kernel) makes every rank fail instead of leaving
// them waiting in NCCL. A failure inside NCCL itself is not recoverable
// here, as for the allreduce plans.
//
//===----------------------------------------------------------------------===//

#include "NcclSparse.h"
#include "Selection.h"
#include "cuda/SparseKernels.h"

#include <algorithm>
#include <functional>

using namespace commrt;

namespace {

/// Enqueues `transfer`, the point-to-point call `call` (ncclSend or
/// ncclRecv), of the `pairs` pairs at `indices` and `values` with `peer`.
template <typename Transfer>
commrt_status transferPairs(const char *call, Transfer transfer,
                            int64_t *indices, float *values, int64_t pairs,
                            int peer, ncclComm_t comm, cudaStream_t stream) {
  COMMRT_TRY(checkNccl(
      call, transfer(indices, pairs, ncclInt64, peer, comm, stream), comm));
  return checkNccl(
      call, transfer(values, pairs, ncclFloat32, peer, comm, stream), comm);
}

/// The exclusive prefix sums of `counts`, and their total in `total`.
std::vector<int64_t> offsetsOf(const std::vector<int64_t> &counts,
                               int64_t &total) {
  std::vector<int64_t> offsets(counts.size());
  total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    offsets[i] = total;
    total += counts[i];
  }
  return offsets;
}

} // namespace

commrt_status NcclSparse::agree(commrt_status local) {
  return agreeOnSuccess(bootstrap, local, COMMRT_ERROR_BACKEND,
                        "the sparse allreduce");
}

commrt_status NcclSparse::reserveTemp(size_t bytes) {
  tempBytes = bytes;
  return temp.reserve(bytes, stream);
}

commrt_status NcclSparse::place(const SparseArguments &args, bool &onDevice) {
  bool gradOnDevice = false;
  commrt_status status = locate(args, gradOnDevice);
  // Every rank must take the same path, and learn of every failure.
  COMMRT_TRY(
      agreeOnPlacement(bootstrap, status, gradOnDevice, "grad or residual"));
  onDevice = gradOnDevice;
  return COMMRT_SUCCESS;
}

commrt_status NcclSparse::locate(const SparseArguments &args,
                                 bool &gradOnDevice) {
  bool residualOnDevice = false;
  COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
  COMMRT_TRY(locateBuffer("grad", args.grad, device, gradOnDevice));
  // The lossless rows exchange has no residual.
  if (args.select == COMMRT_SELECT_ROWS)
    return COMMRT_SUCCESS;
  COMMRT_TRY(locateBuffer("residual", args.residual, device, residualOnDevice));
  if (gradOnDevice != residualOnDevice)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad is ",
                placeName(gradOnDevice), " but residual is ",
                placeName(residualOnDevice),
                ": under the NCCL backend both must be device (or "
                "managed) memory, reduced on the GPU, or both host "
                "memory, reduced on the host");
  return COMMRT_SUCCESS;
}

commrt_status NcclSparse::run(const SparseArguments &args) {
  bool onDevice = false;
  COMMRT_TRY(place(args, onDevice));
  // NCCL reaches device memory only: host buffers are reduced on the host,
  // over the communicator NCCL was bootstrapped over.
  if (!onDevice)
    return sparseAllreduce(args, bootstrap);
  return runOnDevice(args);
}

commrt_status NcclSparse::runOnDevice(const SparseArguments &args) {
  // An error of an earlier failed CUDA call would otherwise be reported by
  // the kernel launches below, which read the last error.
  (void)cudaGetLastError();
  if (args.select == COMMRT_SELECT_ROWS)
    return rowsOnDevice(args);
  commrt_status local = accumulate(args);
  // Failed or not, every rank goes on to the same agreements.
  COMMRT_TRY(args.select == COMMRT_SELECT_CHUNK ? chunksOnDevice(local, args)
                                                : pairsOnDevice(local, args));
  // No collective follows: a rank failing from here on fails alone.
  if (args.reduce == COMMRT_AVG)
    COMMRT_TRY(
        checkCuda("divide", cuda::divide(args.grad, args.count,
                                         static_cast<float>(size), stream)));
  return checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
}

commrt_status NcclSparse::rowsOnDevice(const SparseArguments &args) {
  // The result the rows exchange gives, from a dense allreduce: the rows
  // exchange itself is built on the host only so far.
  COMMRT_TRY(checkNccl("ncclAllReduce",
                       ncclAllReduce(args.grad, args.grad, args.count,
                                     ncclFloat32, ncclSum, comm, stream),
                       comm));
  if (args.reduce == COMMRT_AVG)
    COMMRT_TRY(
        checkCuda("divide", cuda::divide(args.grad, args.count,
                                         static_cast<float>(size), stream)));
  return checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
}

commrt_status NcclSparse::accumulate(const SparseArguments &args) {
  COMMRT_TRY(
      bins.reserve(RadixSearch::kMaxBins * sizeof(unsigned long long), stream));
  COMMRT_TRY(counts.reserve((selectedSlot() + 2) * sizeof(int64_t), stream));
  return checkCuda("accumulate", cuda::accumulate(args.residual, args.grad,
                                                  args.count, stream));
}

commrt_status NcclSparse::selectLocal(const SparseArguments &args,
                                      int64_t &selected) {
  const float *acc = args.residual;
  const int64_t count = args.count;
  const int64_t k = selectionSize(args.density, count);
  const cuda::SearchBuffers search{bins.device.as<unsigned long long>(),
                                   bins.pinned.as<unsigned long long>()};
  Cut cut;
  if (args.select == COMMRT_SELECT_TOPK) {
    COMMRT_TRY(checkCuda(
        "findTopkCut", cuda::findTopkCut(acc, count, k, search, stream, cut)));
    selected = k;
  } else {
    uint32_t threshold;
    COMMRT_TRY(
        checkCuda("findThreshold", cuda::findThreshold(acc, count, k, search,
                                                       stream, threshold)));
    cut = Cut{threshold, count};
    COMMRT_TRY(countSelected(acc, count, cut, selected));
  }

  COMMRT_TRY(localIndices.reserve(selected * sizeof(int64_t), stream));
  COMMRT_TRY(localValues.reserve(selected * sizeof(float), stream));
  size_t bytes = 0;
  COMMRT_TRY(
      checkCuda("select", cuda::select(acc, count, cut, nullptr, nullptr,
                                       nullptr, nullptr, bytes, stream)));
  COMMRT_TRY(reserveTemp(bytes));
  return checkCuda("select",
                   cuda::select(acc, count, cut, localIndices.as<int64_t>(),
                                localValues.as<float>(), selectedCount(),
                                temp.as<void>(), tempBytes, stream));
}

commrt_status NcclSparse::countSelected(const float *acc, int64_t count,
                                        Cut cut, int64_t &selected) {
  auto *counter = counts.device.as<unsigned long long>() + counterSlot();
  auto *pinnedCounter = counts.pinned.as<unsigned long long>() + counterSlot();
  COMMRT_TRY(checkCuda("countSelected",
                       cuda::countSelected(acc, count, cut, counter, stream)));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedCounter, counter, sizeof *counter,
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  selected = static_cast<int64_t>(*pinnedCounter);
  return COMMRT_SUCCESS;
}

commrt_status NcclSparse::allgatherPairs(commrt_status local,
                                         const int64_t *indices,
                                         const float *values,
                                         const int64_t *deviceCount,
                                         Gathered &gathered) {
  COMMRT_TRY(agree(local));
  COMMRT_TRY(agree(gatherPairCounts(deviceCount, gathered)));
  gathered.indices = gatheredIndices.as<int64_t>();
  gathered.values = gatheredValues.as<float>();
  // An allgatherv: each rank broadcasts its pairs into their place. The
  // root reads `indices` and `values`; the others' send buffers are unused.
  return grouped(comm, [&] {
    for (int root = 0; root < size; ++root) {
      const int64_t pairs = gathered.counts[root];
      if (pairs == 0)
        continue;
      int64_t *indicesAt = gathered.indices + gathered.offsets[root];
      float *valuesAt = gathered.values + gathered.offsets[root];
      const int64_t *sendIndices = root == rank ? indices : indicesAt;
      const float *sendValues = root == rank ? values : valuesAt;
      COMMRT_TRY(checkNccl("ncclBroadcast",
                           ncclBroadcast(sendIndices, indicesAt, pairs,
                                         ncclInt64, root, comm, stream),
                           comm));
      COMMRT_TRY(checkNccl("ncclBroadcast",
                           ncclBroadcast(sendValues, valuesAt, pairs,
                                         ncclFloat32, root, comm, stream),
                           comm));
    }
    return COMMRT_SUCCESS;
  });
}

commrt_status NcclSparse::gatherPairCounts(const int64_t *deviceCount,
                                           Gathered &gathered) {
  // Every rank's number of pairs, in the first `size` slots of `counts`.
  int64_t *rankCounts = counts.device.as<int64_t>();
  int64_t *pinnedRankCounts = counts.pinned.as<int64_t>();
  COMMRT_TRY(checkNccl(
      "ncclAllGather",
      ncclAllGather(deviceCount, rankCounts, 1, ncclInt64, comm, stream),
      comm));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedRankCounts, rankCounts,
                                       size * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  gathered.counts.assign(pinnedRankCounts, pinnedRankCounts + size);
  gathered.offsets = offsetsOf(gathered.counts, gathered.total);
  COMMRT_TRY(gatheredIndices.reserve(gathered.total * sizeof(int64_t), stream));
  return gatheredValues.reserve(gathered.total * sizeof(float), stream);
}

commrt_status NcclSparse::hashExchange(commrt_status local,
                                       const SparseArguments &args,
                                       int64_t selected, Gathered &gathered) {
  Buckets buckets;
  if (local == COMMRT_SUCCESS)
    local = bucketPairs(selected, buckets);
  COMMRT_TRY(agree(local));
  COMMRT_TRY(agree(exchangeBucketSizes(args, buckets)));
  commrt_status status = sumOwnedPairs(args, buckets);
  return allgatherPairs(status, receivedIndices.as<int64_t>(),
                        receivedValues.as<float>(), selectedCount(), gathered);
}

commrt_status NcclSparse::bucketPairs(int64_t selected, Buckets &buckets) {
  // Bucket the pairs by owner on the host, through pinned memory laid out
  // as [indices in, indices out, values in, values out].
  COMMRT_TRY(pinnedPairs.reserve(
      2 * selected * (sizeof(int64_t) + sizeof(float)), stream));
  int64_t *stagedIndices = pinnedPairs.as<int64_t>();
  int64_t *bucketedIndices = stagedIndices + selected;
  auto *stagedValues = reinterpret_cast<float *>(bucketedIndices + selected);
  float *bucketedValues = stagedValues + selected;
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(stagedIndices, localIndices.as<void>(),
                                       selected * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(stagedValues, localValues.as<void>(),
                                       selected * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  buckets.sendCounts = bucketByOwner(stagedIndices, stagedValues, selected, 1,
                                     size, bucketedIndices, bucketedValues);
  COMMRT_TRY(sendIndices.reserve(selected * sizeof(int64_t), stream));
  COMMRT_TRY(sendValues.reserve(selected * sizeof(float), stream));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(sendIndices.as<void>(), bucketedIndices,
                                       selected * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, stream)));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(sendValues.as<void>(), bucketedValues,
                                       selected * sizeof(float),
                                       cudaMemcpyHostToDevice, stream)));
  // This rank's send counts, staged after the matrix of every rank's
  // (see exchangeBucketSizes).
  const int64_t ownRow = int64_t(size) * size;
  int64_t *pinnedRow = counts.pinned.as<int64_t>() + ownRow;
  std::copy(buckets.sendCounts.begin(), buckets.sendCounts.end(), pinnedRow);
  return checkCuda("cudaMemcpyAsync",
                   cudaMemcpyAsync(counts.device.as<int64_t>() + ownRow,
                                   pinnedRow, size * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, stream));
}

commrt_status NcclSparse::exchangeBucketSizes(const SparseArguments &args,
                                              Buckets &buckets) {
  // Every rank's send counts: a size x size matrix, row by sender, after
  // which this rank's own row is staged.
  int64_t *matrix = counts.device.as<int64_t>();
  int64_t *pinnedMatrix = counts.pinned.as<int64_t>();
  const int64_t matrixEntries = int64_t(size) * size;
  const int64_t ownRow = matrixEntries;
  COMMRT_TRY(checkNccl(
      "ncclAllGather",
      ncclAllGather(matrix + ownRow, matrix, size, ncclInt64, comm, stream),
      comm));
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedMatrix, matrix,
                                       matrixEntries * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  buckets.receiveCounts.resize(size);
  for (int sender = 0; sender < size; ++sender)
    buckets.receiveCounts[sender] = pinnedMatrix[int64_t(sender) * size + rank];
  int64_t sent = 0, received = 0;
  buckets.sendOffsets = offsetsOf(buckets.sendCounts, sent);
  buckets.receiveOffsets = offsetsOf(buckets.receiveCounts, received);
  COMMRT_TRY(receivedIndices.reserve(received * sizeof(int64_t), stream));
  COMMRT_TRY(receivedValues.reserve(received * sizeof(float), stream));
  COMMRT_TRY(marks.reserve(args.count, stream));
  // This rank's own bucket is copied, not sent.
  const int64_t own = buckets.sendCounts[rank];
  COMMRT_TRY(checkCuda(
      "cudaMemcpyAsync",
      cudaMemcpyAsync(
          receivedIndices.as<int64_t>() + buckets.receiveOffsets[rank],
          sendIndices.as<int64_t>() + buckets.sendOffsets[rank],
          own * sizeof(int64_t), cudaMemcpyDeviceToDevice, stream)));
  return checkCuda(
      "cudaMemcpyAsync",
      cudaMemcpyAsync(receivedValues.as<float>() + buckets.receiveOffsets[rank],
                      sendValues.as<float>() + buckets.sendOffsets[rank],
                      own * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

commrt_status NcclSparse::sendBuckets(const Buckets &buckets) {
  return grouped(comm, [&] {
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank)
        continue;
      const int64_t sendAt = buckets.sendOffsets[peer];
      if (buckets.sendCounts[peer] != 0)
        COMMRT_TRY(transferPairs("ncclSend", ncclSend,
                                 sendIndices.as<int64_t>() + sendAt,
                                 sendValues.as<float>() + sendAt,
                                 buckets.sendCounts[peer], peer, comm, stream));
      const int64_t receiveAt = buckets.receiveOffsets[peer];
      if (buckets.receiveCounts[peer] != 0)
        COMMRT_TRY(transferPairs(
            "ncclRecv", ncclRecv, receivedIndices.as<int64_t>() + receiveAt,
            receivedValues.as<float>() + receiveAt, buckets.receiveCounts[peer],
            peer, comm, stream));
    }
    return COMMRT_SUCCESS;
  });
}

commrt_status NcclSparse::sumOwnedPairs(const SparseArguments &args,
                                        const Buckets &buckets) {
  COMMRT_TRY(sendBuckets(buckets));
  // The owner's sums, in rank order of the senders as the host adds them,
  // into grad (no longer needed: acc is in the residual), marking the
  // indices seen, since a sum may be zero.
  COMMRT_TRY(
      checkCuda("fillZero", cuda::fillZero(args.grad, args.count, stream)));
  COMMRT_TRY(checkCuda("cudaMemsetAsync", cudaMemsetAsync(marks.as<void>(), 0,
                                                          args.count, stream)));
  for (int sender = 0; sender < size; ++sender) {
    const int64_t at = buckets.receiveOffsets[sender];
    COMMRT_TRY(checkCuda("scatterAdd",
                         cuda::scatterAdd(args.grad,
                                          receivedIndices.as<int64_t>() + at,
                                          receivedValues.as<float>() + at,
                                          buckets.receiveCounts[sender],
                                          marks.as<unsigned char>(), stream)));
  }
  // The indices seen and their sums, into the receive buffers (read by
  // the additions above, which precede on the stream).
  size_t bytes = 0;
  COMMRT_TRY(
      checkCuda("selectMarked",
                cuda::selectMarked(nullptr, args.count, nullptr, nullptr,
                                   nullptr, nullptr, nullptr, bytes, stream)));
  COMMRT_TRY(reserveTemp(bytes));
  return checkCuda("selectMarked",
                   cuda::selectMarked(marks.as<unsigned char>(), args.count,
                                      args.grad, receivedIndices.as<int64_t>(),
                                      receivedValues.as<float>(),
                                      selectedCount(), temp.as<void>(),
                                      tempBytes, stream));
}

commrt_status NcclSparse::pairsOnDevice(commrt_status local,
                                        const SparseArguments &args) {
  int64_t selected = 0;
  if (local == COMMRT_SUCCESS)
    local = selectLocal(args, selected);
  Gathered gathered;
  COMMRT_TRY(args.exchange == COMMRT_EXCHANGE_HASH
                 ? hashExchange(local, args, selected, gathered)
                 : allgatherPairs(local, localIndices.as<int64_t>(),
                                  localValues.as<float>(), selectedCount(),
                                  gathered));
  // The selection's own count against the one the pairs were sized by.
  if (args.exchange == COMMRT_EXCHANGE_ALLGATHER &&
      gathered.counts[rank] != selected)
    return fail(COMMRT_ERROR_BACKEND, "the device selected ",
                gathered.counts[rank], " entries where ", selected,
                " were counted");

  COMMRT_TRY(
      checkCuda("fillZero", cuda::fillZero(args.grad, args.count, stream)));
  // Rank after rank, as the host adds them. The hash exchange's owners
  // gathered each index once, so their pairs could go in one launch; rank
  // order costs nothing there.
  for (int root = 0; root < size; ++root)
    COMMRT_TRY(checkCuda(
        "scatterAdd",
        cuda::scatterAdd(args.grad, gathered.indices + gathered.offsets[root],
                         gathered.values + gathered.offsets[root],
                         gathered.counts[root], nullptr, stream)));
  return checkCuda("zeroAt",
                   cuda::zeroAt(args.residual, localIndices.as<int64_t>(),
                                selected, stream));
}

NcclSparse::Chunking NcclSparse::chunkingOf(const SparseArguments &args) {
  // Chunks longer than the gradient cut it as one chunk of all of it, as
  // on the host: packing them pads no more than one chunk.
  Chunking c;
  c.count = args.count;
  c.chunk = std::min(args.chunkElements, c.count);
  c.chunks = (c.count - 1) / c.chunk + 1;
  c.picked = selectionSize(args.density, c.chunks);
  c.packedCount = c.picked * c.chunk;
  return c;
}

commrt_status NcclSparse::chunksOnDevice(commrt_status local,
                                         const SparseArguments &args) {
  const Chunking c = chunkingOf(args);
  if (local == COMMRT_SUCCESS)
    local = computeChunkNorms(args, c);
  COMMRT_TRY(agree(local));
  COMMRT_TRY(agree(chooseChunks(c)));
  COMMRT_TRY(agree(shareAndPackChunks(args, c)));
  return reduceAndUnpackChunks(args, c);
}

commrt_status NcclSparse::computeChunkNorms(const SparseArguments &args,
                                            const Chunking &c) {
  COMMRT_TRY(norms.reserve(c.chunks * sizeof(double), stream));
  COMMRT_TRY(chunkIds.reserve(c.picked * sizeof(int64_t), stream));
  COMMRT_TRY(packed.reserve(c.packedCount * sizeof(float), stream));
  if (rank == 0)
    COMMRT_TRY(pinnedNorms.reserve(
        c.chunks * sizeof(double) + c.picked * sizeof(int64_t), stream));
  return checkCuda("chunkNorms",
                   cuda::chunkNorms(args.residual, c.count, c.chunk,
                                    norms.as<double>(), stream));
}

commrt_status NcclSparse::chooseChunks(const Chunking &c) {
  // Rank 0 decides, so that rounding differences cannot split the ranks.
  COMMRT_TRY(
      checkNccl("ncclReduce",
                ncclReduce(norms.as<double>(), norms.as<double>(), c.chunks,
                           ncclFloat64, ncclSum, 0, comm, stream),
                comm));
  if (rank != 0)
    return COMMRT_SUCCESS;
  auto *pinnedSums = pinnedNorms.as<double>();
  auto *pinnedIds = reinterpret_cast<int64_t *>(pinnedSums + c.chunks);
  COMMRT_TRY(checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedSums, norms.as<double>(),
                                       c.chunks * sizeof(double),
                                       cudaMemcpyDeviceToHost, stream)));
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  std::vector<int64_t> chosen = pickChunks(
      std::vector<double>(pinnedSums, pinnedSums + c.chunks), c.picked);
  std::copy(chosen.begin(), chosen.end(), pinnedIds);
  return checkCuda("cudaMemcpyAsync",
                   cudaMemcpyAsync(chunkIds.as<void>(), pinnedIds,
                                   c.picked * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, stream));
}

commrt_status NcclSparse::shareAndPackChunks(const SparseArguments &args,
                                             const Chunking &c) {
  COMMRT_TRY(
      checkNccl("ncclBroadcast",
                ncclBroadcast(chunkIds.as<int64_t>(), chunkIds.as<int64_t>(),
                              c.picked, ncclInt64, 0, comm, stream),
                comm));
  return checkCuda("packChunks",
                   cuda::packChunks(args.residual, c.count, c.chunk,
                                    chunkIds.as<int64_t>(), c.picked,
                                    packed.as<float>(), stream));
}

commrt_status NcclSparse::reduceAndUnpackChunks(const SparseArguments &args,
                                                const Chunking &c) {
  // Every rank packs picked * chunk floats, zeros past the end of a short
  // last chunk, so that no rank needs the chosen ids on the host.
  COMMRT_TRY(checkNccl("ncclAllReduce",
                       ncclAllReduce(packed.as<float>(), packed.as<float>(),
                                     c.packedCount, ncclFloat32, ncclSum, comm,
                                     stream),
                       comm));
  COMMRT_TRY(checkCuda("fillZero", cuda::fillZero(args.grad, c.count, stream)));
  return checkCuda("unpackChunks",
                   cuda::unpackChunks(packed.as<float>(), c.count, c.chunk,
                                      chunkIds.as<int64_t>(), c.picked,
                                      args.grad, args.residual, stream));
}
