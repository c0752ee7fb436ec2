//===- CollectiveCostTest.cpp - Tests of the collective cost formulas -----===//
//
// Every formula against hand-computed values. The test cluster has round
// figures: p = 16 ranks, q = 4 per node, m = 4 nodes; inter-node a = 10 us,
// b = 1e-3 us/B (1 GB/s); intra-node a = 1 us, b = 1e-4 us/B (10 GB/s).
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/CollectiveCost.h"

#include "gtest/gtest.h"

#include <cmath>
#include <iterator>
#include <string>

using namespace mlir::comm;

namespace {

/// The test cluster, or with `ranks` other than 16 its first ranks.
ClusterModel testCluster(AllreduceAlgorithm algorithm, int64_t ranks = 16) {
  ClusterModel cluster;
  cluster.name = "test";
  cluster.ranks = ranks;
  cluster.ranksPerNode = 4;
  cluster.intra = LinkLevel{1.0, 1e-4};
  cluster.inter = LinkLevel{10.0, 1e-3};
  cluster.algorithm = algorithm;
  return cluster;
}

/// Checks both parts of a cost.
void expectCost(const CollectiveCost &cost, double latencyUs,
                double bandwidthUs) {
  EXPECT_NEAR(cost.latencyUs, latencyUs, 1e-9 * std::max(1.0, latencyUs));
  EXPECT_NEAR(cost.bandwidthUs, bandwidthUs, 1e-9 * std::max(1.0, bandwidthUs));
}

constexpr double kBytes = 1e6;

constexpr AllreduceAlgorithm kAlgorithms[] = {AllreduceAlgorithm::Ring,
                                              AllreduceAlgorithm::Tree,
                                              AllreduceAlgorithm::Hierarchical};

/// The latency and bandwidth parts of a cost, in microseconds.
struct Parts {
  double latencyUs, bandwidthUs;
};

/// Checks `costOf(cluster, kBytes)` on the test cluster under each algorithm
/// of kAlgorithms, in order, against `expected`.
void expectCostPerAlgorithm(CollectiveCost (*costOf)(const ClusterModel &,
                                                     double),
                            const Parts (&expected)[std::size(kAlgorithms)]) {
  for (size_t i = 0; i < std::size(kAlgorithms); ++i) {
    SCOPED_TRACE("algorithm " + std::to_string(i));
    expectCost(costOf(testCluster(kAlgorithms[i]), kBytes),
               expected[i].latencyUs, expected[i].bandwidthUs);
  }
}

TEST(CollectiveCost, RingAllreduce) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  // 2(p-1) a = 2*15*10 = 300; 2(p-1)/p n b = 2*15/16 * 1e6 * 1e-3 = 1875.
  CollectiveCost cost = allreduceCost(cluster, kBytes);
  expectCost(cost, 300, 1875);
  EXPECT_NEAR(cost.totalUs(), 2175, 1e-9);
}

TEST(CollectiveCost, SentBytes) {
  // What each rank sends, whatever the links' speeds: a ring allreduce
  // 2(p-1)/p n, a tree 2 n; a ring allgather (p-1)/p N; the hierarchical
  // allreduce its intra-node passes' 2(q-1)/q n and the inter-node ring's
  // 2(m-1)/m n.
  EXPECT_DOUBLE_EQ(
      allreduceCost(testCluster(AllreduceAlgorithm::Ring), kBytes).sentBytes,
      2.0 * 15 / 16 * kBytes);
  EXPECT_DOUBLE_EQ(
      allreduceCost(testCluster(AllreduceAlgorithm::Tree), kBytes).sentBytes,
      2.0 * kBytes);
  EXPECT_DOUBLE_EQ(
      allgatherCost(testCluster(AllreduceAlgorithm::Ring), kBytes).sentBytes,
      15.0 / 16 * kBytes);
  EXPECT_DOUBLE_EQ(
      allreduceCost(testCluster(AllreduceAlgorithm::Hierarchical), kBytes)
          .sentBytes,
      2.0 * 3 / 4 * kBytes + 2.0 * 3 / 4 * kBytes);
  // One rank sends nothing.
  EXPECT_EQ(
      allreduceCost(testCluster(AllreduceAlgorithm::Ring, 1), kBytes).sentBytes,
      0.0);
}

TEST(CollectiveCost, TreeAllreduce) {
  // 2 ceil(lg 16) a = 2*4*10 = 80; 2 n b = 2 * 1e6 * 1e-3 = 2000.
  expectCost(allreduceCost(testCluster(AllreduceAlgorithm::Tree), kBytes), 80,
             2000);
  // ceil(lg 12) = 4: 2*4*10 = 80; with p = 12 the bandwidth part is still
  // 2 n b = 2000.
  expectCost(allreduceCost(testCluster(AllreduceAlgorithm::Tree, 12), kBytes),
             80, 2000);
}

TEST(CollectiveCost, HierarchicalAllreduce) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Hierarchical);
  // Intra: 2(q-1) ai = 2*3*1 = 6; 2(q-1)/q n bi = 2*3/4 * 1e6 * 1e-4 = 150.
  // Inter: 2(m-1) ae = 2*3*10 = 60; 2(m-1)/m n be = 2*3/4 * 1e6 * 1e-3 =
  // 1500. Total: 66 + 1650 = 1716.
  expectCost(allreduceCost(cluster, kBytes), 66, 1650);
}

TEST(CollectiveCost, ExplicitAlgorithmOverridesCluster) {
  expectCost(allreduceCost(testCluster(AllreduceAlgorithm::Ring), kBytes,
                           AllreduceAlgorithm::Hierarchical),
             66, 1650);
}

TEST(CollectiveCost, SingleNodeUsesIntraLevel) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring, 4);
  // Ring over 4 ranks of one node: 2*3*1 = 6; 2*3/4 * 1e6 * 1e-4 = 150.
  expectCost(allreduceCost(cluster, kBytes), 6, 150);
  // Hierarchical on one node is the intra-node ring.
  expectCost(allreduceCost(cluster, kBytes, AllreduceAlgorithm::Hierarchical),
             6, 150);
}

TEST(CollectiveCost, OneRankPerNodeHierarchicalIsFlatRing) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Hierarchical);
  cluster.ranksPerNode = 1;
  // m = 16: 2*15*10 = 300; 2*15/16 * 1e6 * 1e-3 = 1875, as the ring.
  expectCost(allreduceCost(cluster, kBytes), 300, 1875);
}

TEST(CollectiveCost, Allgather) {
  // Ring: (p-1) a = 150; (p-1)/p N b = 15/16 * 1e6 * 1e-3 = 937.5.
  // Tree (recursive doubling): ceil(lg 16) a = 40; bandwidth as the ring.
  // Hierarchical: intra (q-1) ai = 3, (q-1)/q N bi = 3/4 * 100 = 75; inter
  // (m-1) ae = 30, (m-1)/m N be = 3/4 * 1000 = 750. 33 + 825.
  expectCostPerAlgorithm(allgatherCost, {{150, 937.5}, {40, 937.5}, {33, 825}});
}

TEST(CollectiveCost, ReduceScatterMatchesAllgather) {
  for (AllreduceAlgorithm algorithm : kAlgorithms) {
    ClusterModel cluster = testCluster(algorithm);
    CollectiveCost rs = reduceScatterCost(cluster, kBytes);
    CollectiveCost ag = allgatherCost(cluster, kBytes);
    EXPECT_EQ(rs.latencyUs, ag.latencyUs);
    EXPECT_EQ(rs.bandwidthUs, ag.bandwidthUs);
  }
  // Ring allreduce is exactly reduce-scatter + allgather.
  ClusterModel ring = testCluster(AllreduceAlgorithm::Ring);
  EXPECT_DOUBLE_EQ(
      allreduceCost(ring, kBytes).totalUs(),
      (reduceScatterCost(ring, kBytes) + allgatherCost(ring, kBytes))
          .totalUs());
}

TEST(CollectiveCost, AllToAll) {
  // (p-1) ae = 15*10 = 150. Node link: q (m-1)/m n be = 4 * 3/4 * 1e6 *
  // 1e-3 = 3000; local peers (q-1)/p n bi = 3/16 * 1e6 * 1e-4 = 18.75; the
  // larger one counts: 3000.
  expectCost(allToAllCost(testCluster(AllreduceAlgorithm::Ring), kBytes), 150,
             3000);
  // One node of 4: (p-1) ai = 3; (p-1)/p n bi = 3/4 * 100 = 75.
  expectCost(allToAllCost(testCluster(AllreduceAlgorithm::Ring, 4), kBytes), 3,
             75);
}

TEST(CollectiveCost, Broadcast) {
  // Ring (scatter + allgather): (ceil(lg 16) + 15) a = 19*10 = 190;
  // 2 (p-1)/p n b = 2*15/16 * 1000 = 1875.
  // Binomial tree: ceil(lg 16) (a + n b) = 4*10 + 4*1000.
  // Hierarchical: inter over m = 4: (2 + 3)*10 = 50, 2*3/4 * 1000 = 1500;
  // intra over q = 4: (2 + 3)*1 = 5, 2*3/4 * 100 = 150. 55 + 1650.
  expectCostPerAlgorithm(broadcastCost, {{190, 1875}, {40, 4000}, {55, 1650}});
}

TEST(CollectiveCost, OneRankCostsNothing) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  cluster.ranks = 1;
  cluster.ranksPerNode = 1;
  SparseGradient gradient;
  gradient.denseElements = 1000;
  gradient.density = 0.1;
  for (AllreduceAlgorithm algorithm : kAlgorithms) {
    cluster.algorithm = algorithm;
    expectCost(allreduceCost(cluster, kBytes), 0, 0);
    expectCost(allgatherCost(cluster, kBytes), 0, 0);
    expectCost(reduceScatterCost(cluster, kBytes), 0, 0);
    expectCost(allToAllCost(cluster, kBytes), 0, 0);
    expectCost(broadcastCost(cluster, kBytes), 0, 0);
    for (SparseExchangeScheme scheme :
         {SparseExchangeScheme::Allgather, SparseExchangeScheme::Hash,
          SparseExchangeScheme::Chunk})
      expectCost(sparseAllreduceCost(cluster, scheme, gradient), 0, 0);
  }
}

TEST(CollectiveCost, WirePrecisionHalvesBandwidthPart) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  CollectiveCost f32 = allreduceCost(cluster, 4 * 1e6);
  CollectiveCost f16 = allreduceCost(cluster, 2 * 1e6);
  EXPECT_EQ(f16.latencyUs, f32.latencyUs);
  EXPECT_DOUBLE_EQ(2 * f16.bandwidthUs, f32.bandwidthUs);
}

/// The MG-WFBP presets reproduce MG-WFBP's fitted allreduce times a + b M.
TEST(CollectiveCost, MgwfbpPresetsReproduceFits) {
  ClusterModel ib = llvm::cantFail(ClusterModel::preset("ib56-16"));
  // a + b M = 235.8368 us + 4.0595e-10 s/B * 1e6 B = 235.8368 + 405.9479.
  EXPECT_NEAR(allreduceCost(ib, 1e6).totalUs(),
              235.83677659915685 + 405.94787739537565, 1e-6);
  ClusterModel eth = llvm::cantFail(ClusterModel::preset("ethernet10-16"));
  // 908.0981 us + 7.3957e-10 s/B * 1e6 B = 908.0981 + 739.5651.
  EXPECT_NEAR(allreduceCost(eth, 1e6).totalUs(),
              908.0981007148093 + 739.5651186836712, 1e-6);
}

/// Sparse gradient of 1e6 f32 elements, density 1%, int32 indices:
/// k = 1e4 selected per rank, 8 bytes per pair.
SparseGradient testGradient() {
  SparseGradient gradient;
  gradient.denseElements = 1000000;
  gradient.density = 0.01;
  gradient.valueBytes = 4;
  gradient.indexBytes = 4;
  return gradient;
}

TEST(CollectiveCost, SparseAllgather) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  // The runtime's three allgathers: the 16 counts (128 B), the p k = 1.6e5
  // indices (6.4e5 B) and values (6.4e5 B). Each 15*10 = 150 of latency and
  // 15/16 of its bytes * 1e-3: 450; 15/16 * 1280128 * 1e-3 = 1200.12.
  expectCost(sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather,
                                 testGradient()),
             450, 1200.12);
}

TEST(CollectiveCost, SparseHash) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  SparseGradient gradient = testGradient();
  gradient.reducedDensity = 0.1;
  // The total count, a ring allreduce of 8 B: 2*15*10 = 300;
  // 2 * 15/16 * 8 * 1e-3 = 0.015. Three all-to-alls (the counts, 16 * 4 =
  // 64 B per rank; the k indices and the k values, 4e4 B each): 150 each;
  // max(4 * 3/4 * b * 1e-3, 3/16 * b * 1e-4) = 3e-3 b: 0.192 + 120 + 120.
  // The owners' n u = 1e5 pairs, gathered as the allgather exchange gathers
  // (counts, indices, values): 450; 15/16 * (128 + 8e5) * 1e-3 = 750.12.
  expectCost(sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, gradient),
             300 + 450 + 450, 0.015 + 0.192 + 240 + 750.12);
  // The owners send pairs however dense the result: u = 0.9 gathers 9e5
  // pairs, 15/16 * (128 + 7.2e6) * 1e-3 = 6750.12.
  gradient.reducedDensity = 0.9;
  expectCost(sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, gradient),
             1200, 0.015 + 0.192 + 240 + 6750.12);
}

TEST(CollectiveCost, SparseHashDefaultsToIndependentUnion) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  SparseGradient implicit = testGradient();
  SparseGradient explicitUnion = testGradient();
  explicitUnion.reducedDensity = 1 - std::pow(0.99, 16);
  EXPECT_NEAR(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, implicit)
          .totalUs(),
      sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, explicitUnion)
          .totalUs(),
      1e-9);
}

TEST(CollectiveCost, UnionDensity) {
  // 1 - (1 - 0.5)^2 = 0.75.
  EXPECT_DOUBLE_EQ(unionDensity(0.5, 2), 0.75);
  EXPECT_DOUBLE_EQ(unionDensity(1.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(unionDensity(0.25, 1), 0.25);
  // Tiny densities: 1 - (1 - 1e-9)^1000 ~= 1e-6.
  EXPECT_NEAR(unionDensity(1e-9, 1000), 1e-6, 1e-12);
}

TEST(CollectiveCost, SparseChunk) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  SparseGradient gradient = testGradient();
  gradient.chunkElements = 1000;
  // C = 1e6 / 1000 = 1000 chunks. Their norms (8 B each, 8000 B) are
  // reduced to rank 0, priced as a broadcast: (lg 16 + 15) * 10 = 190;
  // 2 * 15/16 * 8000 * 1e-3 = 15. The ceil(0.01 * 1000) = 10 chosen
  // indices (80 B) are broadcast: 190 + 0.15. The 1e4 chosen elements
  // (4e4 B) are allreduced: 300 + 2 * 15/16 * 4e4 * 1e-3 = 300 + 75.
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Chunk, gradient), 680,
      15 + 0.15 + 75);
  // A partial last chunk: 2500 elements in chunks of 1000 -> C = 3; density
  // 1 selects all 3 chunks but only 2500 elements = 1e4 B travel: norms and
  // indices 24 B each, 190 + 0.045 twice; values 300 + 1.875 * 10.
  gradient.denseElements = 2500;
  gradient.density = 1;
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Chunk, gradient), 680,
      0.09 + 18.75);
}

// The in-step overhead (collective_overhead_us): once per runtime call, so
// once for a sparse allreduce whatever its exchange, although it issues
// three (allgather, chunk) or seven (hash) collectives; never on one rank.
TEST(CollectiveCost, OverheadOncePerRuntimeCall) {
  ClusterModel plain = testCluster(AllreduceAlgorithm::Ring);
  ClusterModel withOverhead = plain;
  withOverhead.collectiveOverheadUs = 1000;
  auto extraUs = [&](auto costOf) {
    return costOf(withOverhead).totalUs() - costOf(plain).totalUs();
  };
  EXPECT_NEAR(
      extraUs([](const ClusterModel &c) { return allreduceCost(c, kBytes); }),
      1000, 1e-6);
  EXPECT_NEAR(
      extraUs([](const ClusterModel &c) { return allgatherCost(c, kBytes); }),
      1000, 1e-6);
  EXPECT_NEAR(
      extraUs([](const ClusterModel &c) { return allToAllCost(c, kBytes); }),
      1000, 1e-6);
  EXPECT_NEAR(
      extraUs([](const ClusterModel &c) { return broadcastCost(c, kBytes); }),
      1000, 1e-6);
  SparseGradient gradient = testGradient();
  gradient.chunkElements = 1000;
  const std::pair<SparseExchangeScheme, double> exchanges[] = {
      {SparseExchangeScheme::Allgather, 1000},
      {SparseExchangeScheme::Hash, 1000},
      {SparseExchangeScheme::Chunk, 1000}};
  for (auto [scheme, expectedUs] : exchanges) {
    SCOPED_TRACE(static_cast<int>(scheme));
    EXPECT_NEAR(extraUs([&](const ClusterModel &c) {
                  return sparseAllreduceCost(c, scheme, gradient);
                }),
                expectedUs, 1e-6);
  }
  withOverhead.ranks = 1;
  EXPECT_EQ(allreduceCost(withOverhead, kBytes).totalUs(), 0);
  EXPECT_EQ(sparseAllreduceCost(withOverhead, SparseExchangeScheme::Allgather,
                                gradient)
                .totalUs(),
            0);
}

// A level with figures by size: each collective is priced with its
// size's regime, by every formula.
TEST(CollectiveCost, RegimesPriceBySize) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  ClusterModel flat = cluster;
  flat.ranksPerNode = 1;
  flat.intra.regimes = flat.inter.regimes = {{1000.0, 50.0, 1e-2}};
  // 16 ranks, one per node: the inter level. A ring allreduce of 1000 B
  // takes the regime: 30 * 50 = 1500; 30/16 * 1000 * 1e-2 = 18.75.
  expectCost(allreduceCost(flat, 1000), 1500, 18.75);
  // Above it, the level's own figures: 30 * 10; 30/16 * 2000 * 1e-3.
  expectCost(allreduceCost(flat, 2000), 300, 3.75);
  // Allgather and broadcast of 1000 B, by the regime as well.
  expectCost(allgatherCost(flat, 1000), 750, 9.375);
  ClusterModel plain = flat;
  plain.intra.regimes.clear();
  plain.inter.regimes.clear();
  plain.inter.alphaUs = 50.0;
  plain.inter.betaUsPerByte = 1e-2;
  EXPECT_DOUBLE_EQ(broadcastCost(flat, 1000).totalUs(),
                   broadcastCost(plain, 1000).totalUs());
  EXPECT_DOUBLE_EQ(allToAllCost(flat, 1000).totalUs(),
                   allToAllCost(plain, 1000).totalUs());
}

// The local steps of a sparse allreduce, counted from the runtime's passes
// over n = 1e6 f32 elements (4e6 B a pass), k = 1e4 per rank, 16 ranks.
TEST(CollectiveCost, SparseLocalBytesThresholdAllgather) {
  SparseGradient gradient = testGradient();
  // acc (3 passes), the zeroed result (1), the threshold search and the
  // collection (4): 8 * 4e6 = 3.2e7. The k sent pairs and residual entries,
  // 1e4 * (8 + 4) = 1.2e5; the p k received pairs added in,
  // 1.6e5 * (8 + 8) = 2.56e6.
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Threshold,
                                    SparseExchangeScheme::Allgather, gradient,
                                    16, /*average=*/false),
                   3.2e7 + 1.2e5 + 2.56e6);
  // AVG reads and writes the result once more: 2 * 4e6.
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Threshold,
                                    SparseExchangeScheme::Allgather, gradient,
                                    16, /*average=*/true),
                   3.2e7 + 1.2e5 + 2.56e6 + 8e6);
}

TEST(CollectiveCost, SparseLocalBytesTopkHash) {
  SparseGradient gradient = testGradient();
  gradient.reducedDensity = 0.1;
  // Top-k's tie pass adds one pass: 9 * 4e6. The hash exchange receives the
  // reduced result, n u = 1e5 entries: 1e5 * 16 = 1.6e6.
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Topk,
                                    SparseExchangeScheme::Hash, gradient, 16,
                                    /*average=*/false),
                   3.6e7 + 1.2e5 + 1.6e6);
}

TEST(CollectiveCost, SparseLocalBytesChunk) {
  SparseGradient gradient = testGradient();
  gradient.chunkElements = 1000;
  // acc and the result (4 passes), the norms (1): 5 * 4e6 = 2e7. The 10
  // chosen chunks, 1e4 elements, are packed (read and write), unpacked (read
  // and write) and cleared from the residual: 5 * 4e4 = 2e5.
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Chunk,
                                    SparseExchangeScheme::Chunk, gradient, 16,
                                    /*average=*/false),
                   2e7 + 2e5);
}

// The same work by the runtime's trace phases, with what measured rates
// count: the gradient's elements and the entries its result takes in.
TEST(CollectiveCost, SparseLocalWorkPhases) {
  SparseGradient gradient = testGradient();
  SparseLocalWork pairs =
      sparseLocalWork(SparseSelectScheme::Threshold,
                      SparseExchangeScheme::Allgather, gradient, 16,
                      /*average=*/true);
  EXPECT_DOUBLE_EQ(pairs.accumulateBytes, 3 * 4e6);
  EXPECT_DOUBLE_EQ(pairs.selectBytes, 4 * 4e6);
  // Zeros and AVG (3 passes), the sent pairs, the received ones.
  EXPECT_DOUBLE_EQ(pairs.scatterBytes, 3 * 4e6 + 1.2e5 + 2.56e6);
  EXPECT_DOUBLE_EQ(pairs.totalBytes(),
                   sparseLocalBytes(SparseSelectScheme::Threshold,
                                    SparseExchangeScheme::Allgather, gradient,
                                    16, /*average=*/true));
  EXPECT_DOUBLE_EQ(pairs.elements, 1e6);
  EXPECT_DOUBLE_EQ(pairs.entries, 1.6e5);
  gradient.chunkElements = 1000;
  SparseLocalWork chunks =
      sparseLocalWork(SparseSelectScheme::Chunk, SparseExchangeScheme::Chunk,
                      gradient, 16, /*average=*/false);
  EXPECT_DOUBLE_EQ(chunks.selectBytes, 4e6);
  EXPECT_DOUBLE_EQ(chunks.scatterBytes, 4e6 + 2e5);
  EXPECT_DOUBLE_EQ(chunks.entries, 1e4);
}

TEST(CollectiveCost, SparseLocalBytesFreeOnOneRank) {
  EXPECT_EQ(sparseLocalBytes(SparseSelectScheme::Topk,
                             SparseExchangeScheme::Allgather, testGradient(), 1,
                             /*average=*/true),
            0.0);
}

} // namespace

// The lossless rows exchange of a gradient that is sparse by nature: the
// test gradient as 1e5 rows of 10 entries, each rank touching 1% of them.
SparseGradient testRows() {
  SparseGradient gradient = testGradient();
  gradient.rowElements = 10;
  return gradient;
}

TEST(CollectiveCost, RowsAllgather) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  // A pair is one 4-byte index and a row of 10 values (40 B), sent as one
  // record. The 16 counts (128 B) and the p k = 1.6e4 records (7.04e5 B):
  // 2 * 150 of latency, 15/16 * 704128 * 1e-3 = 660.12.
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather, testRows()),
      300, 660.12);
}

// Each sparse exchange counts the collectives the runtime runs for it
// (lib/Runtime/Sparse.cpp), on MPI and NCCL alike: rows travel as records
// (one message where pairs take two), and the dense allreduce counts none.
TEST(CollectiveCost, SparseExchangesCountTheirCollectives) {
  for (CollectiveBackend backend :
       {CollectiveBackend::Mpi, CollectiveBackend::Nccl}) {
    ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
    cluster.backend = backend;
    auto count = [&](SparseExchangeScheme scheme, SparseGradient gradient) {
      return sparseAllreduceCost(cluster, scheme, gradient).gatheredCollectives;
    };
    // The counts, then the indices and the values (or the records).
    EXPECT_EQ(count(SparseExchangeScheme::Allgather, testGradient()), 3);
    EXPECT_EQ(count(SparseExchangeScheme::Allgather, testRows()), 2);
    // The total, the owners' counts, the pairs to their owners (two
    // all-to-alls, or one of records), and the owners' sums gathered.
    EXPECT_EQ(count(SparseExchangeScheme::Hash, testGradient()), 1 + 1 + 2 + 3);
    EXPECT_EQ(count(SparseExchangeScheme::Hash, testRows()), 1 + 1 + 1 + 2);
    // The norms, the chosen chunks' indices and their values.
    SparseGradient chunked = testGradient();
    chunked.chunkElements = 1000;
    EXPECT_EQ(count(SparseExchangeScheme::Chunk, chunked), 3);
    EXPECT_EQ(allreduceCost(cluster, 1 << 20).gatheredCollectives, 0);
  }
}

TEST(CollectiveCost, RowsLocalBytes) {
  // No residual to accumulate; one pass to find the touched rows (4e6 B);
  // the zeroed result (4e6 B); the 1e3 touched rows copied (a read and a
  // write, 8e4 B); the p k = 1.6e4 received rows added in (three 4-byte
  // accesses per entry, 1.92e6 B).
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Rows,
                                    SparseExchangeScheme::Allgather, testRows(),
                                    16, /*average=*/false),
                   4e6 + 4e6 + 8e4 + 1.92e6);
  SparseLocalWork work = sparseLocalWork(
      SparseSelectScheme::Rows, SparseExchangeScheme::Hash,
      [] {
        SparseGradient gradient = testRows();
        gradient.reducedDensity = 0.05;
        return gradient;
      }(),
      16, /*average=*/false);
  EXPECT_DOUBLE_EQ(work.accumulateBytes, 0);
  // The hash exchange receives the 5e3 rows the ranks touch together.
  EXPECT_DOUBLE_EQ(work.entries, 5e3 * 10);

  // Given by its rows (a COO gradient, commrt_rows_allreduce), every pass
  // the runtime makes, in row accesses of 40 B, and 16 B of an index table
  // for every row a pass adds (looked up, set, reset). The rank's t = 1e3 rows:
  // added up (2 t) and packed (2 t). The allgather's R = 1.6e4 received rows:
  // unpacked (2 R), added into one pair per index (R reads, U writes of the
  // first of each of the U indices the ranks touch together, 2 (R - U) for
  // the repeats), and the U sums copied out (2 U), AVG's division on the
  // way: nothing more for AVG. U is 1e5 (1 - 0.99^16) without a recorded
  // union density.
  SparseGradient coo = testRows();
  coo.coo = true;
  const double t = 1e3, r = 1.6e4;
  const double u = 1e5 * (1 - std::pow(0.99, 16));
  const double allgatherBytes =
      2 * t * 40 + 16 * t + (2 * t + 2 * r + r + u + 2 * (r - u) + 2 * u) * 40 +
      16 * r;
  for (bool average : {false, true})
    EXPECT_NEAR(sparseLocalBytes(SparseSelectScheme::Rows,
                                 SparseExchangeScheme::Allgather, coo, 16,
                                 average),
                allgatherBytes, 1e-6 * allgatherBytes);
  // The hash exchange with U = 5e3: the rank's rows added up, bucketed by
  // owner, packed, unpacked by their owners (2 t each) and added up there
  // (3 t); the owners' U / p sums packed (2 U / p), all U unpacked,
  // added into pairs without repeats and copied out (2 U each); the table
  // for the t rows added up twice and the U sums.
  SparseGradient cooHash = coo;
  cooHash.reducedDensity = 0.05;
  EXPECT_DOUBLE_EQ(sparseLocalBytes(SparseSelectScheme::Rows,
                                    SparseExchangeScheme::Hash, cooHash, 16,
                                    /*average=*/true),
                   (11 * t + 2 * 5e3 / 16 + 6 * 5e3) * 40 + 16 * (2 * t + 5e3));
  // Fewer rows to merge make the hash exchange's local work the smaller
  // here, as it is where ranks touch the same rows.
  EXPECT_LT(sparseLocalBytes(SparseSelectScheme::Rows,
                             SparseExchangeScheme::Hash, cooHash, 16, false),
            sparseLocalBytes(SparseSelectScheme::Rows,
                             SparseExchangeScheme::Allgather, coo, 16, false));
}

// Zen's analysis, as the model has it: the allgather's volume grows with
// the ranks, the hash exchange's follows the rows all ranks touch together,
// and the dense allreduce wins once the gradient is dense enough.
TEST(CollectiveCost, RowsExchangesScaleAsZenSays) {
  SparseGradient gradient = testRows();
  gradient.reducedDensity = 0.05;
  auto costAt = [&](SparseExchangeScheme scheme, int64_t ranks) {
    ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring, ranks);
    cluster.ranksPerNode = 1;
    return sparseAllreduceCost(cluster, scheme, gradient).bandwidthUs;
  };
  // From 4 to 16 ranks the allgather receives 4 times the rows; the hash
  // exchange sends each rank's rows once either way and gathers the same
  // union, (p - 1) / p of it: 15/16 against 3/4, 1.25 times.
  EXPECT_GT(costAt(SparseExchangeScheme::Allgather, 16),
            3.5 * costAt(SparseExchangeScheme::Allgather, 4));
  EXPECT_LT(costAt(SparseExchangeScheme::Hash, 16),
            1.26 * costAt(SparseExchangeScheme::Hash, 4));
  EXPECT_LT(costAt(SparseExchangeScheme::Hash, 16),
            costAt(SparseExchangeScheme::Allgather, 16));

  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  double denseUs = allreduceCost(cluster, 4e6).totalUs();
  for (double density : {0.001, 0.01, 0.1, 0.9}) {
    SCOPED_TRACE("density " + std::to_string(density));
    SparseGradient rows = testRows();
    rows.density = density;
    double bestRowsUs = std::min(
        sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather, rows)
            .totalUs(),
        sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, rows)
            .totalUs());
    EXPECT_EQ(bestRowsUs < denseUs, density <= 0.1);
  }
}

/// The test cluster with its sparse exchanges on MPI's own collectives.
ClusterModel mpiCluster(int64_t ranksPerNode = 4) {
  ClusterModel cluster = testCluster(AllreduceAlgorithm::Ring);
  cluster.ranksPerNode = ranksPerNode;
  cluster.backend = CollectiveBackend::Mpi;
  return cluster;
}

/// The test cluster on the MPI backend given device buffers, staged
/// through host memory at 10 GB/s (1e-4 us/B), 5 us per copy or kernel,
/// pieces of 1 MiB.
ClusterModel stagedCluster(AllreduceAlgorithm algorithm, int64_t ranks = 16) {
  ClusterModel cluster = testCluster(algorithm, ranks);
  cluster.backend = CollectiveBackend::Mpi;
  cluster.staging = DeviceStaging{10, 5, 1 << 20};
  return cluster;
}

TEST(CollectiveCost, StagedWholeAddsACopyEachWay) {
  // A copy of n = 1e6 bytes: 5 + 1e6 * 1e-4 = 105; one each way: 210.
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::Tree, AllreduceAlgorithm::Hierarchical}) {
    CollectiveCost plain = allreduceCost(testCluster(algorithm), kBytes);
    expectCost(allreduceCost(stagedCluster(algorithm), kBytes),
               plain.latencyUs + 210, plain.bandwidthUs);
    plain = broadcastCost(testCluster(algorithm), kBytes);
    expectCost(broadcastCost(stagedCluster(algorithm), kBytes),
               plain.latencyUs + 210, plain.bandwidthUs);
  }
  // A reduce-scatter copies the buffers in and its shard (1e6 / 16) out:
  // 105 + 5 + 6.25; an all-gather the other way round.
  CollectiveCost half =
      reduceScatterCost(testCluster(AllreduceAlgorithm::Ring), kBytes);
  expectCost(reduceScatterCost(stagedCluster(AllreduceAlgorithm::Ring), kBytes),
             half.latencyUs + 116.25, half.bandwidthUs);
  expectCost(allgatherCost(stagedCluster(AllreduceAlgorithm::Ring), kBytes),
             half.latencyUs + 116.25, half.bandwidthUs);
  // Two ranks have no staged ring: whole.
  CollectiveCost two =
      allreduceCost(testCluster(AllreduceAlgorithm::Ring, 2), kBytes);
  expectCost(allreduceCost(stagedCluster(AllreduceAlgorithm::Ring, 2), kBytes),
             two.latencyUs + 210, two.bandwidthUs);
  // One rank costs nothing, staged or not.
  expectCost(allreduceCost(stagedCluster(AllreduceAlgorithm::Tree, 1), kBytes),
             0, 0);
}

TEST(CollectiveCost, StagedRingHidesItsQueueBehindTheLink) {
  // Ring over p = 16 ranks, n = 1e6 bytes: the link takes 300 + 1875 us.
  // Segments of 62500 bytes, one piece each. The queue: copies out of n,
  // copies in of 2 * 15/16 n, (1e6 + 1.875e6) * 1e-4 = 287.5 us, and
  // 16 + 30 + 15 = 61 copies and reductions at 5 us: 592.5 us, hidden. The
  // first piece's copy out and the last's copy in are not: 2 * (5 + 6.25).
  expectCost(allreduceCost(stagedCluster(AllreduceAlgorithm::Ring), kBytes),
             300 + 22.5, 1875);
}

TEST(CollectiveCost, StagedRingBoundByItsQueue) {
  // Copies at 0.1 GB/s (1e-2 us/B): the queue takes 2.875e6 * 1e-2 =
  // 28750 us plus 61 * 5, 29055 us, 26880 beyond the link's 2175; the
  // first and last pieces, 2 * (5 + 625).
  ClusterModel cluster = stagedCluster(AllreduceAlgorithm::Ring);
  cluster.staging.copyGBps = 0.1;
  expectCost(allreduceCost(cluster, kBytes), 300 + 26880 + 1260, 1875);
  // Pieces of 1 MiB: a 64 MiB allreduce's segments of 4 MiB go in 4.
  cluster.staging.copyGBps = 10;
  const double bytes = 64.0 * (1 << 20);
  CollectiveCost link =
      allreduceCost(testCluster(AllreduceAlgorithm::Ring), bytes);
  // Queue: 2.875 * bytes * 1e-4 + 4 * 61 * 5; less than the link's.
  ASSERT_LT(2.875 * bytes * 1e-4 + 4 * 61 * 5, link.totalUs());
  expectCost(allreduceCost(cluster, bytes),
             link.latencyUs + 2 * (5 + (1 << 20) * 1e-4), link.bandwidthUs);
}

TEST(CollectiveCost, StagedSparseCopiesGradientAndResidual) {
  SparseGradient gradient = testGradient();
  const double dense = static_cast<double>(gradient.denseElements) * 4;
  ClusterModel staged = stagedCluster(AllreduceAlgorithm::Ring);
  ClusterModel plain = staged;
  plain.staging = DeviceStaging();
  CollectiveCost exchange =
      sparseAllreduceCost(plain, SparseExchangeScheme::Hash, gradient);
  // The gradient and the residual, each way: 2 * (5 + 2 dense * 1e-4).
  expectCost(sparseAllreduceCost(staged, SparseExchangeScheme::Hash, gradient),
             exchange.latencyUs + 2 * (5 + 2 * dense * 1e-4),
             exchange.bandwidthUs);
  // A dense mostly-zero rows gradient has no residual; a COO one is host
  // memory.
  gradient.rowElements = 64;
  exchange = sparseAllreduceCost(plain, SparseExchangeScheme::Hash, gradient);
  expectCost(sparseAllreduceCost(staged, SparseExchangeScheme::Hash, gradient),
             exchange.latencyUs + 2 * (5 + dense * 1e-4), exchange.bandwidthUs);
  gradient.coo = true;
  exchange = sparseAllreduceCost(plain, SparseExchangeScheme::Hash, gradient);
  expectCost(sparseAllreduceCost(staged, SparseExchangeScheme::Hash, gradient),
             exchange.latencyUs, exchange.bandwidthUs);
}

TEST(CollectiveCost, SparseAllgatherOnMpi) {
  // The three allgathers of SparseAllgather, MPI posting each one's
  // messages at once: one inter-node latency each, 3 * 10 = 30, and a
  // node's link carries its q = 4 ranks' blocks for the 12 ranks of other
  // nodes, 4 * 3/4 of the bytes * 1e-3 (its intra-node links carry 3/16 of
  // them at 1e-4 meanwhile): 3e-3 * 1280128 = 3840.384.
  expectCost(sparseAllreduceCost(mpiCluster(), SparseExchangeScheme::Allgather,
                                 testGradient()),
             30, 3840.384);
}

TEST(CollectiveCost, SparseHashOnMpi) {
  SparseGradient gradient = testGradient();
  gradient.reducedDensity = 0.1;
  // The total count, MPI's binomial allreduce of 8 B: up and down a tree of
  // lg 16 = 4 levels, 8 * 10 = 80; 8 * 8 * 1e-3 = 0.064. Three all-to-alls
  // (the counts, 64 B per rank; the k indices and the k values, 4e4 B
  // each), each's messages at once: 10 each; 3e-3 b: 0.192 + 120 + 120.
  // The owners' n u = 1e5 pairs, gathered as SparseAllgatherOnMpi gathers:
  // 30; 3e-3 * (128 + 8e5) = 2400.384.
  expectCost(
      sparseAllreduceCost(mpiCluster(), SparseExchangeScheme::Hash, gradient),
      80 + 30 + 30, 0.064 + 0.192 + 240 + 2400.384);
}

TEST(CollectiveCost, SparseChunkOnMpi) {
  SparseGradient gradient = testGradient();
  gradient.chunkElements = 1000;
  // SparseChunk's norms and indices, 190 + 15 and 190 + 0.15; the 4e4 B of
  // chosen values go up and down MPI's binomial tree (its in-place
  // allreduce), 2 lg 16 = 8 messages of all of them: 80 and 8 * 40 = 320,
  // where the ring pays 300 and 75.
  expectCost(
      sparseAllreduceCost(mpiCluster(), SparseExchangeScheme::Chunk, gradient),
      460, 15.15 + 320);
}

TEST(CollectiveCost, RowsAllgatherOnMpi) {
  // RowsAllgather's two allgathers (128 B of counts, 7.04e5 B of records),
  // each's messages at once: 2 * 10, 3e-3 * 704128 = 2112.384.
  expectCost(sparseAllreduceCost(mpiCluster(), SparseExchangeScheme::Allgather,
                                 testRows()),
             20, 2112.384);
}

// With a link per rank, MPI's schedules send what NCCL's do and pay one
// latency a collective where the ring pays p - 1; with several ranks a
// node, every rank of a node receives its own copy of what other nodes send
// (a ring forwards one inside the node), and the dense ring wins at lower
// densities: up to 0.1 the rows win with a link per rank, up to 0.01 with
// 4 ranks sharing a node's link.
TEST(CollectiveCost, MpiExchangesPostEveryMessageAtOnce) {
  SparseGradient rows = testRows();
  rows.reducedDensity = 0.05;
  // The same bytes, but for the hash exchange's count: 2 lg 16 messages of
  // 8 B up and down the binomial tree, against the ring's 2 * 15/16 * 8.
  const std::pair<SparseExchangeScheme, double> extraBytes[] = {
      {SparseExchangeScheme::Allgather, 0},
      {SparseExchangeScheme::Hash, 8 * 8 - 2 * 15.0 / 16 * 8}};
  for (auto [scheme, extra] : extraBytes) {
    ClusterModel nccl = testCluster(AllreduceAlgorithm::Ring);
    nccl.ranksPerNode = 1;
    CollectiveCost onNccl = sparseAllreduceCost(nccl, scheme, rows);
    CollectiveCost onMpi = sparseAllreduceCost(mpiCluster(1), scheme, rows);
    EXPECT_NEAR(onMpi.sentBytes, onNccl.sentBytes + extra, 1e-6);
    EXPECT_NEAR(onMpi.bandwidthUs, onNccl.bandwidthUs + extra * 1e-3, 1e-9);
    EXPECT_LT(onMpi.latencyUs, onNccl.latencyUs);
  }
  // The allgather: two collectives, 2 * 10 against 2 * 15 * 10.
  EXPECT_DOUBLE_EQ(
      sparseAllreduceCost(mpiCluster(1), SparseExchangeScheme::Allgather, rows)
          .latencyUs,
      20);
  for (int64_t ranksPerNode : {1, 4}) {
    ClusterModel cluster = mpiCluster(ranksPerNode);
    double denseUs = allreduceCost(cluster, 4e6).totalUs();
    for (double density : {0.001, 0.01, 0.1, 0.9}) {
      SCOPED_TRACE("density " + std::to_string(density) + ", " +
                   std::to_string(ranksPerNode) + " ranks a node");
      SparseGradient gradient = testRows();
      gradient.density = density;
      double bestRowsUs = std::min(
          sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather,
                              gradient)
              .totalUs(),
          sparseAllreduceCost(cluster, SparseExchangeScheme::Hash, gradient)
              .totalUs());
      EXPECT_EQ(bestRowsUs < denseUs,
                density <= (ranksPerNode == 1 ? 0.1 : 0.01));
    }
  }
}

// A size's fitted regime may split its time into a large alpha and a beta
// below the link's. Posted at once, the messages take the regime's time,
// but no less than their bytes take at the largest sizes' rate. Flat, 4
// ranks, one a node: up to 10 MB alpha 300 us and 1e-4 us/B, above it
// 10 us and 1e-3 us/B.
TEST(CollectiveCost, MpiExchangeBytesNoFasterThanTheLargestSizes) {
  ClusterModel cluster = mpiCluster(1);
  cluster.ranks = 4;
  cluster.intra = cluster.inter =
      LinkLevel{10.0, 1e-3, {SizeRegime{1e7, 300.0, 1e-4}}};
  SparseGradient rows = testRows();
  rows.density = 0.01;
  // The 4 counts (32 B) and the 4 k = 4e3 records of 44 B (1.76e5 B), 3/4
  // of each sent: the regime's 300 + 24e-4 us and 300 + 13.2 us are more
  // than the link's rate gives them (0.024 and 132 us), so both stand.
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather, rows), 600,
      13.2024);
  // Ten times the records (1.76e6 B): the regime's 300 + 132 us is less
  // than 3/4 of them take at 1e-3 us/B, 1320 us, which is their time, with
  // no alpha beside it; the counts keep the regime's.
  rows.density = 0.1;
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather, rows), 300,
      1320.0024);
  // NCCL's ring keeps the regime's figures: 3 steps of 300 us each
  // collective, 3/4 of the bytes at 1e-4 us/B.
  cluster.backend = CollectiveBackend::Nccl;
  expectCost(
      sparseAllreduceCost(cluster, SparseExchangeScheme::Allgather, rows), 1800,
      132.0024);
}

TEST(CollectiveCost, RowsTouchedAt) {
  const double measured[] = {0.01, 0.018, 0.031};
  // The measured powers of two as they are.
  EXPECT_DOUBLE_EQ(rowsTouchedAt(measured, 1), 0.01);
  EXPECT_DOUBLE_EQ(rowsTouchedAt(measured, 2), 0.018);
  EXPECT_DOUBLE_EQ(rowsTouchedAt(measured, 4), 0.031);
  // Between them, linear in log2 of the ranks.
  EXPECT_DOUBLE_EQ(rowsTouchedAt(measured, 3),
                   0.018 + (std::log2(3.0) - 1) * 0.013);
  // Past the last, further groups of 4 ranks as independent:
  // 1 - 0.969^(16 / 4).
  EXPECT_NEAR(rowsTouchedAt(measured, 16), 1 - std::pow(0.969, 4), 1e-15);
  // Never past every row.
  const double all[] = {1.0};
  EXPECT_DOUBLE_EQ(rowsTouchedAt(all, 64), 1.0);
}
