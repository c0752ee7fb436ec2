//===- CollectiveCost.h - Alpha-beta costs of collectives -------*- C++ -*-===//
//
// Times of dense and sparse collectives on a ClusterModel, in the alpha-beta
// model: a latency part (per-message costs) and a bandwidth part (bytes times
// seconds per byte), kept apart so that the timeline simulator can share
// bandwidth between concurrent collectives. Every formula, with its source,
// is in docs/CostModel.md. All times are in microseconds; a cluster of one
// rank costs nothing.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_COLLECTIVECOST_H
#define COMMOPT_ANALYSIS_COLLECTIVECOST_H

#include "CommOpt/Analysis/ClusterModel.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace mlir::comm {

/// The time of one collective, split into the part that does not depend on
/// bandwidth (latency terms) and the part that does, at the full bandwidth of
/// the links.
struct CollectiveCost {
  /// Sum of the per-message latency terms, in microseconds.
  double latencyUs = 0;
  /// Sum of the per-byte terms at full bandwidth, in microseconds.
  double bandwidthUs = 0;
  /// Bytes each rank sends over its links (what its transport handles, on
  /// its host's CPU where the transport is a host's: HostCpu).
  double sentBytes = 0;
  /// Of `sentBytes`, those that MPI's own nonblocking collectives carry (the
  /// sparse exchanges' allgathers, all-to-alls and small allreduces), whose
  /// waits test at short sleeps where the runtime's ring sleeps through its
  /// transfers: HostCpu prices them at a rate of their own.
  double gatheredBytes = 0;
  /// How many collectives the runtime runs for it where it is a sparse
  /// exchange (the counts, the pairs, the owners' sums: each one MPI's own
  /// nonblocking collective, or NCCL's); 0 for the others. Each costs the
  /// host a part of its CPU that does not grow with its bytes
  /// (HostCpu::usPerGatheredCollective).
  double gatheredCollectives = 0;

  /// The collective's time when it runs alone.
  double totalUs() const { return latencyUs + bandwidthUs; }

  CollectiveCost &operator+=(const CollectiveCost &other) {
    latencyUs += other.latencyUs;
    bandwidthUs += other.bandwidthUs;
    sentBytes += other.sentBytes;
    gatheredBytes += other.gatheredBytes;
    gatheredCollectives += other.gatheredCollectives;
    return *this;
  }
  friend CollectiveCost operator+(CollectiveCost lhs,
                                  const CollectiveCost &rhs) {
    return lhs += rhs;
  }
};

/// Allreduce of `bytes` bytes (the size of each rank's buffer) with the
/// cluster's algorithm.
CollectiveCost allreduceCost(const ClusterModel &cluster, double bytes);

/// What a 16-bit wire adds to a collective that narrows `narrowedBytes`
/// bytes of gradients (in their own type): packing, the 16-bit reduction and
/// unpacking on the ranks (ClusterModel::wireUsPerByte), in microseconds.
inline double getWireCostUs(const ClusterModel &cluster, double narrowedBytes) {
  return cluster.wireUsPerByte * narrowedBytes;
}

/// Allreduce of `bytes` bytes with an explicitly chosen algorithm.
CollectiveCost allreduceCost(const ClusterModel &cluster, double bytes,
                             AllreduceAlgorithm algorithm);

/// Reduce-scatter of a `totalBytes` buffer per rank (each rank ends up with
/// totalBytes / ranks bytes of the reduced result).
CollectiveCost reduceScatterCost(const ClusterModel &cluster,
                                 double totalBytes);

/// Allgather whose result is `totalBytes` bytes (each rank contributes
/// totalBytes / ranks bytes).
CollectiveCost allgatherCost(const ClusterModel &cluster, double totalBytes);

/// All-to-all in which every rank sends `bytesPerRank` bytes in total, split
/// evenly among all ranks (its own share stays local).
CollectiveCost allToAllCost(const ClusterModel &cluster, double bytesPerRank);

/// Broadcast of `bytes` bytes from one rank to all.
CollectiveCost broadcastCost(const ClusterModel &cluster, double bytes);

/// How a sparsified gradient is exchanged.
enum class SparseExchangeScheme {
  /// RedSync: allgather of every rank's (index, value) pairs.
  Allgather,
  /// Zen: pairs go to the rank owning their hash partition (all-to-all), the
  /// owners reduce them, the reduced partitions are allgathered.
  Hash,
  /// GradientFlow: allreduce of per-chunk norms, then allreduce of the chunks
  /// that all ranks selected.
  Chunk,
};

/// The shape of one sparsified gradient as the exchange costs need it.
struct SparseGradient {
  /// Number of elements of the dense gradient.
  int64_t denseElements = 0;
  /// Fraction of elements each rank selects (Allgather, Hash), or fraction of
  /// chunks selected (Chunk), or fraction of rows each rank touches (the
  /// lossless Rows selection); in (0, 1].
  double density = 1;
  /// Values per pair: 1 for the lossy selections, which send entries; the
  /// row length for the Rows selection, which sends whole rows.
  int64_t rowElements = 1;
  /// Rows selection of a gradient given by its rows (a sparse COO gradient,
  /// commrt_rows_allreduce): nothing of the table's size is scanned or
  /// zeroed, the local work follows the rows.
  bool coo = false;
  /// Bytes per value on the wire (4 for f32, 2 for f16/bf16).
  int64_t valueBytes = 4;
  /// Bytes per index on the wire (the runtime sends 64-bit indices).
  int64_t indexBytes = 8;
  /// Chunk scheme: elements per chunk.
  int64_t chunkElements = 32768;
  /// Chunk scheme: bytes per chunk norm (the runtime reduces doubles).
  int64_t normBytes = 8;
  /// Hash scheme: density of the reduced result (union of all ranks'
  /// selections). When absent, ranks are assumed to select independently:
  /// 1 - (1 - density)^ranks.
  std::optional<double> reducedDensity;
};

/// Density of the union of `ranks` independent uniform selections of density
/// `density` each: 1 - (1 - density)^ranks.
double unionDensity(double density, int64_t ranks);

/// The fraction of a naturally sparse gradient's rows that `ranks` (>= 1)
/// ranks touch together, from `rowsTouched` (nonempty), the fractions
/// measured on 1, 2, 4, ... ranks: linear in log2(ranks) between measured
/// powers of two; past the last, the further ranks are taken as
/// independent, 1 - (1 - last)^(ranks / measured ranks).
double rowsTouchedAt(llvm::ArrayRef<double> rowsTouched, int64_t ranks);

/// Cost of exchanging (and summing) a sparsified gradient with `scheme`:
/// every collective the runtime issues for it, counts included
/// (docs/CostModel.md, section 2.5).
CollectiveCost sparseAllreduceCost(const ClusterModel &cluster,
                                   SparseExchangeScheme scheme,
                                   const SparseGradient &gradient);

/// How a sparsified gradient's entries are chosen.
enum class SparseSelectScheme {
  /// Exactly the k entries of largest magnitude.
  Topk,
  /// The entries at or above a threshold found by a radix search (RedSync).
  Threshold,
  /// Whole chunks of largest norm, with the Chunk exchange (GradientFlow).
  Chunk,
  /// Lossless: every row with a nonzero entry, no residual (a gradient that
  /// is sparse by nature), with the Allgather or Hash exchange.
  Rows,
};

/// The local work of one rank in a sparse allreduce, by the phases of the
/// runtime's trace (commrt.h): the bytes each reads from and writes to
/// memory, and what measured rates count.
struct SparseLocalWork {
  /// acc = grad + residual.
  double accumulateBytes = 0;
  /// The selection's passes over acc and the collection of what it sends
  /// (the chunk norms for chunk selection).
  double selectBytes = 0;
  /// The dense result written, what was received added in (chunks packed
  /// and unpacked), what was sent cleared from the residual, AVG's division.
  double scatterBytes = 0;
  /// The gradient's elements.
  double elements = 0;
  /// The entries the result takes in: pairs received, or elements of the
  /// chosen chunks.
  double entries = 0;

  double totalBytes() const {
    return accumulateBytes + selectBytes + scatterBytes;
  }
};

/// The local work of a sparse allreduce of `gradient` among `ranks` ranks
/// with `select` and `scheme`, dividing the result when `average`. Counted
/// from the runtime's steps (docs/CostModel.md, section 2.5). None on one
/// rank, whose sparse allreduce the model takes as free, as it does the
/// exchange.
SparseLocalWork sparseLocalWork(SparseSelectScheme select,
                                SparseExchangeScheme scheme,
                                const SparseGradient &gradient, int64_t ranks,
                                bool average);

/// The bytes one rank reads from and writes to memory in the local steps of
/// a sparse allreduce (sparseLocalWork's total): a device's memory bandwidth
/// turns it into time where the device has no measured rates.
inline double sparseLocalBytes(SparseSelectScheme select,
                               SparseExchangeScheme scheme,
                               const SparseGradient &gradient, int64_t ranks,
                               bool average) {
  return sparseLocalWork(select, scheme, gradient, ranks, average).totalBytes();
}

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_COLLECTIVECOST_H
