//===- RingAllreduce.cpp - The MPI backend's ring allreduce ---------------===//
//
// The buffer is cut into one near-equal segment per rank; a reduce-scatter of
// p - 1 steps sends a segment to the right neighbour and reduces the one
// received from the left into the buffer, leaving each rank with one fully
// reduced segment, then an allgather of p - 1 steps circulates those. The
// steps are pipelined into each other piece by piece (see Ring). The two
// halves also run alone, over segments of ceil(n / p) elements of which rank
// r owns segment r: the sharded collectives (ringReduceScatter,
// ringAllGather).
//
//===----------------------------------------------------------------------===//

#include "RingAllreduce.h"
#include "Backend.h"
#include "MpiWait.h"

#include <algorithm>
#include <cstdlib>
#include <string>

using namespace commrt;

namespace {

/// The tag of the ring's messages; a plan's communicator carries one
/// collective at a time.
constexpr int kRingTag = 0x636d;

/// A message of the ring: the elements [begin, begin + count) of the
/// concatenated spans, as an MPI buffer, count and datatype. A range in one
/// span is sent as it is; one across spans through an hindexed datatype over
/// absolute addresses, which MPI frees once the message is done.
struct Message {
  void *buffer = MPI_BOTTOM;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

/// Which steps of the ring run, and how its buffer is cut.
enum class RingPart {
  /// The allreduce: both halves over near-equal segments; rank r ends the
  /// reduce-scatter owning segment r + 1.
  Allreduce,
  /// The reduce-scatter alone, over shards (ceil(n / p) elements, the last
  /// ones shorter or empty), leaving rank r with shard r reduced.
  ReduceScatter,
  /// The allgather alone, over shards, from rank r owning shard r.
  AllGather,
};

/// One ring allreduce (see ringAllreduce), pipelined across its steps, or
/// one of its halves (RingPart), on the steps and segments of a
/// RingSchedule.
///
/// Message g = s * pieces + k is piece k of step s. Piece k of step s + 1 is
/// sent as soon as piece k of step s is in, so a rank never waits for a
/// whole step to drain before it forwards: the link stays busy across step
/// boundaries, and each received piece is reduced while later ones travel.
/// Messages are sent and received in increasing g on every rank, which
/// MPI's ordering of messages between two ranks on one tag and communicator
/// matches up.
class Ring {
public:
  Ring(const std::vector<Span> &spans, MPI_Datatype type, size_t width,
       const RingReduction *reduction, MPI_Comm comm,
       std::vector<unsigned char> &scratch, RingPart part);

  /// Runs the steps of its part.
  commrt_status run();

private:
  /// The scratch slot that receives message `g` of the reduce-scatter.
  unsigned char *scratchFor(int64_t g) const {
    return scratch.data() + (g % kWindow) * scratchCount * width;
  }

  /// Makes the message of the `count` elements at `begin` in the spans.
  commrt_status message(int64_t begin, int64_t count, Message &out) const;

  /// Reduces the `n` received elements at `from` into the elements
  /// [begin, begin + n) of the spans.
  commrt_status reduceInto(const unsigned char *from, int64_t begin,
                           int64_t n) const;

  /// Posts the send of message `g`.
  commrt_status postSend(int64_t g);

  /// Posts the receive of message `g`: into scratch in the reduce-scatter,
  /// in place in the allgather, once the send that read that place is done.
  commrt_status postReceive(int64_t g);

  /// Waits for every message posted.
  commrt_status complete();

  /// Receives posted ahead of the one being waited for; in the
  /// reduce-scatter each has a scratch slot of one piece.
  static constexpr int64_t kWindow = 4;

  const std::vector<Span> &spans;
  const MPI_Datatype type;
  const size_t width;
  /// How received elements are combined; null for the allgather alone.
  const RingReduction *reduction;
  const MPI_Comm comm;
  std::vector<unsigned char> &scratch;
  const RingPart part;
  int rank, size, left, right;
  /// Where each span starts among the concatenated elements.
  std::vector<int64_t> offsets;
  int64_t total;
  /// Segments near-equal for the allreduce (see ringAllreduce), shards for
  /// the halves alone, which follow rank - 1 so that rank r owns shard r
  /// between them.
  RingSchedule schedule;
  /// The messages this part runs: [firstMessage, endMessage).
  int64_t firstMessage, endMessage;
  /// The elements of a full piece (as schedule's), and of each scratch
  /// slot.
  int64_t pieceCount, scratchCount;
  /// The pieces of every step of every rank, some of them empty, so that
  /// each send meets its receive.
  int64_t pieces;
  /// The messages of all steps, indexed by g.
  int64_t messages;
  std::vector<MPI_Request> sends, receives;
};

Ring::Ring(const std::vector<Span> &spans, MPI_Datatype type, size_t width,
           const RingReduction *reduction, MPI_Comm comm,
           std::vector<unsigned char> &scratch, RingPart part)
    : spans(spans), type(type), width(width), reduction(reduction), comm(comm),
      scratch(scratch), part(part) {
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  right = (rank + 1) % size;
  left = (rank + size - 1) % size;
  total = 0;
  for (const Span &span : spans) {
    offsets.push_back(total);
    total += span.count;
  }
  schedule = RingSchedule(
      total, size, part == RingPart::Allreduce ? rank : left,
      part == RingPart::Allreduce ? RingSchedule::Segments::NearEqual
                                  : RingSchedule::Segments::Shards,
      static_cast<int64_t>(kRingPieceBytes / width));
  pieceCount = schedule.elementsPerPiece();
  scratchCount = std::min(schedule.segmentCount(0), pieceCount);
  pieces = schedule.pieces();
  messages = 2 * static_cast<int64_t>(size - 1) * pieces;
  const int64_t half = messages / 2;
  firstMessage = part == RingPart::AllGather ? half : 0;
  endMessage = part == RingPart::ReduceScatter ? half : messages;
  sends.assign(messages, MPI_REQUEST_NULL);
  receives.assign(messages, MPI_REQUEST_NULL);
}

commrt_status Ring::run() {
  if (part != RingPart::AllGather &&
      scratch.size() < kWindow * scratchCount * width)
    scratch.resize(kWindow * scratchCount * width);
  // The first step sends this rank's own data: all of it can go at once.
  for (int64_t g = firstMessage;
       g < std::min(firstMessage + pieces, endMessage); ++g)
    COMMRT_TRY(postSend(g));
  int64_t receivesPosted = firstMessage;
  for (int64_t g = firstMessage; g < endMessage; ++g) {
    // Slot (g + kWindow - 1) % kWindow was freed by message g - 1.
    for (; receivesPosted < std::min(endMessage, g + kWindow); ++receivesPosted)
      COMMRT_TRY(postReceive(receivesPosted));
    const int64_t s = g / pieces, piece = g % pieces;
    const int64_t received =
        schedule.pieceOf(schedule.segmentCount(schedule.receivedAt(s)), piece);
    COMMRT_TRY(waitFor(comm, receives[g], "MPI_Irecv (ring allreduce)",
                       received * static_cast<int64_t>(width)));
    if (schedule.reduces(s))
      COMMRT_TRY(reduceInto(scratchFor(g),
                            schedule.segmentBegin(schedule.receivedAt(s)) +
                                piece * pieceCount,
                            received));
    // What came in goes on to the right in the next step.
    if (g + pieces < endMessage)
      COMMRT_TRY(postSend(g + pieces));
  }
  return complete();
}
commrt_status Ring::message(int64_t begin, int64_t count, Message &out) const {
  out = Message{MPI_BOTTOM, 0, type};
  if (count == 0)
    return COMMRT_SUCCESS;
  size_t first = std::upper_bound(offsets.begin(), offsets.end(), begin) -
                 offsets.begin() - 1;
  int64_t within = begin - offsets[first];
  if (within + count <= spans[first].count) {
    out.buffer = spans[first].data + within * width;
    out.count = static_cast<int>(count);
    return COMMRT_SUCCESS;
  }
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  for (size_t i = first; count > 0; ++i, within = 0) {
    int64_t taken = std::min(count, spans[i].count - within);
    MPI_Aint address;
    MPI_Get_address(spans[i].data + within * width, &address);
    lengths.push_back(static_cast<int>(taken));
    addresses.push_back(address);
    count -= taken;
  }
  MPI_Datatype gathered;
  if (int error = MPI_Type_create_hindexed(static_cast<int>(lengths.size()),
                                           lengths.data(), addresses.data(),
                                           type, &gathered))
    return failMpi("MPI_Type_create_hindexed (ring allreduce)", error);
  if (int error = MPI_Type_commit(&gathered)) {
    MPI_Type_free(&gathered);
    return failMpi("MPI_Type_commit (ring allreduce)", error);
  }
  out = Message{MPI_BOTTOM, 1, gathered};
  return COMMRT_SUCCESS;
}

commrt_status Ring::reduceInto(const unsigned char *from, int64_t begin,
                               int64_t n) const {
  size_t i = std::upper_bound(offsets.begin(), offsets.end(), begin) -
             offsets.begin() - 1;
  for (int64_t within = begin - offsets[i]; n > 0; ++i, within = 0) {
    int64_t taken = std::min(n, spans[i].count - within);
    COMMRT_TRY(
        reduction->reduce(from, spans[i].data + within * width, begin, taken));
    from += taken * width;
    begin += taken;
    n -= taken;
  }
  return COMMRT_SUCCESS;
}

commrt_status Ring::postSend(int64_t g) {
  const int64_t s = g / pieces, piece = g % pieces;
  const int segment = schedule.sentAt(s);
  Message from;
  COMMRT_TRY(message(schedule.segmentBegin(segment) + piece * pieceCount,
                     schedule.pieceOf(schedule.segmentCount(segment), piece),
                     from));
  int error = MPI_Isend(from.buffer, from.count, from.type, right, kRingTag,
                        comm, &sends[g]);
  if (from.type != type)
    MPI_Type_free(&from.type);
  if (error)
    return failMpi("MPI_Isend (ring allreduce)", error);
  return COMMRT_SUCCESS;
}

commrt_status Ring::postReceive(int64_t g) {
  const int64_t s = g / pieces, piece = g % pieces;
  const int segment = schedule.receivedAt(s);
  const int64_t count = schedule.pieceOf(schedule.segmentCount(segment), piece);
  Message into;
  if (schedule.reduces(s)) {
    into = Message{scratchFor(g), static_cast<int>(count), type};
  } else {
    // The allgather overwrites the segment that reduce-scatter step
    // s - (p - 1) sent from: that send must be done first (a null request
    // where the allgather runs alone).
    const int64_t sentFrom = (s - (size - 1)) * pieces + piece;
    COMMRT_TRY(waitFor(comm, sends[sentFrom], "MPI_Isend (ring allreduce)"));
    COMMRT_TRY(message(schedule.segmentBegin(segment) + piece * pieceCount,
                       count, into));
  }
  int error = MPI_Irecv(into.buffer, into.count, into.type, left, kRingTag,
                        comm, &receives[g]);
  if (into.type != type)
    MPI_Type_free(&into.type);
  if (error)
    return failMpi("MPI_Irecv (ring allreduce)", error);
  return COMMRT_SUCCESS;
}

commrt_status Ring::complete() {
  return waitAll(comm, static_cast<int>(messages), sends.data(),
                 "MPI_Isend (ring allreduce)");
}

/// The reduction of an MPI op over elements of one MPI datatype.
class MpiOpReduction final : public RingReduction {
public:
  MpiOpReduction(MPI_Datatype type, MPI_Op op) : type(type), op(op) {}

  commrt_status reduce(const unsigned char *from, unsigned char *into, int64_t,
                       int64_t count) const override {
    if (int error =
            MPI_Reduce_local(from, into, static_cast<int>(count), type, op))
      return failMpi("MPI_Reduce_local (ring allreduce)", error);
    return COMMRT_SUCCESS;
  }

private:
  MPI_Datatype type;
  MPI_Op op;
};

} // namespace

commrt_status commrt::ringAllreduce(const std::vector<Span> &spans,
                                    MPI_Datatype type, size_t width,
                                    const RingReduction &reduction,
                                    MPI_Comm comm,
                                    std::vector<unsigned char> &scratch) {
  return Ring(spans, type, width, &reduction, comm, scratch,
              RingPart::Allreduce)
      .run();
}

commrt_status commrt::ringAllreduce(const std::vector<Span> &spans,
                                    MPI_Datatype type, size_t width, MPI_Op op,
                                    MPI_Comm comm,
                                    std::vector<unsigned char> &scratch) {
  return ringAllreduce(spans, type, width, MpiOpReduction(type, op), comm,
                       scratch);
}

commrt_status commrt::ringReduceScatter(const std::vector<Span> &spans,
                                        MPI_Datatype type, size_t width,
                                        const RingReduction &reduction,
                                        MPI_Comm comm,
                                        std::vector<unsigned char> &scratch) {
  return Ring(spans, type, width, &reduction, comm, scratch,
              RingPart::ReduceScatter)
      .run();
}

commrt_status commrt::ringReduceScatter(const std::vector<Span> &spans,
                                        MPI_Datatype type, size_t width,
                                        MPI_Op op, MPI_Comm comm,
                                        std::vector<unsigned char> &scratch) {
  return ringReduceScatter(spans, type, width, MpiOpReduction(type, op), comm,
                           scratch);
}

commrt_status commrt::ringAllGather(const std::vector<Span> &spans,
                                    MPI_Datatype type, size_t width,
                                    MPI_Comm comm) {
  std::vector<unsigned char> unused;
  return Ring(spans, type, width, /*reduction=*/nullptr, comm, unused,
              RingPart::AllGather)
      .run();
}

void commrt::preferEagerRingPieces() {
  // Not overwriting: the user's setting wins.
  setenv("OMPI_MCA_btl_tcp_eager_limit",
         std::to_string(kTcpEagerLimitBytes).c_str(), /*overwrite=*/0);
}
