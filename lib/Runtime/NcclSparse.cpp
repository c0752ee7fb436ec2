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

/// Names where a buffer is, for messages.
const char *placeName(bool onDevice) {
  return onDevice ? "device memory" : "host memory";
}

/// Runs `calls` between ncclGroupStart and ncclGroupEnd, ending the group
/// even when a call fails; returns the first failure.
commrt_status grouped(ncclComm_t comm,
                      const std::function<commrt_status()> &calls) {
  if (commrt_status status =
          checkNccl("ncclGroupStart", ncclGroupStart(), comm))
    return status;
  commrt_status status = calls();
  commrt_status ended = checkNccl("ncclGroupEnd", ncclGroupEnd(), comm);
  return status != COMMRT_SUCCESS ? status : ended;
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

commrt_status Scratch::reserve(size_t bytes, cudaStream_t stream) {
  bytes = std::max<size_t>(bytes, 256);
  if (bytes <= capacity)
    return COMMRT_SUCCESS;
  if (commrt_status status =
          checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)))
    return status;
  release();
  commrt_status status =
      pinned ? checkCuda("cudaMallocHost", cudaMallocHost(&data, bytes))
             : checkCuda("cudaMalloc", cudaMalloc(&data, bytes));
  if (status != COMMRT_SUCCESS) {
    data = nullptr;
    return status;
  }
  capacity = bytes;
  return COMMRT_SUCCESS;
}

void Scratch::release() {
  if (pinned)
    cudaFreeHost(data);
  else
    cudaFree(data);
  data = nullptr;
  capacity = 0;
}

commrt_status NcclSparse::agree(commrt_status local) {
  return agreeOnSuccess(bootstrap, local, COMMRT_ERROR_BACKEND,
                        "the sparse allreduce");
}

commrt_status NcclSparse::reserveTemp(size_t bytes) {
  tempBytes = bytes;
  return temp.reserve(bytes, stream);
}

commrt_status NcclSparse::place(const SparseArguments &args, bool &onDevice) {
  bool gradOnDevice = false, residualOnDevice = false;
  commrt_status status = checkCuda("cudaSetDevice", cudaSetDevice(device));
  if (status == COMMRT_SUCCESS)
    status = locateBuffer("grad", args.grad, device, gradOnDevice);
  if (status == COMMRT_SUCCESS)
    status = locateBuffer("residual", args.residual, device, residualOnDevice);
  if (status == COMMRT_SUCCESS && gradOnDevice != residualOnDevice)
    status =
        fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad is ", placeName(gradOnDevice),
             " but residual is ", placeName(residualOnDevice),
             ": under the NCCL backend both must be device (or "
             "managed) memory, reduced on the GPU, or both host "
             "memory, reduced on the host");
  // Every rank must take the same path, and learn of every failure.
  if (commrt_status agreed =
          agreeOnPlacement(bootstrap, status, gradOnDevice, "grad or residual"))
    return agreed;
  onDevice = gradOnDevice;
  return COMMRT_SUCCESS;
}

commrt_status NcclSparse::run(const SparseArguments &args) {
  bool onDevice = false;
  if (commrt_status status = place(args, onDevice))
    return status;
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
  const int64_t smallCounts = int64_t(size) * size + size + 2;
  commrt_status status =
      bins.reserve(RadixSearch::kMaxBins * sizeof(unsigned long long), stream);
  if (status == COMMRT_SUCCESS)
    status = pinnedBins.reserve(
        RadixSearch::kMaxBins * sizeof(unsigned long long), stream);
  if (status == COMMRT_SUCCESS)
    status = counts.reserve(smallCounts * sizeof(int64_t), stream);
  if (status == COMMRT_SUCCESS)
    status = pinnedCounts.reserve(smallCounts * sizeof(int64_t), stream);
  if (status == COMMRT_SUCCESS)
    status = checkCuda("accumulate", cuda::accumulate(args.residual, args.grad,
                                                      args.count, stream));
  // Failed or not, every rank goes on to the same agreements.
  status = args.select == COMMRT_SELECT_CHUNK ? chunksOnDevice(status, args)
                                              : pairsOnDevice(status, args);
  // No collective follows: a rank failing from here on fails alone.
  if (status == COMMRT_SUCCESS && args.reduce == COMMRT_AVG)
    status =
        checkCuda("divide", cuda::divide(args.grad, args.count,
                                         static_cast<float>(size), stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  return status;
}

commrt_status NcclSparse::selectLocal(const SparseArguments &args,
                                      int64_t &selected) {
  const float *acc = args.residual;
  const int64_t count = args.count;
  const int64_t k = selectionSize(args.density, count);
  const cuda::SearchBuffers search{bins.as<unsigned long long>(),
                                   pinnedBins.as<unsigned long long>()};
  Cut cut;
  if (args.select == COMMRT_SELECT_TOPK) {
    if (commrt_status status =
            checkCuda("findTopkCut",
                      cuda::findTopkCut(acc, count, k, search, stream, cut)))
      return status;
    selected = k;
  } else {
    uint32_t threshold;
    if (commrt_status status = checkCuda(
            "findThreshold",
            cuda::findThreshold(acc, count, k, search, stream, threshold)))
      return status;
    cut = Cut{threshold, count};
    // How many reach the threshold (more than k only through ties), to
    // size the pairs.
    const int64_t counterSlot = int64_t(size) * size + size + 1;
    auto *counter = counts.as<unsigned long long>() + counterSlot;
    auto *pinnedCounter = pinnedCounts.as<unsigned long long>() + counterSlot;
    if (commrt_status status =
            checkCuda("countSelected",
                      cuda::countSelected(acc, count, cut, counter, stream)))
      return status;
    if (commrt_status status =
            checkCuda("cudaMemcpyAsync",
                      cudaMemcpyAsync(pinnedCounter, counter, sizeof *counter,
                                      cudaMemcpyDeviceToHost, stream)))
      return status;
    if (commrt_status status =
            checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)))
      return status;
    selected = static_cast<int64_t>(*pinnedCounter);
  }

  if (commrt_status status =
          localIndices.reserve(selected * sizeof(int64_t), stream))
    return status;
  if (commrt_status status =
          localValues.reserve(selected * sizeof(float), stream))
    return status;
  size_t bytes = 0;
  if (commrt_status status =
          checkCuda("select", cuda::select(acc, count, cut, nullptr, nullptr,
                                           nullptr, nullptr, bytes, stream)))
    return status;
  if (commrt_status status = reserveTemp(bytes))
    return status;
  const int64_t selectedSlot = int64_t(size) * size + size;
  return checkCuda("select",
                   cuda::select(acc, count, cut, localIndices.as<int64_t>(),
                                localValues.as<float>(),
                                counts.as<int64_t>() + selectedSlot,
                                temp.as<void>(), tempBytes, stream));
}

commrt_status NcclSparse::allgatherPairs(commrt_status local,
                                         const int64_t *indices,
                                         const float *values,
                                         const int64_t *deviceCount,
                                         Gathered &gathered) {
  if (commrt_status agreed = agree(local))
    return agreed;
  // Every rank's number of pairs, in the first `size` slots of `counts`.
  int64_t *rankCounts = counts.as<int64_t>();
  int64_t *pinnedRankCounts = pinnedCounts.as<int64_t>();
  commrt_status status = checkNccl(
      "ncclAllGather",
      ncclAllGather(deviceCount, rankCounts, 1, ncclInt64, comm, stream), comm);
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedRankCounts, rankCounts,
                                       size * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  if (status == COMMRT_SUCCESS) {
    gathered.counts.assign(pinnedRankCounts, pinnedRankCounts + size);
    gathered.offsets = offsetsOf(gathered.counts, gathered.total);
    status = gatheredIndices.reserve(gathered.total * sizeof(int64_t), stream);
  }
  if (status == COMMRT_SUCCESS)
    status = gatheredValues.reserve(gathered.total * sizeof(float), stream);
  if (commrt_status agreed = agree(status))
    return agreed;

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
      if (commrt_status failed =
              checkNccl("ncclBroadcast",
                        ncclBroadcast(sendIndices, indicesAt, pairs, ncclInt64,
                                      root, comm, stream),
                        comm))
        return failed;
      if (commrt_status failed =
              checkNccl("ncclBroadcast",
                        ncclBroadcast(sendValues, valuesAt, pairs, ncclFloat32,
                                      root, comm, stream),
                        comm))
        return failed;
    }
    return COMMRT_SUCCESS;
  });
}

commrt_status NcclSparse::hashExchange(commrt_status local,
                                       const SparseArguments &args,
                                       int64_t selected, Gathered &gathered) {
  // Bucket the pairs by owner on the host, through pinned memory laid out
  // as [indices in, indices out, values in, values out].
  commrt_status status = local;
  if (status == COMMRT_SUCCESS)
    status = pinnedPairs.reserve(
        2 * selected * (sizeof(int64_t) + sizeof(float)), stream);
  int64_t *stagedIndices = nullptr, *bucketedIndices = nullptr;
  float *stagedValues = nullptr, *bucketedValues = nullptr;
  if (status == COMMRT_SUCCESS) {
    stagedIndices = pinnedPairs.as<int64_t>();
    bucketedIndices = stagedIndices + selected;
    stagedValues = reinterpret_cast<float *>(bucketedIndices + selected);
    bucketedValues = stagedValues + selected;
  }
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(stagedIndices, localIndices.as<void>(),
                                       selected * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(stagedValues, localValues.as<void>(),
                                       selected * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  std::vector<int64_t> sendCounts;
  if (status == COMMRT_SUCCESS) {
    sendCounts = bucketByOwner(stagedIndices, stagedValues, selected, size,
                               bucketedIndices, bucketedValues);
    status = sendIndices.reserve(selected * sizeof(int64_t), stream);
  }
  if (status == COMMRT_SUCCESS)
    status = sendValues.reserve(selected * sizeof(float), stream);
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(sendIndices.as<void>(), bucketedIndices,
                                       selected * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(sendValues.as<void>(), bucketedValues,
                                       selected * sizeof(float),
                                       cudaMemcpyHostToDevice, stream));
  // Every rank's send counts: a size x size matrix, row by sender, after
  // which this rank's own row is staged.
  int64_t *matrix = counts.as<int64_t>();
  int64_t *pinnedMatrix = pinnedCounts.as<int64_t>();
  const int64_t matrixEntries = int64_t(size) * size;
  const int64_t ownRow = matrixEntries;
  if (status == COMMRT_SUCCESS) {
    std::copy(sendCounts.begin(), sendCounts.end(), pinnedMatrix + ownRow);
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(matrix + ownRow, pinnedMatrix + ownRow,
                                       size * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, stream));
  }
  if (commrt_status agreed = agree(status))
    return agreed;

  status = checkNccl(
      "ncclAllGather",
      ncclAllGather(matrix + ownRow, matrix, size, ncclInt64, comm, stream),
      comm);
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedMatrix, matrix,
                                       matrixEntries * sizeof(int64_t),
                                       cudaMemcpyDeviceToHost, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  std::vector<int64_t> receiveCounts(size), sendOffsets, receiveOffsets;
  int64_t sent = 0, received = 0;
  if (status == COMMRT_SUCCESS) {
    for (int sender = 0; sender < size; ++sender)
      receiveCounts[sender] = pinnedMatrix[int64_t(sender) * size + rank];
    sendOffsets = offsetsOf(sendCounts, sent);
    receiveOffsets = offsetsOf(receiveCounts, received);
    status = receivedIndices.reserve(received * sizeof(int64_t), stream);
  }
  if (status == COMMRT_SUCCESS)
    status = receivedValues.reserve(received * sizeof(float), stream);
  if (status == COMMRT_SUCCESS)
    status = marks.reserve(args.count, stream);
  auto *receivedIndicesAt = receivedIndices.as<int64_t>();
  auto *receivedValuesAt = receivedValues.as<float>();
  // This rank's own bucket is copied, not sent.
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("cudaMemcpyAsync",
                  cudaMemcpyAsync(receivedIndicesAt + receiveOffsets[rank],
                                  sendIndices.as<int64_t>() + sendOffsets[rank],
                                  sendCounts[rank] * sizeof(int64_t),
                                  cudaMemcpyDeviceToDevice, stream));
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("cudaMemcpyAsync",
                  cudaMemcpyAsync(receivedValuesAt + receiveOffsets[rank],
                                  sendValues.as<float>() + sendOffsets[rank],
                                  sendCounts[rank] * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
  if (commrt_status agreed = agree(status))
    return agreed;

  status = grouped(comm, [&] {
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank)
        continue;
      if (sendCounts[peer] != 0) {
        if (commrt_status failed = checkNccl(
                "ncclSend",
                ncclSend(sendIndices.as<int64_t>() + sendOffsets[peer],
                         sendCounts[peer], ncclInt64, peer, comm, stream),
                comm))
          return failed;
        if (commrt_status failed = checkNccl(
                "ncclSend",
                ncclSend(sendValues.as<float>() + sendOffsets[peer],
                         sendCounts[peer], ncclFloat32, peer, comm, stream),
                comm))
          return failed;
      }
      if (receiveCounts[peer] != 0) {
        if (commrt_status failed = checkNccl(
                "ncclRecv",
                ncclRecv(receivedIndicesAt + receiveOffsets[peer],
                         receiveCounts[peer], ncclInt64, peer, comm, stream),
                comm))
          return failed;
        if (commrt_status failed = checkNccl(
                "ncclRecv",
                ncclRecv(receivedValuesAt + receiveOffsets[peer],
                         receiveCounts[peer], ncclFloat32, peer, comm, stream),
                comm))
          return failed;
      }
    }
    return COMMRT_SUCCESS;
  });

  // The owner's sums, in rank order of the senders as the host adds them,
  // into grad (no longer needed: acc is in the residual), marking the
  // indices seen, since a sum may be zero.
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("fillZero", cuda::fillZero(args.grad, args.count, stream));
  if (status == COMMRT_SUCCESS)
    status = checkCuda("cudaMemsetAsync", cudaMemsetAsync(marks.as<void>(), 0,
                                                          args.count, stream));
  for (int sender = 0; sender < size && status == COMMRT_SUCCESS; ++sender)
    status = checkCuda(
        "scatterAdd",
        cuda::scatterAdd(args.grad, receivedIndicesAt + receiveOffsets[sender],
                         receivedValuesAt + receiveOffsets[sender],
                         receiveCounts[sender], marks.as<unsigned char>(),
                         stream));
  // The indices seen and their sums, into the receive buffers (read by
  // the additions above, which precede on the stream).
  const int64_t selectedSlot = int64_t(size) * size + size;
  size_t bytes = 0;
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("selectMarked",
                  cuda::selectMarked(nullptr, args.count, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, bytes, stream));
  if (status == COMMRT_SUCCESS)
    status = reserveTemp(bytes);
  if (status == COMMRT_SUCCESS)
    status = checkCuda("selectMarked",
                       cuda::selectMarked(marks.as<unsigned char>(), args.count,
                                          args.grad, receivedIndicesAt,
                                          receivedValuesAt,
                                          counts.as<int64_t>() + selectedSlot,
                                          temp.as<void>(), tempBytes, stream));
  return allgatherPairs(status, receivedIndicesAt, receivedValuesAt,
                        counts.as<int64_t>() + selectedSlot, gathered);
}

commrt_status NcclSparse::pairsOnDevice(commrt_status local,
                                        const SparseArguments &args) {
  int64_t selected = 0;
  commrt_status status = local;
  if (status == COMMRT_SUCCESS)
    status = selectLocal(args, selected);
  Gathered gathered;
  const int64_t selectedSlot = int64_t(size) * size + size;
  if (args.exchange == COMMRT_EXCHANGE_HASH)
    status = hashExchange(status, args, selected, gathered);
  else
    status = allgatherPairs(status, localIndices.as<int64_t>(),
                            localValues.as<float>(),
                            counts.as<int64_t>() + selectedSlot, gathered);
  if (status != COMMRT_SUCCESS)
    return status;
  // The selection's own count against the one the pairs were sized by.
  if (args.exchange == COMMRT_EXCHANGE_ALLGATHER &&
      gathered.counts[rank] != selected)
    return fail(COMMRT_ERROR_BACKEND, "the device selected ",
                gathered.counts[rank], " entries where ", selected,
                " were counted");

  if (commrt_status failed =
          checkCuda("fillZero", cuda::fillZero(args.grad, args.count, stream)))
    return failed;
  // Rank after rank, as the host adds them. The hash exchange's owners
  // gathered each index once, so their pairs could go in one launch; rank
  // order costs nothing there.
  for (int root = 0; root < size; ++root)
    if (commrt_status failed =
            checkCuda("scatterAdd",
                      cuda::scatterAdd(
                          args.grad, gathered.indices + gathered.offsets[root],
                          gathered.values + gathered.offsets[root],
                          gathered.counts[root], nullptr, stream)))
      return failed;
  return checkCuda("zeroAt",
                   cuda::zeroAt(args.residual, localIndices.as<int64_t>(),
                                selected, stream));
}

commrt_status NcclSparse::chunksOnDevice(commrt_status local,
                                         const SparseArguments &args) {
  // Chunks longer than the gradient cut it as one chunk of all of it, as
  // on the host: packing them pads no more than one chunk.
  const int64_t count = args.count;
  const int64_t chunk = std::min(args.chunkElements, count);
  const int64_t chunks = (count - 1) / chunk + 1;
  const int64_t picked = selectionSize(args.density, chunks);
  const int64_t packedCount = picked * chunk;
  commrt_status status = local;
  if (status == COMMRT_SUCCESS)
    status = norms.reserve(chunks * sizeof(double), stream);
  if (status == COMMRT_SUCCESS)
    status = chunkIds.reserve(picked * sizeof(int64_t), stream);
  if (status == COMMRT_SUCCESS)
    status = packed.reserve(packedCount * sizeof(float), stream);
  if (status == COMMRT_SUCCESS && rank == 0)
    status = pinnedNorms.reserve(
        chunks * sizeof(double) + picked * sizeof(int64_t), stream);
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("chunkNorms", cuda::chunkNorms(args.residual, count, chunk,
                                                 norms.as<double>(), stream));
  if (commrt_status agreed = agree(status))
    return agreed;

  // Rank 0 decides, so that rounding differences cannot split the ranks.
  status = checkNccl("ncclReduce",
                     ncclReduce(norms.as<double>(), norms.as<double>(), chunks,
                                ncclFloat64, ncclSum, 0, comm, stream),
                     comm);
  if (status == COMMRT_SUCCESS && rank == 0) {
    auto *pinnedSums = pinnedNorms.as<double>();
    auto *pinnedIds = reinterpret_cast<int64_t *>(pinnedSums + chunks);
    status = checkCuda("cudaMemcpyAsync",
                       cudaMemcpyAsync(pinnedSums, norms.as<double>(),
                                       chunks * sizeof(double),
                                       cudaMemcpyDeviceToHost, stream));
    if (status == COMMRT_SUCCESS)
      status =
          checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
    if (status == COMMRT_SUCCESS) {
      std::vector<int64_t> chosen = pickChunks(
          std::vector<double>(pinnedSums, pinnedSums + chunks), picked);
      std::copy(chosen.begin(), chosen.end(), pinnedIds);
      status = checkCuda("cudaMemcpyAsync",
                         cudaMemcpyAsync(chunkIds.as<void>(), pinnedIds,
                                         picked * sizeof(int64_t),
                                         cudaMemcpyHostToDevice, stream));
    }
  }
  if (commrt_status agreed = agree(status))
    return agreed;

  status =
      checkNccl("ncclBroadcast",
                ncclBroadcast(chunkIds.as<int64_t>(), chunkIds.as<int64_t>(),
                              picked, ncclInt64, 0, comm, stream),
                comm);
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("packChunks", cuda::packChunks(args.residual, count, chunk,
                                                 chunkIds.as<int64_t>(), picked,
                                                 packed.as<float>(), stream));
  if (commrt_status agreed = agree(status))
    return agreed;

  // Every rank packs picked * chunk floats, zeros past the end of a short
  // last chunk, so that no rank needs the chosen ids on the host.
  if (commrt_status failed = checkNccl(
          "ncclAllReduce",
          ncclAllReduce(packed.as<float>(), packed.as<float>(), packedCount,
                        ncclFloat32, ncclSum, comm, stream),
          comm))
    return failed;
  if (commrt_status failed =
          checkCuda("fillZero", cuda::fillZero(args.grad, count, stream)))
    return failed;
  return checkCuda("unpackChunks",
                   cuda::unpackChunks(packed.as<float>(), count, chunk,
                                      chunkIds.as<int64_t>(), picked, args.grad,
                                      args.residual, stream));
}
