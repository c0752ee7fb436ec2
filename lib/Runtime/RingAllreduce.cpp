//===- RingAllreduce.cpp - The MPI backend's ring allreduce ---------------===//
//
// The buffer is cut into one near-equal segment per rank; a reduce-scatter of
// p - 1 steps sends a segment to the right neighbour and reduces the one
// received from the left into the buffer, leaving each rank with one fully
// reduced segment, then an allgather of p - 1 steps circulates those.
//
//===----------------------------------------------------------------------===//

#include "RingAllreduce.h"
#include "Backend.h"

#include <algorithm>

using namespace commrt;

namespace {

/// The tag of the ring's messages; a plan's communicator carries one
/// collective at a time.
constexpr int kRingTag = 0x636d;

/// The most bytes of one ring message: small enough that a piece is reduced
/// while the next one travels, large enough that per-message costs stay
/// small.
constexpr int64_t kRingPieceBytes = int64_t(1) << 20;

/// A message of the ring: the elements [begin, begin + count) of the
/// concatenated spans, as an MPI buffer, count and datatype. A range in one
/// span is sent as it is; one across spans through an hindexed datatype over
/// absolute addresses, which MPI frees once the message is done.
struct Message {
  void *buffer = MPI_BOTTOM;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
};

/// One ring allreduce (see ringAllreduce).
class Ring {
public:
  Ring(const std::vector<Span> &spans, MPI_Datatype type, size_t width,
       MPI_Op op, MPI_Comm comm, std::vector<unsigned char> &scratch);

  /// Runs the reduce-scatter, then the allgather.
  commrt_status run();

private:
  /// The messages of one step: segment `sent` goes to the right while
  /// segment `received` comes from the left, into scratch to be reduced
  /// into the spans when `reduces`, or straight into the spans.
  struct Step {
    int sent, received;
    bool reduces;
    std::vector<MPI_Request> sends, receives;
  };

  /// The first element of segment `segment`, and its number of elements.
  int64_t segmentBegin(int segment) const {
    return segment * base + std::min<int64_t>(segment, extra);
  }
  int64_t segmentCount(int segment) const {
    return base + (segment < extra ? 1 : 0);
  }

  /// `segment` modulo the number of ranks.
  int wrap(int segment) const { return (segment % size + size) % size; }

  /// The elements of piece `piece` of a segment of `total` elements.
  int64_t pieceOf(int64_t total, int64_t piece) const {
    return std::clamp<int64_t>(total - piece * pieceCount, 0, pieceCount);
  }

  /// The half of scratch that receives piece `piece`.
  unsigned char *scratchFor(int64_t piece) const {
    return scratch.data() + (piece % 2) * scratchCount * width;
  }

  /// Makes the message of the `count` elements at `begin` in the spans.
  commrt_status message(int64_t begin, int64_t count, Message &out) const;

  /// Reduces the `n` received elements at `from` into the elements
  /// [begin, begin + n) of the spans.
  commrt_status reduceInto(const unsigned char *from, int64_t begin,
                           int64_t n) const;

  /// Runs one step (see Step).
  commrt_status step(int sent, int received, bool reduces);

  /// Posts the receive and the send of piece `piece` of `step`.
  commrt_status post(Step &step, int64_t piece);

  /// Posts every piece of `step` ahead of the next, reducing each received
  /// piece while the next one travels.
  commrt_status receiveAndReduce(Step &step);

  /// Waits for every message of `step`.
  commrt_status complete(Step &step);

  const std::vector<Span> &spans;
  const MPI_Datatype type;
  const size_t width;
  const MPI_Op op;
  const MPI_Comm comm;
  std::vector<unsigned char> &scratch;
  int rank, size, left, right;
  /// Where each span starts among the concatenated elements.
  std::vector<int64_t> offsets;
  /// Segment sizes (see ringAllreduce).
  int64_t base, extra;
  /// The elements of a full piece, and of each half of scratch.
  int64_t pieceCount, scratchCount;
  /// The pieces of every step of every rank, some of them empty, so that
  /// each send meets its receive.
  int64_t pieces;
};

Ring::Ring(const std::vector<Span> &spans, MPI_Datatype type, size_t width,
           MPI_Op op, MPI_Comm comm, std::vector<unsigned char> &scratch)
    : spans(spans), type(type), width(width), op(op), comm(comm),
      scratch(scratch) {
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  right = (rank + 1) % size;
  left = (rank + size - 1) % size;
  int64_t count = 0;
  for (const Span &span : spans) {
    offsets.push_back(count);
    count += span.count;
  }
  base = count / size;
  extra = count % size;
  pieceCount = std::max<int64_t>(1, kRingPieceBytes / width);
  // Two pieces: one being received while the other is reduced.
  scratchCount = std::min(segmentCount(0), pieceCount);
  pieces =
      std::max<int64_t>(1, (segmentCount(0) + pieceCount - 1) / pieceCount);
}

commrt_status Ring::run() {
  if (scratch.size() < 2 * scratchCount * width)
    scratch.resize(2 * scratchCount * width);
  // Reduce-scatter: after step s, segment rank - s - 1 holds the reduction
  // over ranks rank - s - 1 .. rank; at the end this rank owns segment
  // rank + 1 fully reduced.
  for (int s = 0; s < size - 1; ++s)
    COMMRT_TRY(step(wrap(rank - s), wrap(rank - s - 1), /*reduces=*/true));
  // Allgather: pass the fully reduced segments around the ring.
  for (int s = 0; s < size - 1; ++s)
    COMMRT_TRY(step(wrap(rank + 1 - s), wrap(rank - s), /*reduces=*/false));
  return COMMRT_SUCCESS;
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
    if (int error = MPI_Reduce_local(from, spans[i].data + within * width,
                                     static_cast<int>(taken), type, op))
      return failMpi("MPI_Reduce_local (ring allreduce)", error);
    from += taken * width;
    n -= taken;
  }
  return COMMRT_SUCCESS;
}

commrt_status Ring::step(int sent, int received, bool reduces) {
  Step step{sent, received, reduces,
            std::vector<MPI_Request>(pieces, MPI_REQUEST_NULL),
            std::vector<MPI_Request>(pieces, MPI_REQUEST_NULL)};
  if (reduces) {
    COMMRT_TRY(receiveAndReduce(step));
  } else {
    for (int64_t piece = 0; piece < pieces; ++piece)
      COMMRT_TRY(post(step, piece));
  }
  return complete(step);
}

commrt_status Ring::post(Step &step, int64_t piece) {
  const int64_t receiving = pieceOf(segmentCount(step.received), piece);
  const int64_t receiveAt = segmentBegin(step.received) + piece * pieceCount;
  Message into;
  if (step.reduces)
    into = Message{scratchFor(piece), static_cast<int>(receiving), type};
  else
    COMMRT_TRY(message(receiveAt, receiving, into));
  int error = MPI_Irecv(into.buffer, into.count, into.type, left, kRingTag,
                        comm, &step.receives[piece]);
  if (into.type != type)
    MPI_Type_free(&into.type);
  if (error)
    return failMpi("MPI_Irecv (ring allreduce)", error);
  Message from;
  COMMRT_TRY(message(segmentBegin(step.sent) + piece * pieceCount,
                     pieceOf(segmentCount(step.sent), piece), from));
  error = MPI_Isend(from.buffer, from.count, from.type, right, kRingTag, comm,
                    &step.sends[piece]);
  if (from.type != type)
    MPI_Type_free(&from.type);
  if (error)
    return failMpi("MPI_Isend (ring allreduce)", error);
  return COMMRT_SUCCESS;
}

commrt_status Ring::receiveAndReduce(Step &step) {
  COMMRT_TRY(post(step, 0));
  for (int64_t piece = 0; piece < pieces; ++piece) {
    if (piece + 1 < pieces)
      COMMRT_TRY(post(step, piece + 1));
    if (int error = MPI_Wait(&step.receives[piece], MPI_STATUS_IGNORE))
      return failMpi("MPI_Wait (ring allreduce)", error);
    COMMRT_TRY(reduceInto(scratchFor(piece),
                          segmentBegin(step.received) + piece * pieceCount,
                          pieceOf(segmentCount(step.received), piece)));
  }
  return COMMRT_SUCCESS;
}

commrt_status Ring::complete(Step &step) {
  if (int error = MPI_Waitall(static_cast<int>(pieces), step.receives.data(),
                              MPI_STATUSES_IGNORE))
    return failMpi("MPI_Waitall (ring allreduce)", error);
  if (int error = MPI_Waitall(static_cast<int>(pieces), step.sends.data(),
                              MPI_STATUSES_IGNORE))
    return failMpi("MPI_Waitall (ring allreduce)", error);
  return COMMRT_SUCCESS;
}

} // namespace

commrt_status commrt::ringAllreduce(const std::vector<Span> &spans,
                                    MPI_Datatype type, size_t width, MPI_Op op,
                                    MPI_Comm comm,
                                    std::vector<unsigned char> &scratch) {
  return Ring(spans, type, width, op, comm, scratch).run();
}
