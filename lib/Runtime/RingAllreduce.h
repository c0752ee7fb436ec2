//===- RingAllreduce.h - The MPI backend's ring allreduce -------*- C++ -*-===//
//
// A ring allreduce over MPI point-to-point messages, which the MPI backend
// runs for large reductions (COMMRT_ALLREDUCE, COMMRT_RING_MIN_BYTES; see
// MpiBackend.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_RINGALLREDUCE_H
#define COMMRT_RINGALLREDUCE_H

#include "commrt/commrt.h"

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace commrt {

/// The MPI datatype carrying `dtype`, 16-bit elements as `type16`.
inline MPI_Datatype mpiTypeOf(commrt_dtype dtype, MPI_Datatype type16) {
  switch (dtype) {
  case COMMRT_F32:
    return MPI_FLOAT;
  case COMMRT_F64:
    return MPI_DOUBLE;
  case COMMRT_F16:
  case COMMRT_BF16:
    break;
  }
  return type16;
}

/// Contiguous elements of the ring's buffer, which is the concatenation of
/// its spans: one buffer reduced in place, or every buffer of a plan.
struct Span {
  unsigned char *data;
  int64_t count;
};

/// How the ring combines what it receives with what it holds.
class RingReduction {
public:
  virtual ~RingReduction() = default;

  /// Reduces the `count` elements at `from` into the `count` elements at
  /// `into`, which are elements [begin, begin + count) of the ring's
  /// concatenated spans.
  virtual commrt_status reduce(const unsigned char *from, unsigned char *into,
                               int64_t begin, int64_t count) const = 0;
};

/// Ring allreduce in place of the concatenation of `spans`, elements of
/// `type` (`width` bytes each) combined by `reduction`, over `comm`,
/// receiving into `scratch` (grown as needed and kept by the caller); as the
/// overload below.
commrt_status ringAllreduce(const std::vector<Span> &spans, MPI_Datatype type,
                            size_t width, const RingReduction &reduction,
                            MPI_Comm comm, std::vector<unsigned char> &scratch);

/// Ring allreduce in place of the concatenation of `spans`, elements of
/// `type` (`width` bytes each) reduced with `op`, over `comm`, receiving
/// into `scratch` (grown as needed and kept by the caller). Segment `s` is
/// `count / size` elements, one more for the first `count % size`; some may
/// be empty. Each step moves its segment in pieces of at most 1 MiB, and the
/// steps are pipelined: a piece goes on to the right as soon as it has come
/// in from the left and been reduced, while the next pieces travel.
/// Collective over `comm`, whose ranks carry one collective at a time.
commrt_status ringAllreduce(const std::vector<Span> &spans, MPI_Datatype type,
                            size_t width, MPI_Op op, MPI_Comm comm,
                            std::vector<unsigned char> &scratch);

/// The shard of `count` elements that rank `rank` of `size` owns in the
/// sharded collectives: elements [begin, begin + length) with shards of
/// ceil(count / size) elements, the last ones shorter or empty.
struct Shard {
  int64_t begin, length;
};
/// The elements of every rank's shard, padding included: ceil(count / size).
inline int64_t shardElements(int64_t count, int size) {
  return (count + size - 1) / size;
}
inline Shard shardOf(int64_t count, int rank, int size) {
  const int64_t each = shardElements(count, size);
  const int64_t begin = std::min(count, rank * each);
  return {begin, std::min(count, begin + each) - begin};
}

/// The steps of a ring over `size` ranks and how it cuts `total` elements
/// into segments and pieces, shared by the host ring (RingAllreduce.cpp) and
/// the staged ring over device memory (StagedRing.cpp).
///
/// The reduce-scatter and the allgather are 2 (size - 1) steps; step s sends
/// segment sentAt(s) to the right and receives segment receivedAt(s) from
/// the left, and sentAt(s + 1) == receivedAt(s): what a step receives (and,
/// in the reduce-scatter, reduces) is what the next step forwards. Every
/// step moves its segment in pieces() pieces of at most `pieceCount`
/// elements, some of them empty, so that each send meets its receive.
class RingSchedule {
public:
  enum class Segments {
    /// Near-equal: segment s is total / size elements, one more for the
    /// first total % size (the allreduce).
    NearEqual,
    /// Shards (shardOf): ceil(total / size) elements, the last ones shorter
    /// or empty (the reduce-scatter or the allgather alone).
    Shards,
  };

  /// No elements on one rank: no steps.
  RingSchedule() = default;
  /// `position` is the rank whose segments the steps follow: after the
  /// reduce-scatter, segment position + 1 is fully reduced there.
  RingSchedule(int64_t total, int size, int position, Segments segments,
               int64_t pieceCount)
      : total(total), size(size), position(position), segments(segments),
        pieceCount(std::max<int64_t>(1, pieceCount)) {}

  /// The first element of segment `segment`, and its number of elements.
  int64_t segmentBegin(int segment) const {
    if (segments == Segments::Shards)
      return std::min(total, segment * shardElements(total, size));
    return segment * (total / size) + std::min<int64_t>(segment, total % size);
  }
  int64_t segmentCount(int segment) const {
    if (segments == Segments::Shards)
      return std::min(total, (segment + 1) * shardElements(total, size)) -
             segmentBegin(segment);
    return total / size + (segment < total % size ? 1 : 0);
  }

  /// Whether step `step` is part of the reduce-scatter.
  bool reduces(int64_t step) const { return step < size - 1; }

  /// The segment step `step` sends to the right and the one it receives
  /// from the left. Reduce-scatter: after step s, segment position - s - 1
  /// holds the reduction over ranks position - s - 1 .. position.
  /// Allgather: the fully reduced segments go around the ring.
  int sentAt(int64_t step) const {
    return reduces(step)
               ? wrap(position - static_cast<int>(step))
               : wrap(position + 1 - static_cast<int>(step - (size - 1)));
  }
  int receivedAt(int64_t step) const {
    return reduces(step) ? wrap(position - static_cast<int>(step) - 1)
                         : wrap(position - static_cast<int>(step - (size - 1)));
  }

  /// The elements in a full piece, and the pieces of every step.
  int64_t elementsPerPiece() const { return pieceCount; }
  int64_t pieces() const {
    return std::max<int64_t>(1,
                             (segmentCount(0) + pieceCount - 1) / pieceCount);
  }
  /// The elements of piece `piece` of a segment of `count` elements.
  int64_t pieceOf(int64_t count, int64_t piece) const {
    return std::clamp<int64_t>(count - piece * pieceCount, 0, pieceCount);
  }

private:
  /// `segment` modulo the number of ranks.
  int wrap(int segment) const { return (segment % size + size) % size; }

  int64_t total = 0;
  int size = 1, position = 0;
  Segments segments = Segments::NearEqual;
  int64_t pieceCount = 1;
};

/// The reduce-scatter half of the ring alone: afterwards rank r's shard
/// (shardOf) of the concatenation of `spans` holds the reduction over all
/// ranks; the rest of the spans holds partial sums. Pipelined as the
/// allreduce's; collective over `comm`.
commrt_status ringReduceScatter(const std::vector<Span> &spans,
                                MPI_Datatype type, size_t width,
                                const RingReduction &reduction, MPI_Comm comm,
                                std::vector<unsigned char> &scratch);
commrt_status ringReduceScatter(const std::vector<Span> &spans,
                                MPI_Datatype type, size_t width, MPI_Op op,
                                MPI_Comm comm,
                                std::vector<unsigned char> &scratch);

/// The allgather half of the ring alone: rank r's shard (shardOf) of the
/// concatenation of `spans` goes to every rank, in place. Pipelined as the
/// allreduce's; collective over `comm`.
commrt_status ringAllGather(const std::vector<Span> &spans, MPI_Datatype type,
                            size_t width, MPI_Comm comm);

/// The most bytes of one ring message: small enough that a piece is reduced
/// and forwarded while the next ones travel, large enough that per-message
/// costs stay small.
constexpr int64_t kRingPieceBytes = int64_t(1) << 20;

/// The eager limit the runtime asks of OpenMPI's TCP transport: a ring
/// piece and its header.
constexpr int64_t kTcpEagerLimitBytes = kRingPieceBytes + (int64_t(64) << 10);

/// Before the runtime initialises MPI itself: lets OpenMPI's TCP transport
/// send a whole ring piece eagerly (OMPI_MCA_btl_tcp_eager_limit, unless the
/// environment sets it). Above its eager limit (64 KiB by default) a message
/// leaves only after the receiver answered a request, and over a busy link
/// that answer queues behind the receiver's own outgoing data: the ring ran
/// 8% below the rate of a 1 Gbit/s link that way, at the link's rate with
/// its pieces eager (BENCHMARKS.md, "Training on Fashion-MNIST"). The ring
/// posts its receives ahead of the pieces, so eager pieces are seldom
/// buffered as unexpected.
void preferEagerRingPieces();

} // namespace commrt

#endif // COMMRT_RINGALLREDUCE_H
