//===- TransportChoiceTest.cpp - The algorithm and transport of a collective =//
//
// getCheapestAllreduceChoice, comm-select-algorithm's choice where a cluster
// has two transports: never dearer than the cluster's own backend alone,
// the cheaper of the two where they differ, the cluster's own on a tie.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/StepModel.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

using namespace mlir::comm;

namespace {

/// A flat cluster of `ranks` ranks, one a node, on `backend`.
ClusterModel flat(CollectiveBackend backend, int64_t ranks, double alphaUs,
                  double betaUsPerByte) {
  ClusterModel cluster;
  cluster.name = "flat";
  cluster.ranks = ranks;
  cluster.ranksPerNode = 1;
  cluster.backend = backend;
  cluster.inter = LinkLevel{alphaUs, betaUsPerByte, {}};
  cluster.intra = cluster.inter;
  return cluster;
}

/// The least cost of any candidate algorithm on `cluster` alone.
double bestAlone(const ClusterModel &cluster, double bytes,
                 double narrowedBytes) {
  double best = std::numeric_limits<double>::infinity();
  for (AllreduceAlgorithm algorithm : getAllreduceCandidates(cluster))
    best = std::min(best, allreduceCost(cluster, bytes, algorithm).totalUs() +
                              getWireCostUs(cluster, narrowedBytes));
  return best;
}

TEST(TransportChoice, SmallOnTheLowLatencyLargeOnTheWideTransport) {
  ClusterModel cluster = flat(CollectiveBackend::Nccl, 4, 50.0, 1e-5);
  cluster.alternate = std::make_shared<ClusterModel>(
      flat(CollectiveBackend::Mpi, 4, 5.0, 1e-4));
  // 4000 bytes: MPI's tree, 4 * 5 + 2 * 4000 * 1e-4 = 20.8.
  AllreduceChoice small =
      getCheapestAllreduceChoice(cluster, 4000, 0, std::nullopt, std::nullopt);
  EXPECT_EQ(small.transport, CollectiveBackend::Mpi);
  EXPECT_EQ(small.algorithm, AllreduceAlgorithm::Tree);
  EXPECT_DOUBLE_EQ(small.costUs, 20.8);
  // 40 MB: NCCL's ring, 6 * 50 + 1.5 * 4e7 * 1e-5 = 900.
  AllreduceChoice large =
      getCheapestAllreduceChoice(cluster, 4e7, 0, std::nullopt, std::nullopt);
  EXPECT_EQ(large.transport, CollectiveBackend::Nccl);
  EXPECT_EQ(large.algorithm, AllreduceAlgorithm::Ring);
  EXPECT_DOUBLE_EQ(large.costUs, 900.0);
  // Limited to one transport, or to one algorithm.
  AllreduceChoice ncclOnly = getCheapestAllreduceChoice(
      cluster, 4000, 0, std::nullopt, CollectiveBackend::Nccl);
  EXPECT_EQ(ncclOnly.transport, CollectiveBackend::Nccl);
  EXPECT_EQ(ncclOnly.algorithm, AllreduceAlgorithm::Tree);
  AllreduceChoice mpiRing = getCheapestAllreduceChoice(
      cluster, 4e7, 0, AllreduceAlgorithm::Ring, CollectiveBackend::Mpi);
  EXPECT_EQ(mpiRing.transport, CollectiveBackend::Mpi);
  EXPECT_EQ(mpiRing.algorithm, AllreduceAlgorithm::Ring);
  EXPECT_DOUBLE_EQ(mpiRing.costUs, 30.0 + 6000.0);
}

TEST(TransportChoice, ATieGoesToTheClustersOwnBackend) {
  ClusterModel cluster = flat(CollectiveBackend::Mpi, 8, 10.0, 1e-4);
  ClusterModel twin = cluster;
  twin.backend = CollectiveBackend::Nccl;
  cluster.alternate = std::make_shared<ClusterModel>(twin);
  for (double bytes : {0.0, 1.0, 4096.0, 1e6, 1e9})
    EXPECT_EQ(getCheapestAllreduceChoice(cluster, bytes, 0, std::nullopt,
                                         std::nullopt)
                  .transport,
              CollectiveBackend::Mpi)
        << bytes;
}

// The property the pass promises: over random pairs of transports (staging,
// wire costs and overheads included) and sizes, the choice costs the least
// of either transport alone, so never more than the cluster's own backend.
TEST(TransportChoice, NeverDearerThanEitherTransportAlone) {
  std::mt19937 random(20261129);
  std::uniform_real_distribution<double> logAlpha(-1.0, 3.0);
  std::uniform_real_distribution<double> logBeta(-7.0, -3.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> ranksPerNode(0, 2);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t perNode = int64_t{1} << ranksPerNode(random);
    auto make = [&](CollectiveBackend backend) {
      ClusterModel cluster = flat(backend, 16, std::pow(10.0, logAlpha(random)),
                                  std::pow(10.0, logBeta(random)));
      cluster.ranksPerNode = perNode;
      cluster.intra = LinkLevel{std::pow(10.0, logAlpha(random)),
                                std::pow(10.0, logBeta(random)),
                                {}};
      cluster.wireUsPerByte = unit(random) * 1e-4;
      cluster.collectiveOverheadUs = unit(random) * 20.0;
      return cluster;
    };
    ClusterModel cluster = make(CollectiveBackend::Nccl);
    ClusterModel mpi = make(CollectiveBackend::Mpi);
    if (trial % 2)
      mpi.staging = DeviceStaging{1.0 + unit(random) * 50.0,
                                  unit(random) * 10.0, double(1 << 20)};
    cluster.alternate = std::make_shared<ClusterModel>(mpi);
    for (double bytes = 1.0; bytes < 4e9; bytes *= 7.3) {
      double narrowed = trial % 3 ? 0.0 : bytes * 2.0;
      AllreduceChoice choice = getCheapestAllreduceChoice(
          cluster, bytes, narrowed, std::nullopt, std::nullopt);
      double own = bestAlone(cluster, bytes, narrowed);
      double other = bestAlone(mpi, bytes, narrowed);
      ASSERT_LE(choice.costUs, own) << "trial " << trial << ", " << bytes;
      ASSERT_DOUBLE_EQ(choice.costUs, std::min(own, other))
          << "trial " << trial << ", " << bytes;
      // The cost is the one the step model prices on the transport chosen.
      const ClusterModel *on = cluster.onTransport(choice.transport);
      ASSERT_NE(on, nullptr);
      ASSERT_DOUBLE_EQ(choice.costUs,
                       allreduceCost(*on, bytes, choice.algorithm).totalUs() +
                           getWireCostUs(*on, narrowed));
    }
  }
}

} // namespace
