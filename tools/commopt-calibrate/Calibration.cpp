//===- Calibration.cpp - Fitting allreduce sweeps to a cluster ------------===//
//
// See Calibration.h.
//
//===----------------------------------------------------------------------===//

#include "Calibration.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

using namespace commopt::calibrate;
using mlir::comm::AllreduceAlgorithm;
using mlir::comm::ClusterModel;
using mlir::comm::LinkLevel;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Fills in the residual statistics of `fit` over `samples`.
static void measureResiduals(LinearFit &fit, llvm::ArrayRef<Sample> samples) {
  double sumSquares = 0;
  fit.maxRelativeError = 0;
  for (const Sample &sample : samples) {
    double residual = fit.predictUs(sample.bytes) - sample.timeUs;
    sumSquares += residual * residual;
    if (sample.timeUs > 0)
      fit.maxRelativeError =
          std::max(fit.maxRelativeError, std::fabs(residual) / sample.timeUs);
  }
  fit.rmsResidualUs = std::sqrt(sumSquares / samples.size());
}

llvm::Expected<LinearFit>
commopt::calibrate::fitLinear(llvm::ArrayRef<Sample> samples, FitError error) {
  if (samples.size() < 2)
    return makeError("a linear fit needs at least two samples");
  for (const Sample &sample : samples)
    if (!std::isfinite(sample.bytes) || !std::isfinite(sample.timeUs) ||
        sample.bytes < 0 || sample.timeUs < 0 ||
        (error == FitError::Relative && sample.timeUs == 0))
      return makeError("samples must be finite and non-negative (and "
                       "positive times for a relative fit)");

  // Weighted least squares: a relative residual r / y is an absolute one
  // weighted by 1 / y^2.
  std::vector<double> weights;
  double totalWeight = 0;
  for (const Sample &sample : samples) {
    weights.push_back(error == FitError::Relative
                          ? 1 / (sample.timeUs * sample.timeUs)
                          : 1.0);
    totalWeight += weights.back();
  }
  // Centred sums: numerically stable for sizes spanning 4 B to 64 MiB.
  double meanX = 0, meanY = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    meanX += weights[i] * samples[i].bytes / totalWeight;
    meanY += weights[i] * samples[i].timeUs / totalWeight;
  }
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    double dx = samples[i].bytes - meanX;
    sxx += weights[i] * dx * dx;
    sxy += weights[i] * dx * (samples[i].timeUs - meanY);
  }
  if (sxx <= 0)
    return makeError("a linear fit needs at least two distinct sizes");

  LinearFit fit;
  fit.slopeUsPerByte = sxy / sxx;
  fit.interceptUs = meanY - fit.slopeUsPerByte * meanX;
  if (fit.interceptUs < 0) {
    // Weighted least squares through the origin: b = sum(w x y) /
    // sum(w x x).
    double sumXY = 0, sumXX = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      sumXY += weights[i] * samples[i].bytes * samples[i].timeUs;
      sumXX += weights[i] * samples[i].bytes * samples[i].bytes;
    }
    fit.interceptUs = 0;
    fit.slopeUsPerByte = sumXY / sumXX;
    fit.interceptClamped = true;
  }
  if (!(fit.slopeUsPerByte > 0))
    return makeError(llvm::formatv("the fitted time per byte is {0:e2} us; "
                                   "time must grow with the message size",
                                   fit.slopeUsPerByte));
  measureResiduals(fit, samples);
  return fit;
}

const LinearFit &PiecewiseFit::lineFor(double bytes) const {
  for (const Piece &piece : pieces)
    if (bytes <= piece.upToBytes)
      return piece.line;
  return pieces.back().line;
}

PiecewiseFit PiecewiseFit::single(const LinearFit &line) {
  PiecewiseFit fit;
  fit.pieces.push_back({std::numeric_limits<double>::infinity(), line});
  fit.maxRelativeError = line.maxRelativeError;
  return fit;
}

llvm::Expected<PiecewiseFit>
commopt::calibrate::fitPiecewise(llvm::ArrayRef<Sample> unsorted,
                                 unsigned maxPieces, double tolerance,
                                 unsigned minSamplesPerPiece) {
  if (maxPieces < 1 || minSamplesPerPiece < 2)
    return makeError("a piecewise fit needs at least one piece of at least "
                     "two samples");
  std::vector<Sample> samples(unsorted.begin(), unsorted.end());
  std::stable_sort(
      samples.begin(), samples.end(),
      [](const Sample &a, const Sample &b) { return a.bytes < b.bytes; });
  const size_t n = samples.size();
  // line[i][j]: the relative fit of samples i..j, when they may form a
  // piece; cost[i][j] its sum of squared relative residuals.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<std::optional<LinearFit>>> line(
      n, std::vector<std::optional<LinearFit>>(n));
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, kNone));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + minSamplesPerPiece - 1; j < n; ++j) {
      llvm::ArrayRef<Sample> range(samples.data() + i, j - i + 1);
      llvm::Expected<LinearFit> fit = fitLinear(range, FitError::Relative);
      if (!fit) {
        llvm::consumeError(fit.takeError());
        continue;
      }
      double sum = 0;
      for (const Sample &sample : range) {
        double relative =
            (fit->predictUs(sample.bytes) - sample.timeUs) / sample.timeUs;
        sum += relative * relative;
      }
      line[i][j] = *fit;
      cost[i][j] = sum;
    }

  // best[k][j]: the least cost of samples 0..j in k + 1 pieces, the last
  // starting at start[k][j].
  std::vector<std::vector<double>> best(maxPieces,
                                        std::vector<double>(n, kNone));
  std::vector<std::vector<size_t>> start(maxPieces, std::vector<size_t>(n));
  for (size_t j = 0; j < n; ++j)
    best[0][j] = cost[0][j];
  for (unsigned k = 1; k < maxPieces; ++k)
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 1; i <= j; ++i)
        if (best[k - 1][i - 1] + cost[i][j] < best[k][j]) {
          best[k][j] = best[k - 1][i - 1] + cost[i][j];
          start[k][j] = i;
        }

  std::optional<PiecewiseFit> chosen;
  for (unsigned k = 0; k < maxPieces; ++k) {
    if (best[k][n - 1] == kNone)
      continue;
    PiecewiseFit fit;
    for (size_t end = n - 1, pieces = k + 1; pieces > 0; --pieces) {
      size_t begin = pieces == 1 ? 0 : start[pieces - 1][end];
      fit.pieces.push_back({0, *line[begin][end]});
      fit.pieces.back().upToBytes =
          end + 1 == n ? std::numeric_limits<double>::infinity()
                       : std::sqrt(samples[end].bytes * samples[end + 1].bytes);
      if (begin == 0)
        break;
      end = begin - 1;
    }
    std::reverse(fit.pieces.begin(), fit.pieces.end());
    for (const Sample &sample : samples)
      fit.maxRelativeError =
          std::max(fit.maxRelativeError,
                   std::fabs(fit.predictUs(sample.bytes) - sample.timeUs) /
                       sample.timeUs);
    bool better =
        !chosen || best[k][n - 1] < best[chosen->pieces.size() - 1][n - 1];
    if (chosen && chosen->maxRelativeError <= tolerance)
      better = false;
    if (better)
      chosen = std::move(fit);
  }
  if (!chosen && n >= minSamplesPerPiece) {
    // Every partition failed, the one of a single piece too: its error
    // says why (most often, times that do not grow with the size, where
    // noise outweighs the transfer).
    llvm::Expected<LinearFit> whole = fitLinear(samples, FitError::Relative);
    if (!whole)
      return makeError(llvm::formatv(
          "no piecewise fit of the {0} samples ({1} to {2} bytes): {3}", n,
          static_cast<int64_t>(samples.front().bytes),
          static_cast<int64_t>(samples.back().bytes),
          llvm::toString(whole.takeError())));
  }
  if (!chosen)
    return makeError(llvm::formatv(
        "a piecewise fit needs at least {0} samples of distinct sizes with "
        "positive times",
        minSamplesPerPiece));
  return std::move(*chosen);
}

llvm::Expected<LinkLevel>
commopt::calibrate::ringLevelFromFit(const LinearFit &fit, int64_t ranks) {
  if (ranks < 2)
    return makeError(llvm::formatv(
        "a ring needs at least 2 ranks to calibrate, not {0}", ranks));
  double steps = 2.0 * (ranks - 1);
  LinkLevel level;
  level.alphaUs = fit.interceptUs / steps;
  level.betaUsPerByte =
      LinkLevel::representableBeta(fit.slopeUsPerByte * ranks / steps);
  return level;
}

llvm::Expected<LinkLevel>
commopt::calibrate::ringLevelFromFit(const PiecewiseFit &fit, int64_t ranks) {
  llvm::Expected<LinkLevel> level =
      ringLevelFromFit(fit.pieces.back().line, ranks);
  if (!level)
    return level.takeError();
  for (const PiecewiseFit::Piece &piece :
       llvm::ArrayRef(fit.pieces).drop_back()) {
    llvm::Expected<LinkLevel> regime = ringLevelFromFit(piece.line, ranks);
    if (!regime)
      return regime.takeError();
    level->regimes.push_back(
        {piece.upToBytes, regime->alphaUs, regime->betaUsPerByte});
  }
  return level;
}

llvm::Expected<ClusterModel> commopt::calibrate::makeCalibratedCluster(
    const LinearFit &fit, int64_t ranks, int64_t ranksPerNode, std::string name,
    std::string source, const LinearFit *nodeFit) {
  std::optional<PiecewiseFit> node;
  if (nodeFit)
    node = PiecewiseFit::single(*nodeFit);
  return makeCalibratedCluster(PiecewiseFit::single(fit), ranks, ranksPerNode,
                               std::move(name), std::move(source),
                               node ? &*node : nullptr);
}

llvm::Expected<ClusterModel> commopt::calibrate::makeCalibratedCluster(
    const PiecewiseFit &fit, int64_t ranks, int64_t ranksPerNode,
    std::string name, std::string source, const PiecewiseFit *nodeFit) {
  llvm::Expected<LinkLevel> level = ringLevelFromFit(fit, ranks);
  if (!level)
    return level.takeError();
  const bool twoLevels =
      ranksPerNode > 1 && ranksPerNode < ranks && ranks % ranksPerNode == 0;
  LinkLevel intra = *level;
  if (nodeFit && twoLevels) {
    llvm::Expected<LinkLevel> node = ringLevelFromFit(*nodeFit, ranksPerNode);
    if (!node)
      return node.takeError();
    intra = *node;
  }
  ClusterModel cluster;
  cluster.name = std::move(name);
  cluster.source = std::move(source);
  cluster.ranks = ranks;
  cluster.ranksPerNode = ranksPerNode;
  cluster.algorithm = AllreduceAlgorithm::Ring;
  cluster.channels = 1;
  cluster.intra = intra;
  cluster.inter = *level;
  if (llvm::Error error = cluster.verify())
    return std::move(error);
  return cluster;
}

std::vector<int64_t> commopt::calibrate::sweepSizes(int64_t minBytes,
                                                    int64_t maxBytes) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = minBytes; bytes > 0 && bytes < maxBytes; bytes *= 2)
    sizes.push_back(bytes);
  sizes.push_back(maxBytes);
  return sizes;
}

double commopt::calibrate::median(std::vector<double> values) {
  size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  double upper = values[middle];
  if (values.size() % 2 == 1)
    return upper;
  double lower = *std::max_element(values.begin(), values.begin() + middle);
  return (lower + upper) / 2;
}

double commopt::calibrate::fitThroughOrigin(llvm::ArrayRef<Sample> samples) {
  double timesBytes = 0, bytesSquared = 0;
  for (const Sample &sample : samples) {
    timesBytes += sample.timeUs * sample.bytes;
    bytesSquared += sample.bytes * sample.bytes;
  }
  if (bytesSquared == 0)
    return 0;
  return std::max(0.0, timesBytes / bytesSquared);
}

void commopt::calibrate::addRowsByIndex(llvm::ArrayRef<int64_t> indices,
                                        llvm::ArrayRef<float> values,
                                        int64_t width,
                                        std::vector<int64_t> &slots,
                                        std::vector<float> &sums,
                                        std::vector<int64_t> &order) {
  assert(static_cast<int64_t>(values.size()) ==
             static_cast<int64_t>(indices.size()) * width &&
         "a row for each index");
  sums.clear();
  order.clear();
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t index = indices[i];
    const float *row = values.data() + i * width;
    int64_t &slot = slots[index];
    if (slot < 0) {
      slot = static_cast<int64_t>(order.size());
      order.push_back(index);
      sums.insert(sums.end(), row, row + width);
      continue;
    }
    float *sum = sums.data() + slot * width;
    for (int64_t j = 0; j < width; ++j)
      sum[j] += row[j];
  }
  for (int64_t index : order)
    slots[index] = -1;
}

double commopt::calibrate::addRowsByIndexBytes(int64_t rows, int64_t distinct,
                                               int64_t width) {
  const double rowBytes = 4.0 * static_cast<double>(width);
  const double repeats = static_cast<double>(rows - distinct);
  return (static_cast<double>(rows) + static_cast<double>(distinct) +
          2 * repeats) *
             rowBytes +
         16.0 * static_cast<double>(rows);
}
