//===- StagedRing.h - Ring allreduce of device memory via host -*- C++ -*-===//
//
// The MPI backend's allreduce of device memory where MPI cannot read device
// pointers (an MPI that is not CUDA-aware, such as Debian's OpenMPI): the
// ring of RingAllreduce.h, with every piece staged through host memory.
// Copies between device and host memory and the reduction of a received
// piece run in order on a StagingQueue (a CUDA stream), asynchronously to
// the thread that drives MPI, so that the copy of piece i+1 to the host
// overlaps the transfer of piece i, and the copy of a received piece to the
// device and its reduction overlap the transfer of the next.
//
// The ring's logic is independent of CUDA: CudaStagingQueue runs it on a
// GPU, and the tests run it with a queue whose "device memory" is host
// memory and whose copies take time on a thread of their own, to check the
// order and the overlap of the pieces on CPUs.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_STAGEDRING_H
#define COMMRT_STAGEDRING_H

#include "commrt/commrt.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace commrt {

/// An in-order queue of asynchronous work on device memory: what is
/// enqueued runs in the order it was enqueued, after the caller returns.
class StagingQueue {
public:
  virtual ~StagingQueue() = default;

  /// Enqueues the copy of `bytes` bytes from device memory at `from` to host
  /// memory at `to`.
  virtual commrt_status copyToHost(void *to, const void *from,
                                   size_t bytes) = 0;

  /// Enqueues the copy of `bytes` bytes from host memory at `from` to device
  /// memory at `to`.
  virtual commrt_status copyToDevice(void *to, const void *from,
                                     size_t bytes) = 0;

  /// Enqueues `into[i] = combine(from[i], into[i])` for the `count` elements
  /// at `from` and `into` (device memory), combined as the host's ring
  /// combines them (ReduceElements.h).
  virtual commrt_status reduce(const void *from, void *into, int64_t count) = 0;

  /// One buffer of a batched conversion: `count` elements at `input`
  /// converted into `output`.
  struct Conversion {
    const void *input;
    void *output;
    int64_t count;
  };

  /// Enqueues, for each of `conversions` (device memory), `output[i] =
  /// round(widen(input[i]) * scale)` from elements of `from` to elements of
  /// `to`, as convert() in WireFormat.h computes it, bit for bit: how a
  /// plan's buffers are packed into the type they travel in, and unpacked.
  virtual commrt_status convert(const std::vector<Conversion> &conversions,
                                commrt_dtype from, commrt_dtype to,
                                double scale) = 0;

  /// Sets `marker` to a mark of the work enqueued so far: marks grow with
  /// every call.
  virtual commrt_status mark(int64_t &marker) = 0;

  /// Sets `done` to whether the work enqueued before `marker` has finished,
  /// without blocking.
  virtual commrt_status reached(int64_t marker, bool &done) = 0;

  /// Blocks until the work enqueued before `marker` has finished.
  virtual commrt_status waitFor(int64_t marker) = 0;

  /// Blocks until the work enqueued so far has finished.
  commrt_status finish() {
    int64_t marker;
    if (commrt_status status = mark(marker))
      return status;
    return waitFor(marker);
  }
};

/// What the staged ring did, for tests and traces: `kind` happened to piece
/// `piece` of ring step `step` (reduce-scatter steps first, then the
/// all-gather's).
enum class StagedEvent {
  /// Its copy to the host was enqueued.
  CopyOutEnqueued,
  /// Its copy to the host had finished, and its send was posted.
  SendPosted,
  /// Its receive completed.
  Received,
  /// Its copy to the device (and reduction) was enqueued.
  CopyInEnqueued,
};
using StagedObserver =
    std::function<void(StagedEvent kind, int step, int64_t piece)>;

/// Host staging for the staged ring, kept by the caller across calls
/// (pinned memory where the queue is a GPU's: StagingQueue copies from
/// pinned memory run asynchronously). `allocate(bytes)` returns host memory
/// of at least `bytes` bytes or null; `release` frees it.
class StagingBuffers {
public:
  StagingBuffers(std::function<void *(size_t)> allocate,
                 std::function<void(void *)> release)
      : allocate(std::move(allocate)), release(std::move(release)) {}
  ~StagingBuffers();
  StagingBuffers(const StagingBuffers &) = delete;
  StagingBuffers &operator=(const StagingBuffers &) = delete;

  /// Makes each of the `count` host buffers hold at least `bytes` bytes.
  commrt_status reserve(size_t count, size_t bytes);
  unsigned char *operator[](size_t index) const { return buffers[index]; }

private:
  std::function<void *(size_t)> allocate;
  std::function<void(void *)> release;
  std::vector<unsigned char *> buffers;
  size_t bytes = 0;
};

/// Ring allreduce in place of `count` elements of `type` (`width` bytes
/// each) at `data`, device memory, over `comm`: the segments and steps of
/// ringAllreduce (RingAllreduce.h), each step's segment moved in pieces of
/// at most `pieceBytes` bytes through the host memory of `staging` (a send
/// and two receive buffers of a segment each). Per piece: copied to the
/// host on `queue`, sent when the copy is done; received, then copied to
/// `scratch` (device memory of a segment, the caller's) and reduced into
/// the segment on `queue` in the reduce-scatter steps, copied into the
/// segment in the all-gather's. A segment is at most
/// shardElements(count, ranks) elements (RingAllreduce.h): what `scratch`
/// and each staging buffer hold. Every copy to the host of a step is
/// enqueued at its start, so that it runs while the earlier pieces travel.
/// Returns when `queue` has finished the last piece. `observer` (may be
/// empty) hears what happens to every piece. Collective over `comm`.
commrt_status stagedRingAllreduce(void *data, int64_t count, MPI_Datatype type,
                                  size_t width, StagingQueue &queue,
                                  void *scratch, StagingBuffers &staging,
                                  MPI_Comm comm, int64_t pieceBytes,
                                  const StagedObserver &observer = {});

} // namespace commrt

#endif // COMMRT_STAGEDRING_H
