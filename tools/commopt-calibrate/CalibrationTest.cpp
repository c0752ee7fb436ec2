//===- CalibrationTest.cpp - Tests of the calibration arithmetic ----------===//
//
// The least-squares fit, its conversion to per-step ring alpha and beta, and
// the cluster description, on synthetic data; and (CalibratedFile, run by
// CTest after commopt-calibrate) that a file the tool wrote loads.
//
//===----------------------------------------------------------------------===//

#include "Calibration.h"

#include "CommOpt/Analysis/CollectiveCost.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

using namespace commopt::calibrate;
using mlir::comm::ClusterModel;
using mlir::comm::LinkLevel;

namespace {

std::vector<Sample> linearSamples(double a, double b) {
  std::vector<Sample> samples;
  for (int64_t bytes : sweepSizes(4, int64_t(64) << 20))
    samples.push_back({double(bytes), a + b * bytes});
  return samples;
}

TEST(Calibration, FitRecoversNoiselessLine) {
  // MG-WFBP's 56 Gb IB fit: a = 235.837 us, b = 4.0595e-10 s/B.
  double a = 235.837, b = 4.0595e-4;
  llvm::Expected<LinearFit> fit = fitLinear(linearSamples(a, b));
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_NEAR(fit->interceptUs, a, 1e-6 * a);
  EXPECT_NEAR(fit->slopeUsPerByte, b, 1e-9 * b);
  EXPECT_FALSE(fit->interceptClamped);
  EXPECT_LT(fit->rmsResidualUs, 1e-6);
  EXPECT_LT(fit->maxRelativeError, 1e-9);
}

TEST(Calibration, FitOfNoisyPointsIsTheLeastSquaresLine) {
  // Three points off a line; the normal equations give a = 1, b = 2 exactly
  // for y = {1, 3, 5} + {+1, -2, +1} at x = {0, 1, 2}.
  std::vector<Sample> samples = {{0, 2}, {1, 1}, {2, 6}};
  llvm::Expected<LinearFit> fit = fitLinear(samples);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_NEAR(fit->interceptUs, 1, 1e-12);
  EXPECT_NEAR(fit->slopeUsPerByte, 2, 1e-12);
  EXPECT_NEAR(fit->rmsResidualUs, std::sqrt(6.0 / 3), 1e-12);
}

TEST(Calibration, RelativeFitRecoversNoiselessLine) {
  double a = 80, b = 2.5e-2;
  llvm::Expected<LinearFit> fit =
      fitLinear(linearSamples(a, b), FitError::Relative);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_NEAR(fit->interceptUs, a, 1e-6 * a);
  EXPECT_NEAR(fit->slopeUsPerByte, b, 1e-9 * b);
  EXPECT_FALSE(fit->interceptClamped);
}

TEST(Calibration, RelativeFitWeighsSmallSizes) {
  // Flat at 100 us up to 1 KiB, then 1 us per byte: the absolute fit follows
  // the large sizes and loses the latency, the relative one keeps it.
  std::vector<Sample> samples;
  for (int64_t bytes : sweepSizes(4, int64_t(1) << 20))
    samples.push_back({double(bytes), std::max(100.0, double(bytes) / 10)});
  llvm::Expected<LinearFit> absolute = fitLinear(samples);
  llvm::Expected<LinearFit> relative = fitLinear(samples, FitError::Relative);
  ASSERT_TRUE(absolute && relative);
  auto relativeSquares = [&](const LinearFit &fit) {
    double sum = 0;
    for (const Sample &sample : samples) {
      double r = (fit.predictUs(sample.bytes) - sample.timeUs) / sample.timeUs;
      sum += r * r;
    }
    return sum;
  };
  EXPECT_LT(relativeSquares(*relative), relativeSquares(*absolute));
  EXPECT_GT(relative->interceptUs, 50);
}

TEST(Calibration, NegativeInterceptIsClampedToTheOrigin) {
  std::vector<Sample> samples = {{10, 5}, {20, 20}, {30, 35}};
  llvm::Expected<LinearFit> fit = fitLinear(samples);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  EXPECT_TRUE(fit->interceptClamped);
  EXPECT_EQ(fit->interceptUs, 0);
  // sum(x y) / sum(x x) = (50 + 400 + 1050) / (100 + 400 + 900).
  EXPECT_NEAR(fit->slopeUsPerByte, 1500.0 / 1400.0, 1e-12);
}

TEST(Calibration, FitRejectsDegenerateInput) {
  EXPECT_FALSE(bool(fitLinear({{4, 1}})));
  llvm::consumeError(fitLinear({{4, 1}}).takeError());
  llvm::Expected<LinearFit> sameSize = fitLinear({{4, 1}, {4, 2}});
  ASSERT_FALSE(bool(sameSize));
  EXPECT_NE(llvm::toString(sameSize.takeError()).find("two distinct sizes"),
            std::string::npos);
  llvm::Expected<LinearFit> shrinking = fitLinear({{4, 10}, {8, 1}});
  ASSERT_FALSE(bool(shrinking));
  llvm::consumeError(shrinking.takeError());
}

TEST(Calibration, WireCostIsTheSlopeThroughTheOrigin) {
  // Noiseless: the slope itself.
  EXPECT_DOUBLE_EQ(fitThroughOrigin({{1000, 2}, {4000, 8}, {1e6, 2000}}),
                   0.002);
  // Noisy: sum(t n) / sum(n^2) = (1 * 10 + 3 * 20) / (100 + 400) = 0.14.
  EXPECT_DOUBLE_EQ(fitThroughOrigin({{10, 1}, {20, 3}}), 0.14);
  // A wire that measured faster than its model costs nothing, and so does
  // no measurement.
  EXPECT_EQ(fitThroughOrigin({{1000, -5}, {2000, -1}}), 0.0);
  EXPECT_EQ(fitThroughOrigin({}), 0.0);
}

TEST(Calibration, WireCostRoundTripsThroughTheClusterDescription) {
  ClusterModel cluster;
  cluster.ranks = 4;
  cluster.intra.alphaUs = cluster.inter.alphaUs = 10;
  cluster.intra.betaUsPerByte = cluster.inter.betaUsPerByte = 0.008;
  cluster.wireUsPerByte = 7.3e-4;
  std::string text = llvm::formatv("{0}", cluster.toJSON()).str();
  EXPECT_NE(text.find("\"wire_s_per_byte\":7.29999"), std::string::npos)
      << text;
  llvm::Expected<ClusterModel> read = ClusterModel::fromJSON(text);
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(*read, cluster);
  // It prices what a 16-bit wire adds per narrowed byte.
  EXPECT_DOUBLE_EQ(mlir::comm::getWireCostUs(*read, 1e6), 730.0);
  // Without it, nothing is added, and nothing is written.
  cluster.wireUsPerByte = 0;
  EXPECT_EQ(llvm::formatv("{0}", cluster.toJSON()).str().find("wire_s"),
            std::string::npos);
}

TEST(Calibration, RingConversionIsTheInverseOfTheRingFormula) {
  // The docs' worked example: MG-WFBP's 16-worker 56 Gb IB fit gives alpha
  // 7.861 us and beta 2.1651e-10 s/B (docs/CostModel.md, section 5).
  LinearFit fit;
  fit.interceptUs = 235.837;
  fit.slopeUsPerByte = 4.0595e-4;
  llvm::Expected<mlir::comm::LinkLevel> level = ringLevelFromFit(fit, 16);
  ASSERT_TRUE(bool(level)) << llvm::toString(level.takeError());
  EXPECT_NEAR(level->alphaUs, 235.837 / 30, 1e-12);
  EXPECT_NEAR(level->alphaUs, 7.861, 1e-3);
  EXPECT_NEAR(level->betaUsPerByte * 1e-6, 2.1651e-10, 1e-14);

  llvm::Expected<mlir::comm::LinkLevel> one = ringLevelFromFit(fit, 1);
  ASSERT_FALSE(bool(one));
  llvm::consumeError(one.takeError());
}

TEST(Calibration, ClusterReproducesTheFitThroughTheCostModel) {
  double a = 120, b = 8e-3; // 1 Gbit/s-like
  llvm::Expected<LinearFit> fit = fitLinear(linearSamples(a, b));
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  for (int64_t ranks : {2, 4, 16}) {
    llvm::Expected<ClusterModel> cluster =
        makeCalibratedCluster(*fit, ranks, 1, "test", "synthetic");
    ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
    for (double bytes : {4.0, 65536.0, 67108864.0})
      EXPECT_NEAR(mlir::comm::allreduceCost(*cluster, bytes).totalUs(),
                  a + b * bytes, 1e-9 * (a + b * bytes))
          << ranks << " ranks, " << bytes << " bytes";
  }
}

/// A sweep whose small messages take another transport's path: 30 us +
/// 1e-3 us/B up to 64 KiB, 200 us + 8e-3 us/B above (the ring from there).
std::vector<Sample> twoRegimeSamples() {
  std::vector<Sample> samples;
  for (int64_t bytes : sweepSizes(4, int64_t(64) << 20))
    samples.push_back({double(bytes), bytes <= 65536 ? 30 + 1e-3 * bytes
                                                     : 200 + 8e-3 * bytes});
  return samples;
}

TEST(Calibration, PiecewiseFitFindsTheBreakpoint) {
  std::vector<Sample> samples = twoRegimeSamples();
  // One line misses the small sizes by far.
  llvm::Expected<LinearFit> line = fitLinear(samples);
  ASSERT_TRUE(bool(line)) << llvm::toString(line.takeError());
  EXPECT_GT(line->maxRelativeError, 1.0);
  llvm::Expected<PiecewiseFit> fit = fitPiecewise(samples, 4);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  // Two pieces suffice, split between 64 KiB and 128 KiB (at their
  // geometric mean), each the exact line of its range.
  ASSERT_EQ(fit->pieces.size(), 2u);
  EXPECT_DOUBLE_EQ(fit->pieces[0].upToBytes, std::sqrt(65536.0 * 131072.0));
  EXPECT_TRUE(std::isinf(fit->pieces[1].upToBytes));
  EXPECT_NEAR(fit->pieces[0].line.interceptUs, 30, 1e-6);
  EXPECT_NEAR(fit->pieces[0].line.slopeUsPerByte, 1e-3, 1e-12);
  EXPECT_NEAR(fit->pieces[1].line.interceptUs, 200, 1e-6);
  EXPECT_NEAR(fit->pieces[1].line.slopeUsPerByte, 8e-3, 1e-12);
  EXPECT_LT(fit->maxRelativeError, 1e-9);
  EXPECT_EQ(&fit->lineFor(65536), &fit->pieces[0].line);
  EXPECT_EQ(&fit->lineFor(131072), &fit->pieces[1].line);
}

TEST(Calibration, PiecewiseFitKeepsOneLineWhereOneFits) {
  llvm::Expected<PiecewiseFit> fit = fitPiecewise(linearSamples(120, 8e-3), 4);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  ASSERT_EQ(fit->pieces.size(), 1u);
  EXPECT_NEAR(fit->pieces[0].line.interceptUs, 120, 1e-6);
  // Too few samples for a piece of three is an error, as is no piece.
  std::vector<Sample> two = {{4, 10}, {8, 11}};
  llvm::Expected<PiecewiseFit> short_ = fitPiecewise(two, 4);
  ASSERT_FALSE(bool(short_));
  EXPECT_NE(llvm::toString(short_.takeError()).find("at least 3 samples"),
            std::string::npos);
  llvm::Expected<PiecewiseFit> none = fitPiecewise(twoRegimeSamples(), 0);
  ASSERT_FALSE(bool(none));
  llvm::consumeError(none.takeError());
}

TEST(Calibration, PiecewiseFitSaysWhyNoLineFits) {
  // Small messages timed no faster than large ones, as noise can leave a
  // sweep that ends too small: no piece's time grows with the size.
  std::vector<Sample> noise = {{4, 90}, {64, 80}, {1024, 70}, {16384, 60}};
  llvm::Expected<PiecewiseFit> fit = fitPiecewise(noise, 4);
  ASSERT_FALSE(bool(fit));
  std::string message = llvm::toString(fit.takeError());
  EXPECT_NE(message.find("no piecewise fit of the 4 samples (4 to 16384 "
                         "bytes)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("time must grow with the message size"),
            std::string::npos)
      << message;
}

TEST(Calibration, PiecewiseClusterReproducesEachPiece) {
  llvm::Expected<PiecewiseFit> fit = fitPiecewise(twoRegimeSamples(), 4);
  ASSERT_TRUE(bool(fit)) << llvm::toString(fit.takeError());
  for (int64_t ranks : {2, 4, 16}) {
    llvm::Expected<ClusterModel> cluster =
        makeCalibratedCluster(*fit, ranks, 1, "test", "synthetic");
    ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
    ASSERT_EQ(cluster->inter.regimes.size(), 1u);
    for (const Sample &sample : twoRegimeSamples())
      EXPECT_NEAR(mlir::comm::allreduceCost(*cluster, sample.bytes).totalUs(),
                  sample.timeUs, 1e-9 * sample.timeUs)
          << ranks << " ranks, " << sample.bytes << " bytes";
    // Written and read back, it is the same cluster.
    llvm::Expected<ClusterModel> loaded =
        ClusterModel::fromJSON(llvm::formatv("{0}", cluster->toJSON()).str());
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    EXPECT_EQ(*loaded, *cluster);
  }
}

TEST(Calibration, WrittenJsonLoadsBack) {
  LinearFit fit;
  fit.interceptUs = 300;
  fit.slopeUsPerByte = 1e-2;
  llvm::Expected<ClusterModel> cluster =
      makeCalibratedCluster(fit, 4, 2, "emulated", "synthetic fit");
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  std::string text = llvm::formatv("{0:2}", cluster->toJSON());
  llvm::Expected<ClusterModel> loaded = ClusterModel::fromJSON(text);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError()) << "\n"
                            << text;
  EXPECT_EQ(*loaded, *cluster);
  EXPECT_EQ(loaded->ranks, 4);
  EXPECT_EQ(loaded->ranksPerNode, 2);
  EXPECT_NE(text.find("\"commopt-cluster\""), std::string::npos);

  // ranks_per_node must divide ranks.
  llvm::Expected<ClusterModel> bad =
      makeCalibratedCluster(fit, 4, 3, "bad", "synthetic fit");
  ASSERT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

TEST(Calibration, NodeFitGivesTheIntraNodeLevel) {
  LinearFit flat, node;
  flat.interceptUs = 300;
  flat.slopeUsPerByte = 1.2e-2; // a ring over 2 nodes of 2 at ~1 Gbit/s
  node.interceptUs = 20;
  node.slopeUsPerByte = 4e-4; // a ring within a node, through memory
  llvm::Expected<ClusterModel> cluster =
      makeCalibratedCluster(flat, 4, 2, "two-level", "synthetic", &node);
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  // Each level reproduces the ring it was fitted on: the flat ring over all
  // four ranks (inter-node level) and a ring over one node's two ranks.
  llvm::Expected<LinkLevel> inter = ringLevelFromFit(flat, 4);
  llvm::Expected<LinkLevel> intra = ringLevelFromFit(node, 2);
  ASSERT_TRUE(bool(inter) && bool(intra));
  EXPECT_EQ(cluster->inter.alphaUs, inter->alphaUs);
  EXPECT_EQ(cluster->inter.betaUsPerByte, inter->betaUsPerByte);
  EXPECT_EQ(cluster->intra.alphaUs, intra->alphaUs);
  EXPECT_EQ(cluster->intra.betaUsPerByte, intra->betaUsPerByte);
  ClusterModel node2 = *cluster;
  node2.ranks = 2;
  node2.ranksPerNode = 2;
  for (double bytes : {4.0, 67108864.0})
    EXPECT_NEAR(mlir::comm::allreduceCost(node2, bytes).totalUs(),
                node.predictUs(bytes), 1e-9 * node.predictUs(bytes));
  // Hierarchical: the node ring's halves around the inter-node ring over
  // the two nodes, each priced on its level.
  double bytes = 1e8;
  double expected =
      2 * (node.interceptUs / 2 + bytes / 2 * intra->betaUsPerByte) +
      2 * (inter->alphaUs + bytes / 2 * inter->betaUsPerByte);
  EXPECT_NEAR(mlir::comm::allreduceCost(
                  *cluster, bytes, mlir::comm::AllreduceAlgorithm::Hierarchical)
                  .totalUs(),
              expected, 1e-9 * expected);

  // One node, or one rank per node: there is no second level to fit.
  llvm::Expected<ClusterModel> flatOnly =
      makeCalibratedCluster(flat, 4, 1, "flat", "synthetic", &node);
  ASSERT_TRUE(bool(flatOnly));
  EXPECT_EQ(flatOnly->intra, flatOnly->inter);
}

TEST(Calibration, SweepSizesAndMedian) {
  EXPECT_EQ(sweepSizes(4, 64), (std::vector<int64_t>{4, 8, 16, 32, 64}));
  EXPECT_EQ(sweepSizes(4, 40), (std::vector<int64_t>{4, 8, 16, 32, 40}));
  EXPECT_EQ(sweepSizes(8, 8), (std::vector<int64_t>{8}));
  EXPECT_EQ(sweepSizes(4, int64_t(64) << 20).size(), 25u);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

// Run by CTest after commopt-calibrate-np2 wrote the file; skipped otherwise.
TEST(Calibration, AddRowsByIndex) {
  // Rows of 2 values: index 5 three times, 2 once, 0 twice.
  const std::vector<int64_t> indices = {5, 2, 5, 0, 5, 0};
  const std::vector<float> values = {1, 2, 3, 4, 10, 20, 5, 6, 100, 200, 7, 8};
  std::vector<int64_t> slots(8, -1), order;
  std::vector<float> sums = {99};
  addRowsByIndex(indices, values, 2, slots, sums, order);
  EXPECT_EQ(order, (std::vector<int64_t>{5, 2, 0}));
  EXPECT_EQ(sums, (std::vector<float>{111, 222, 3, 4, 12, 14}));
  // The index table is clear again for the next pass.
  EXPECT_EQ(slots, std::vector<int64_t>(8, -1));
  addRowsByIndex({}, {}, 2, slots, sums, order);
  EXPECT_TRUE(sums.empty());
  EXPECT_TRUE(order.empty());
  // Those 6 rows of 8 bytes, 3 of them repeats: 6 read, 3 written first,
  // 3 read and written again; 16 bytes of index table each.
  EXPECT_DOUBLE_EQ(addRowsByIndexBytes(6, 3, 2), (6 + 3 + 6) * 8 + 6 * 16);
}

TEST(CalibratedFile, Loads) {
  const char *path = std::getenv("COMMOPT_CALIBRATED_JSON");
  if (!path)
    GTEST_SKIP() << "COMMOPT_CALIBRATED_JSON is not set";
  llvm::Expected<ClusterModel> cluster = ClusterModel::loadFile(path);
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  EXPECT_EQ(cluster->ranks, 2);
  EXPECT_NE(cluster->source.find("commopt-calibrate"), std::string::npos);
  // Measured on the MPI backend (COMMRT_BACKEND=mpi in the ctest), whose
  // own collectives carry the sparse exchanges.
  EXPECT_EQ(cluster->backend, mlir::comm::CollectiveBackend::Mpi);
}

} // namespace
