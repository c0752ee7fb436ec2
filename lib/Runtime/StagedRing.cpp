//===- StagedRing.cpp - Ring allreduce of device memory through host ------===//
//
// The segments and steps are RingAllreduce.cpp's: p near-equal segments,
// p - 1 reduce-scatter steps, then p - 1 all-gather steps, step s sending
// segment sent(s) to the right and receiving segment received(s) from the
// left, with sent(s + 1) == received(s). Each step moves its segment in
// pieces; a step starts once the previous one has received every piece and
// enqueued its copy to the device, and the queue's order then puts the
// copies of a step after the reductions of the step before.
//
// Host staging: one send buffer, and two receive buffers that alternate by
// step. An all-gather step after the first forwards what the step before
// received straight from its receive buffer: those values are on the host
// already, and copying them back from the device would add a copy per piece.
//
//===----------------------------------------------------------------------===//

#include "StagedRing.h"
#include "Backend.h"
#include "RingAllreduce.h"

#include <algorithm>
#include <chrono>
#include <thread>

using namespace commrt;

namespace {

/// The tag of the staged ring's messages; its communicator carries one
/// collective at a time, and messages of a step are sent and received in
/// piece order on every rank.
constexpr int kStagedRingTag = 0x7372;

/// Waits between two rounds of tests that found nothing to do: spins a few
/// rounds (a piece over shared memory or a fast link arrives within them),
/// then sleeps, doubling up to 100 us. MPI's TCP transport moves data on only
/// while the rank tests, as in MpiWait.cpp's waits of unknown size.
class Backoff {
public:
  void idle() {
    if (++rounds <= kSpinRounds) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleepUs));
    sleepUs = std::min<int64_t>(2 * sleepUs, kLongestSleepUs);
  }
  void progressed() {
    rounds = 0;
    sleepUs = kFirstSleepUs;
  }

private:
  static constexpr int kSpinRounds = 64;
  static constexpr int64_t kFirstSleepUs = 5;
  static constexpr int64_t kLongestSleepUs = 100;
  int rounds = 0;
  int64_t sleepUs = kFirstSleepUs;
};

class StagedRing {
public:
  StagedRing(unsigned char *data, int64_t count, MPI_Datatype type,
             size_t width, StagingQueue &queue, unsigned char *scratch,
             StagingBuffers &staging, MPI_Comm comm, int64_t pieceBytes,
             const StagedObserver &observer)
      : data(data), type(type), width(width), queue(queue), scratch(scratch),
        staging(staging), comm(comm), observer(observer) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    // The host ring's segments and steps (RingAllreduce.h).
    schedule =
        RingSchedule(count, size, rank, RingSchedule::Segments::NearEqual,
                     pieceBytes / static_cast<int64_t>(width));
    pieces = schedule.pieces();
  }

  commrt_status run() {
    // The first segment is the largest.
    const size_t segmentBytes =
        static_cast<size_t>(schedule.segmentCount(0)) * width;
    COMMRT_TRY(staging.reserve(3, segmentBytes));
    for (int step = 0; step < 2 * (size - 1); ++step)
      COMMRT_TRY(runStep(step));
    return queue.finish();
  }

private:
  size_t offsetOf(int64_t piece) const {
    return static_cast<size_t>(piece * schedule.elementsPerPiece()) * width;
  }
  void observe(StagedEvent kind, int step, int64_t piece) const {
    if (observer)
      observer(kind, step, piece);
  }

  /// Whether step `step` forwards what the step before received from the
  /// host: all-gather steps after the first.
  bool forwardsFromHost(int step) const { return step > size - 1; }

  commrt_status runStep(int step) {
    const int sent = schedule.sentAt(step),
              received = schedule.receivedAt(step);
    const int64_t sentCount = schedule.segmentCount(sent);
    const int64_t receivedCount = schedule.segmentCount(received);
    unsigned char *receiveBuffer = staging[1 + step % 2];
    unsigned char *sendBuffer =
        forwardsFromHost(step) ? staging[1 + (step - 1) % 2] : staging[0];

    // The receive buffer was last read by the copies to the device of two
    // steps ago.
    if (step >= 2)
      COMMRT_TRY(queue.waitFor(copiedIn[step % 2]));
    std::vector<MPI_Request> receives(pieces, MPI_REQUEST_NULL);
    std::vector<MPI_Request> sends(pieces, MPI_REQUEST_NULL);
    for (int64_t piece = 0; piece < pieces; ++piece)
      if (int error = MPI_Irecv(
              receiveBuffer + offsetOf(piece),
              static_cast<int>(schedule.pieceOf(receivedCount, piece)), type,
              left, kStagedRingTag, comm, &receives[piece]))
        return failMpi("MPI_Irecv (staged ring)", error);

    // Every copy to the host at once: the queue runs them back to back
    // while the first pieces travel.
    std::vector<int64_t> copiedOut(pieces, 0);
    if (!forwardsFromHost(step)) {
      const unsigned char *segment =
          data + static_cast<size_t>(schedule.segmentBegin(sent)) * width;
      for (int64_t piece = 0; piece < pieces; ++piece) {
        const size_t bytes =
            static_cast<size_t>(schedule.pieceOf(sentCount, piece)) * width;
        if (bytes == 0)
          continue;
        COMMRT_TRY(queue.copyToHost(sendBuffer + offsetOf(piece),
                                    segment + offsetOf(piece), bytes));
        COMMRT_TRY(queue.mark(copiedOut[piece]));
        observe(StagedEvent::CopyOutEnqueued, step, piece);
      }
    }

    unsigned char *into =
        data + static_cast<size_t>(schedule.segmentBegin(received)) * width;
    int64_t nextSend = 0, handled = 0;
    std::vector<int> completed(pieces);
    Backoff backoff;
    while (nextSend < pieces || handled < pieces) {
      bool progressed = false;
      // Sends go in piece order, each once its copy to the host is done.
      while (nextSend < pieces) {
        const int64_t n = schedule.pieceOf(sentCount, nextSend);
        if (n > 0 && !forwardsFromHost(step)) {
          bool done = false;
          COMMRT_TRY(queue.reached(copiedOut[nextSend], done));
          if (!done)
            break;
        }
        if (int error =
                MPI_Isend(sendBuffer + offsetOf(nextSend), static_cast<int>(n),
                          type, right, kStagedRingTag, comm, &sends[nextSend]))
          return failMpi("MPI_Isend (staged ring)", error);
        observe(StagedEvent::SendPosted, step, nextSend);
        ++nextSend;
        progressed = true;
      }
      if (handled < pieces) {
        int count = 0;
        if (int error =
                MPI_Testsome(static_cast<int>(pieces), receives.data(), &count,
                             completed.data(), MPI_STATUSES_IGNORE))
          return failMpi("MPI_Testsome (staged ring)", error);
        // MPI_UNDEFINED (negative) where no receive was left active.
        for (int i = 0; i < count; ++i)
          COMMRT_TRY(
              copyIn(step, completed[i], receivedCount, receiveBuffer, into));
        if (count > 0) {
          handled += count;
          progressed = true;
        }
      }
      if (progressed)
        backoff.progressed();
      else
        backoff.idle();
    }
    COMMRT_TRY(queue.mark(copiedIn[step % 2]));
    if (int error = MPI_Waitall(static_cast<int>(pieces), sends.data(),
                                MPI_STATUSES_IGNORE))
      return failMpi("MPI_Waitall (staged ring sends)", error);
    return COMMRT_SUCCESS;
  }

  /// Enqueues what follows the receipt of piece `piece` of step `step`:
  /// its copy to the device and reduction into the segment at `into`, or
  /// in the all-gather its copy into place.
  commrt_status copyIn(int step, int64_t piece, int64_t receivedCount,
                       const unsigned char *receiveBuffer,
                       unsigned char *into) {
    observe(StagedEvent::Received, step, piece);
    const int64_t n = schedule.pieceOf(receivedCount, piece);
    if (n == 0)
      return COMMRT_SUCCESS;
    const size_t bytes = static_cast<size_t>(n) * width;
    if (schedule.reduces(step)) {
      unsigned char *slot = scratch + offsetOf(piece);
      COMMRT_TRY(
          queue.copyToDevice(slot, receiveBuffer + offsetOf(piece), bytes));
      COMMRT_TRY(queue.reduce(slot, into + offsetOf(piece), n));
    } else {
      COMMRT_TRY(queue.copyToDevice(into + offsetOf(piece),
                                    receiveBuffer + offsetOf(piece), bytes));
    }
    observe(StagedEvent::CopyInEnqueued, step, piece);
    return COMMRT_SUCCESS;
  }

  unsigned char *const data;
  const MPI_Datatype type;
  const size_t width;
  StagingQueue &queue;
  unsigned char *const scratch;
  StagingBuffers &staging;
  const MPI_Comm comm;
  const StagedObserver &observer;
  int size = 1, left = 0, right = 0;
  RingSchedule schedule;
  int64_t pieces = 1;
  /// The queue's mark after each receive buffer's last copies to the device.
  int64_t copiedIn[2] = {0, 0};
};

} // namespace

StagingBuffers::~StagingBuffers() {
  for (unsigned char *buffer : buffers)
    release(buffer);
}

commrt_status StagingBuffers::reserve(size_t count, size_t wanted) {
  if (buffers.size() >= count && bytes >= wanted)
    return COMMRT_SUCCESS;
  // Callers that alternate between few large and many small buffers keep
  // the largest of both, instead of reallocating at every change.
  count = std::max(count, buffers.size());
  wanted = std::max(wanted, bytes);
  for (unsigned char *buffer : buffers)
    release(buffer);
  buffers.clear();
  bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    auto *buffer = static_cast<unsigned char *>(allocate(wanted));
    if (!buffer && wanted > 0)
      return fail(COMMRT_ERROR_BACKEND, "cannot allocate ", wanted,
                  " bytes of host staging memory");
    buffers.push_back(buffer);
  }
  bytes = wanted;
  return COMMRT_SUCCESS;
}

commrt_status commrt::stagedRingAllreduce(void *data, int64_t count,
                                          MPI_Datatype type, size_t width,
                                          StagingQueue &queue, void *scratch,
                                          StagingBuffers &staging,
                                          MPI_Comm comm, int64_t pieceBytes,
                                          const StagedObserver &observer) {
  int size;
  MPI_Comm_size(comm, &size);
  if (size == 1 || count == 0)
    return COMMRT_SUCCESS;
  StagedRing ring(static_cast<unsigned char *>(data), count, type, width, queue,
                  static_cast<unsigned char *>(scratch), staging, comm,
                  pieceBytes, observer);
  return ring.run();
}
