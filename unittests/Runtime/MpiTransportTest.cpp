//===- MpiTransportTest.cpp - A collective's own transport ----------------===//
//
// Run under mpirun with any number of ranks (CTest uses 1 and 4). The
// `algorithm` argument of the group forms may also name the backend that
// carries the collective (COMMRT_TRANSPORT_SHIFT). On a machine without a
// GPU the backend in use is MPI and NCCL cannot be created, which these
// tests check as errors; where NCCL can be created (one rank on a GPU),
// they check that collectives run on both backends at once.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"
#include "commrt/commrt.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using commrt::testing::worldRank;
using commrt::testing::worldSize;

/// The `algorithm` argument of `algorithm` on `transport`.
int32_t on(int32_t algorithm, int32_t transport) {
  return algorithm | transport << COMMRT_TRANSPORT_SHIFT;
}

/// The backend that is not the one in use.
int32_t otherBackend() {
  return commrt_backend_in_use() == COMMRT_BACKEND_MPI ? COMMRT_BACKEND_NCCL
                                                       : COMMRT_BACKEND_MPI;
}

/// Rank `r`'s value at `i`: small integers, so that sums are exact.
float contribution(int r, int64_t i) {
  return static_cast<float>((r + 1) * 3 + (i * 5 + r) % 11) - 6.0f;
}

/// Allreduces 1000 f32 among `group` by `algorithm` (with its transport) on
/// host buffers and checks the sum among `members` (world ranks).
void expectSummed(int32_t group, int32_t algorithm,
                  const std::vector<int> &members) {
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = contribution(worldRank(), static_cast<int64_t>(i));
  void *buffers[] = {data.data()};
  int64_t counts[] = {static_cast<int64_t>(data.size())};
  ASSERT_EQ(commrt_group_fused_allreduce(group, buffers, counts, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         algorithm),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t i = 0; i < data.size(); ++i) {
    float sum = 0;
    for (int r : members)
      sum += contribution(r, static_cast<int64_t>(i));
    ASSERT_EQ(data[i], sum) << i;
  }
}

std::vector<int> allRanks() {
  std::vector<int> ranks;
  for (int r = 0; r < worldSize(); ++r)
    ranks.push_back(r);
  return ranks;
}

using commrt::testing::failedContaining;

TEST(Transport, TheBackendInUseCarriesWhatNamesIt) {
  int32_t inUse = commrt_backend_in_use();
  ASSERT_GT(inUse, COMMRT_BACKEND_AUTO) << commrt_last_error();
  EXPECT_EQ(commrt_use_transport(inUse), COMMRT_SUCCESS) << commrt_last_error();
  expectSummed(0, on(COMMRT_ALGORITHM_TREE, inUse), allRanks());
  expectSummed(0, on(COMMRT_ALGORITHM_RING, inUse), allRanks());
  // Within a group: every rank alone.
  int32_t alone = -1;
  ASSERT_EQ(commrt_group_split(301, worldRank(), 0, &alone), COMMRT_SUCCESS)
      << commrt_last_error();
  expectSummed(alone, on(COMMRT_ALGORITHM_DEFAULT, inUse), {worldRank()});

  // And started on a channel.
  std::vector<float> data(1000, 1.0f);
  void *buffers[] = {data.data()};
  int64_t counts[] = {1000};
  int64_t handle = 0;
  ASSERT_EQ(commrt_group_fused_allreduce_start(
                0, buffers, counts, 1, COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE,
                1.0f, on(COMMRT_ALGORITHM_RING, inUse),
                /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(data[999], static_cast<float>(worldSize()));
}

TEST(Transport, InvalidTransportsFailNamingThem) {
  float data[4] = {1, 2, 3, 4};
  void *buffers[] = {data};
  int64_t counts[] = {4};
  EXPECT_TRUE(failedContaining(
      commrt_group_fused_allreduce(0, buffers, counts, 1, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                   3 << COMMRT_TRANSPORT_SHIFT),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "algorithm 768 is not a commrt_algorithm (0..3), with or without a "
      "commrt_backend (0..2) shifted left by COMMRT_TRANSPORT_SHIFT"));
  EXPECT_TRUE(failedContaining(
      commrt_group_fused_allreduce(0, buffers, counts, 1, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                   on(9, COMMRT_BACKEND_MPI)),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "algorithm 265 is not a commrt_algorithm"));
  EXPECT_TRUE(failedContaining(commrt_use_transport(COMMRT_BACKEND_AUTO),
                               COMMRT_ERROR_INVALID_ARGUMENT, "backend"));
  EXPECT_TRUE(failedContaining(commrt_use_transport(7),
                               COMMRT_ERROR_INVALID_ARGUMENT, "backend"));
  EXPECT_EQ(data[0], 1.0f) << "a failed call must not touch the buffers";
}

TEST(Transport, TheOtherBackendRunsBesideOrFailsOnEveryRank) {
  int32_t other = otherBackend();
  int32_t inUse = commrt_backend_in_use();
  // A group's collective cannot create a backend among all ranks.
  int32_t alone = -1;
  ASSERT_EQ(commrt_group_split(302, worldRank(), 0, &alone), COMMRT_SUCCESS)
      << commrt_last_error();
  float data[4] = {1, 2, 3, 4};
  void *buffers[] = {data};
  int64_t counts[] = {4};
  EXPECT_TRUE(failedContaining(
      commrt_group_fused_allreduce(alone, buffers, counts, 1, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                   on(COMMRT_ALGORITHM_DEFAULT, other)),
      COMMRT_ERROR_INVALID_ARGUMENT, "commrt_use_transport"));
  EXPECT_EQ(data[0], 1.0f);

  int32_t status = commrt_use_transport(other);
  // Every rank gets the same answer (NCCL needs a GPU per rank).
  int32_t lowest = status, highest = status;
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT32_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_INT32_T, MPI_MAX,
                MPI_COMM_WORLD);
  ASSERT_EQ(lowest, highest) << commrt_last_error();
  if (status != COMMRT_SUCCESS) {
    EXPECT_EQ(status, COMMRT_ERROR_UNAVAILABLE) << commrt_last_error();
    EXPECT_TRUE(failedContaining(
        commrt_group_fused_allreduce(0, buffers, counts, 1, COMMRT_F32,
                                     COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                     on(COMMRT_ALGORITHM_DEFAULT, other)),
        COMMRT_ERROR_UNAVAILABLE, ""));
    EXPECT_EQ(data[0], 1.0f);
    // The backend in use is untouched.
    EXPECT_EQ(commrt_backend_in_use(), inUse);
    expectSummed(0, on(COMMRT_ALGORITHM_TREE, inUse), allRanks());
    return;
  }
  // Both backends at once, in the order the collectives come, and the
  // groups on both.
  for (int round = 0; round < 3; ++round) {
    expectSummed(0, on(COMMRT_ALGORITHM_DEFAULT, other), allRanks());
    expectSummed(0, on(COMMRT_ALGORITHM_DEFAULT, inUse), allRanks());
    expectSummed(alone, on(COMMRT_ALGORITHM_DEFAULT, other), {worldRank()});
  }
  EXPECT_EQ(commrt_backend_in_use(), inUse);
}

} // namespace
