//===- GroupClusterTest.cpp - The cluster a process group sees ------------===//
//
// ClusterModel::forGroup: which ranks form a group of a row-major device
// grid, how many of them share a node, and what their allreduce costs.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"

#include "gtest/gtest.h"

using namespace mlir::comm;

namespace {

/// `ranks` ranks on nodes of `ranksPerNode`: 1 us and 10 GB/s inside a node,
/// 10 us and 1 GB/s between nodes.
ClusterModel makeCluster(int64_t ranks, int64_t ranksPerNode) {
  ClusterModel cluster;
  cluster.ranks = ranks;
  cluster.ranksPerNode = ranksPerNode;
  cluster.intra = {1.0, 1e-4};
  cluster.inter = {10.0, 1e-3};
  return cluster;
}

TEST(GroupClusterTest, RowsStayInANodeColumnsCrossNodes) {
  // shard.grid @g(shape = 2x4) on two nodes of four: rows are nodes.
  ClusterModel cluster = makeCluster(8, 4);
  ClusterModel rows = cluster.forGroup({2, 4}, {1});
  EXPECT_EQ(rows.ranks, 4);
  EXPECT_EQ(rows.ranksPerNode, 4);
  EXPECT_EQ(rows.nodes(), 1);
  ClusterModel columns = cluster.forGroup({2, 4}, {0});
  EXPECT_EQ(columns.ranks, 2);
  EXPECT_EQ(columns.ranksPerNode, 1);
  EXPECT_EQ(columns.nodes(), 2);
}

TEST(GroupClusterTest, EveryAxisIsTheWholeCluster) {
  ClusterModel cluster = makeCluster(8, 4);
  ClusterModel all = cluster.forGroup({2, 4}, {0, 1});
  EXPECT_EQ(all.ranks, 8);
  EXPECT_EQ(all.ranksPerNode, 4);
  EXPECT_EQ(all.intra.alphaUs, cluster.intra.alphaUs);
  EXPECT_EQ(all.inter.betaUsPerByte, cluster.inter.betaUsPerByte);
}

TEST(GroupClusterTest, ColumnsOfATallGridShareNodes) {
  // 4x4 on two nodes of eight: column {0, 4, 8, 12} has two ranks in each
  // node.
  ClusterModel columns = makeCluster(16, 8).forGroup({4, 4}, {0});
  EXPECT_EQ(columns.ranks, 4);
  EXPECT_EQ(columns.ranksPerNode, 2);
  // A three-dimensional grid, the middle axis: {0, 2, 4, 6} of 2x4x2.
  ClusterModel middle = makeCluster(16, 4).forGroup({2, 4, 2}, {1});
  EXPECT_EQ(middle.ranks, 4);
  EXPECT_EQ(middle.ranksPerNode, 2);
}

TEST(GroupClusterTest, UnevenGroupsArePricedAcrossNodes) {
  // 3x2 on nodes of two: column {0, 2, 4} has one rank in each node.
  ClusterModel column = makeCluster(6, 2).forGroup({3, 2}, {0});
  EXPECT_EQ(column.ranks, 3);
  EXPECT_EQ(column.ranksPerNode, 1);
  // On nodes of four it has two ranks in node 0 and one in node 1.
  ClusterModel uneven = makeCluster(8, 4).forGroup({3, 2}, {0});
  EXPECT_EQ(uneven.ranks, 3);
  EXPECT_EQ(uneven.ranksPerNode, 1);
}

TEST(GroupClusterTest, GroupAllreduceCostUsesTheGroupsLinks) {
  // Ring allreduce of n bytes over p ranks on one level:
  // 2 (p - 1) alpha + 2 (p - 1) / p n beta.
  ClusterModel cluster = makeCluster(8, 4);
  double bytes = 1 << 20;
  CollectiveCost rows = allreduceCost(cluster.forGroup({2, 4}, {1}), bytes);
  EXPECT_DOUBLE_EQ(rows.totalUs(), 6 * 1.0 + 1.5 * bytes * 1e-4);
  CollectiveCost columns = allreduceCost(cluster.forGroup({2, 4}, {0}), bytes);
  EXPECT_DOUBLE_EQ(columns.totalUs(), 2 * 10.0 + 1.0 * bytes * 1e-3);
  // The whole cluster pays the network with four ranks sharing each NIC.
  EXPECT_GT(allreduceCost(cluster, bytes).totalUs(), columns.totalUs());
}

} // namespace
