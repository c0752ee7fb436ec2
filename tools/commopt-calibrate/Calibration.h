//===- Calibration.h - Fitting allreduce sweeps to a cluster ----*- C++ -*-===//
//
// The arithmetic of commopt-calibrate, apart from MPI so that it can be
// tested on synthetic data: a least-squares fit of measured allreduce times
// T(n) = a + b n (as MG-WFBP fits its clusters), its conversion to the
// per-step alpha and beta of a p-rank ring that reproduces the fit exactly
// (docs/CostModel.md, section 5), and the cluster description that results.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_BENCH_CALIBRATE_CALIBRATION_H
#define COMMOPT_BENCH_CALIBRATE_CALIBRATION_H

#include "CommOpt/Analysis/ClusterModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace commopt::calibrate {

/// One measured point: an allreduce of `bytes` bytes took `timeUs`.
struct Sample {
  double bytes = 0;
  double timeUs = 0;
};

/// T(n) = interceptUs + slopeUsPerByte * n, and how well it fits.
struct LinearFit {
  double interceptUs = 0;
  double slopeUsPerByte = 0;
  /// Root mean square of the residuals, in microseconds.
  double rmsResidualUs = 0;
  /// Largest |fitted - measured| / measured over the samples.
  double maxRelativeError = 0;
  /// Whether the unconstrained fit had a negative intercept and the fit was
  /// redone through the origin (a negative latency is not a cluster).
  bool interceptClamped = false;

  double predictUs(double bytes) const {
    return interceptUs + slopeUsPerByte * bytes;
  }
};

/// What the least-squares fit minimises.
enum class FitError {
  /// Sum of squared absolute residuals (MG-WFBP's fit). Over doubling sizes
  /// the largest messages dominate it, and the latency term is poorly
  /// determined.
  Absolute,
  /// Sum of squared relative residuals ((fitted - measured) / measured):
  /// every size counts alike, so the latency term is what small messages
  /// measure.
  Relative,
};

/// Least squares over `samples` (at least two distinct sizes). When the
/// intercept comes out negative, fits the slope alone through the origin and
/// sets `interceptClamped`.
llvm::Expected<LinearFit> fitLinear(llvm::ArrayRef<Sample> samples,
                                    FitError error = FitError::Absolute);

/// Lines over consecutive ranges of message sizes: a transport's small
/// messages pay fixed costs (and often another algorithm) that large ones
/// do not, which one line over 4 B to 64 MiB prices up to 20x off.
struct PiecewiseFit {
  struct Piece {
    /// The largest size the line prices: halfway, on a log scale, between
    /// its largest sample and the next piece's smallest; infinity for the
    /// last piece.
    double upToBytes = 0;
    LinearFit line;
  };
  /// In increasing order of size; at least one.
  std::vector<Piece> pieces;
  /// Largest |fitted - measured| / measured over the samples.
  double maxRelativeError = 0;

  /// The piece that prices `bytes`.
  const LinearFit &lineFor(double bytes) const;
  double predictUs(double bytes) const {
    return lineFor(bytes).predictUs(bytes);
  }
  /// One line for every size.
  static PiecewiseFit single(const LinearFit &line);
};

/// The piecewise fit of `samples` with the fewest pieces, up to
/// `maxPieces`, whose largest relative error is at most `tolerance`, or else
/// the one of `maxPieces` pieces with the least sum of squared relative
/// residuals. Each piece is a relative least-squares line (fitLinear) over
/// at least `minSamplesPerPiece` samples of distinct sizes; the breakpoints
/// are the ones that minimise that sum (dynamic programming over the
/// sorted samples).
llvm::Expected<PiecewiseFit> fitPiecewise(llvm::ArrayRef<Sample> samples,
                                          unsigned maxPieces,
                                          double tolerance = 0.05,
                                          unsigned minSamplesPerPiece = 3);

/// The per-step alpha and beta of a ring allreduce over `ranks` ranks whose
/// whole time is `fit`: the ring costs 2(p-1) alpha + 2(p-1)/p n beta, so
/// alpha = a / (2(p-1)) and beta = b p / (2(p-1)). Needs ranks >= 2.
llvm::Expected<mlir::comm::LinkLevel> ringLevelFromFit(const LinearFit &fit,
                                                       int64_t ranks);

/// The level of a ring over `ranks` ranks whose time is `fit`: the last
/// piece gives its alpha and beta (ringLevelFromFit), the others its
/// regimes, each up to its piece's size.
llvm::Expected<mlir::comm::LinkLevel> ringLevelFromFit(const PiecewiseFit &fit,
                                                       int64_t ranks);

/// The cluster a calibration describes: `ranks` ranks in nodes of
/// `ranksPerNode`, a ring allreduce, one channel, and the level of `fit`, a
/// ring over all ranks, as the flat level (inter-node when there are several
/// nodes, intra-node otherwise). With several nodes of more than one rank,
/// `nodeFit`, when given, is a ring within each node and gives the
/// intra-node level; without it, the level a flat ring does not measure gets
/// the same figures. Verified before it is returned.
llvm::Expected<mlir::comm::ClusterModel>
makeCalibratedCluster(const PiecewiseFit &fit, int64_t ranks,
                      int64_t ranksPerNode, std::string name,
                      std::string source,
                      const PiecewiseFit *nodeFit = nullptr);
/// The same with one line for every size.
llvm::Expected<mlir::comm::ClusterModel>
makeCalibratedCluster(const LinearFit &fit, int64_t ranks, int64_t ranksPerNode,
                      std::string name, std::string source,
                      const LinearFit *nodeFit = nullptr);

/// The least-squares slope of a line through the origin fitted to
/// `samples` (time over bytes), in us per byte; 0 when it would be negative
/// (a cost cannot be) or there is no sample.
double fitThroughOrigin(llvm::ArrayRef<Sample> samples);

/// Sizes from `minBytes` to `maxBytes`, doubling (the last one is
/// `maxBytes` even when it is not a doubling of the previous one).
std::vector<int64_t> sweepSizes(int64_t minBytes, int64_t maxBytes);

/// The median of `values` (the mean of the middle two for an even count);
/// `values` must not be empty.
double median(std::vector<double> values);

/// A pass of the kind the runtime's rows exchanges make over what they
/// receive (lib/Runtime/Sparse.cpp): the rows of `width` values at
/// `values`, one for each of `indices`, added up by index into `sums`, the
/// first row of an index appended, later ones added to it, through `slots`
/// (an index table of at least the largest index + 1 entries, all -1
/// before and after); `order` receives the distinct indices in the order
/// they first came. Memory-bound, as those passes are: commopt-calibrate
/// times it to measure the CPU a byte of the collectives' local work takes
/// where ranks share the cores (`local_ns_per_byte`).
void addRowsByIndex(llvm::ArrayRef<int64_t> indices,
                    llvm::ArrayRef<float> values, int64_t width,
                    std::vector<int64_t> &slots, std::vector<float> &sums,
                    std::vector<int64_t> &order);

/// The bytes addRowsByIndex moves for `rows` rows of `width` f32 of which
/// `distinct` have distinct indices, as the cost model counts the runtime's
/// passes of that kind (docs/CostModel.md, section 2.5): a read of each
/// row, a write of the first of each index, a read and a write of each
/// repeat, and 16 bytes of the index table for each row.
double addRowsByIndexBytes(int64_t rows, int64_t distinct, int64_t width);

} // namespace commopt::calibrate

#endif // COMMOPT_BENCH_CALIBRATE_CALIBRATION_H
