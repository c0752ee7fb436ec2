//===- MpiHierarchicalTest.cpp - The hierarchical allreduce ---------------===//
//
// Run under mpirun by commrt-mpi-hierarchical-np4, with
// COMMRT_ALLREDUCE=hierarchical and COMMRT_RANKS_PER_NODE=2: two emulated
// nodes of two ranks. The results must be those of the flat reduction
// (MPI_Allreduce of the same values), exact where the values are small
// integers, identical on all ranks, for every type and reduction, for sizes
// not a multiple of the ranks of a node, for fused buffers, on channels and
// among the ranks of a process group. Under other settings the same checks
// hold for the flat algorithm; the tests then only skip their check that the
// hierarchical algorithm ran.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// Whether COMMRT_RANKS_PER_NODE makes all ranks several nodes of equal
/// size with more than one rank each, where a plan that asks for the
/// hierarchical algorithm gets it.
bool ranksFormNodes() {
  const char *perNode = std::getenv("COMMRT_RANKS_PER_NODE");
  if (!perNode)
    return false;
  int q = std::atoi(perNode);
  return q > 1 && q < size() && size() % q == 0;
}

/// Whether the settings make the allreduces of all ranks hierarchical: the
/// algorithm asked for, and nodes (ranksFormNodes).
bool hierarchicalOverAllRanks() {
  const char *algorithm = std::getenv("COMMRT_ALLREDUCE");
  return algorithm && std::strcmp(algorithm, "hierarchical") == 0 &&
         ranksFormNodes();
}

/// Expects the hierarchical algorithm to have run `runs` times since
/// `before` where the settings ask for it over all ranks.
void expectHierarchicalRuns(int64_t before, int64_t runs) {
  if (hierarchicalOverAllRanks())
    EXPECT_EQ(commrt::hierarchicalAllreducesRun() - before, runs);
}

/// The flat reduction of every rank's contributions at indices
/// [first, first + count), by MPI_Allreduce in double (exact for these small
/// integers), AVG divided by the number of ranks.
std::vector<double> flatReduction(commrt_reduce reduce, int64_t first,
                                  int64_t count) {
  std::vector<double> reference(count);
  for (int64_t i = 0; i < count; ++i)
    reference[i] = contribution(rank(), first + i);
  static const MPI_Op ops[] = {MPI_SUM, MPI_SUM, MPI_MAX, MPI_MIN};
  EXPECT_EQ(MPI_Allreduce(MPI_IN_PLACE, reference.data(),
                          static_cast<int>(count), MPI_DOUBLE, ops[reduce],
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  if (reduce == COMMRT_AVG)
    for (double &value : reference)
      value /= size();
  return reference;
}

/// Expects element `i` of `buffer`, of `dtype`, to be `expected` as `dtype`
/// stores it.
::testing::AssertionResult storedAs(commrt_dtype dtype, double actual,
                                    double expected) {
  TypedBuffer rounded(dtype, 1);
  rounded.set(0, expected);
  if (actual == rounded.get(0))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << actual << " is not " << rounded.get(0) << " (" << expected << ")";
}

//===----------------------------------------------------------------------===//
// One buffer
//===----------------------------------------------------------------------===//

/// The sizes of the exact sums: none, fewer elements than a node's ranks, an
/// odd one, one of several MiB that no node size divides, and one of several
/// of the hierarchical allreduce's 16-MiB parts, the last one short.
const int64_t kCounts[] = {
    0, 1, 3, 1000, (int64_t(1) << 20) + 7, (int64_t(1) << 23) + 5};

using SumCase = std::tuple<commrt_dtype, int64_t>;

class HierarchicalSumTest : public ::testing::TestWithParam<SumCase> {};

TEST_P(HierarchicalSumTest, EqualsTheFlatSum) {
  auto [dtype, count] = GetParam();
  GuardedContributions buffer(dtype, count, rank());
  int64_t before = commrt::hierarchicalAllreducesRun();
  ASSERT_EQ(commrt_allreduce(buffer.data(), count, dtype, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectHierarchicalRuns(before, count > 0 ? 1 : 0);
  std::vector<double> flat = flatReduction(COMMRT_SUM, 0, count);
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(buffer.get(i), flat[i]) << "index " << i;
  buffer.expectGuardsIntact();
  EXPECT_TRUE(
      sameOnAllRanks(buffer.data(), count * commrt::elementSize(dtype)));
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, HierarchicalSumTest,
    ::testing::Combine(::testing::Values(COMMRT_F32, COMMRT_F64),
                       ::testing::ValuesIn(kCounts)),
    [](const ::testing::TestParamInfo<SumCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             std::to_string(std::get<1>(info.param));
    });

using ReduceCase = std::tuple<commrt_dtype, commrt_reduce>;

class HierarchicalReduceTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(HierarchicalReduceTest, EqualsTheFlatReduction) {
  auto [dtype, reduce] = GetParam();
  const int64_t count = 1001;
  GuardedContributions buffer(dtype, count, rank());
  int64_t before = commrt::hierarchicalAllreducesRun();
  ASSERT_EQ(commrt_allreduce(buffer.data(), count, dtype, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectHierarchicalRuns(before, 1);
  std::vector<double> flat = flatReduction(reduce, 0, count);
  for (int64_t i = 0; i < count; ++i)
    ASSERT_TRUE(storedAs(dtype, buffer.get(i), flat[i])) << "index " << i;
  buffer.expectGuardsIntact();
  EXPECT_TRUE(
      sameOnAllRanks(buffer.data(), count * commrt::elementSize(dtype)));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, HierarchicalReduceTest,
    ::testing::Combine(
        ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
        ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN)),
    [](const ::testing::TestParamInfo<ReduceCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param));
    });

//===----------------------------------------------------------------------===//
// Fused buffers
//===----------------------------------------------------------------------===//

/// Fused buffers of these sizes, an empty one among them, hold the
/// contributions at consecutive indices.
const int64_t kFusedCounts[] = {5, 0, 1000, 7, 65537};

class HierarchicalFusedTest : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(HierarchicalFusedTest, EqualsTheFlatReduction) {
  auto [dtype, reduce] = GetParam();
  std::vector<TypedBuffer> buffers;
  std::vector<void *> pointers;
  int64_t total = 0;
  for (int64_t count : kFusedCounts) {
    buffers.emplace_back(dtype, count);
    for (int64_t i = 0; i < count; ++i)
      buffers.back().set(i, contribution(rank(), total + i));
    total += count;
  }
  for (TypedBuffer &buffer : buffers)
    pointers.push_back(buffer.data());
  int64_t before = commrt::hierarchicalAllreducesRun();
  ASSERT_EQ(commrt_fused_allreduce(pointers.data(), kFusedCounts,
                                   std::size(kFusedCounts), dtype, reduce,
                                   COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectHierarchicalRuns(before, 1);
  std::vector<double> flat = flatReduction(reduce, 0, total);
  int64_t first = 0;
  for (size_t b = 0; b < std::size(kFusedCounts); ++b) {
    for (int64_t i = 0; i < kFusedCounts[b]; ++i)
      ASSERT_TRUE(storedAs(dtype, buffers[b].get(i), flat[first + i]))
          << "buffer " << b << " index " << i;
    first += kFusedCounts[b];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Reductions, HierarchicalFusedTest,
    ::testing::Combine(::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_BF16),
                       ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX,
                                         COMMRT_MIN)),
    [](const ::testing::TestParamInfo<ReduceCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param));
    });

/// A smooth value of rank `r` at index `i`, below 3 in magnitude.
float smooth(int r, int64_t i) {
  return static_cast<float>(std::sin(0.01 * i + r) * 3.0);
}

/// Fills `buffers` (of `counts`) with rank `r`'s smooth values at
/// consecutive indices; returns the pointers.
std::vector<void *> fillSmooth(std::vector<std::vector<float>> &buffers,
                               const std::vector<int64_t> &counts, int r) {
  std::vector<void *> pointers;
  int64_t first = 0;
  for (int64_t count : counts) {
    buffers.emplace_back(count);
    for (int64_t i = 0; i < count; ++i)
      buffers.back()[i] = smooth(r, first + i);
    pointers.push_back(buffers.back().data());
    first += count;
  }
  return pointers;
}

/// Expects `buffers` (of `counts`) to hold the average over all ranks of
/// their smooth values, each within a few f16 roundings.
void expectCloseToAverage(const std::vector<std::vector<float>> &buffers,
                          const std::vector<int64_t> &counts) {
  int64_t first = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    for (int64_t i = 0; i < counts[b]; ++i) {
      double sum = 0.0;
      for (int r = 0; r < size(); ++r)
        sum += smooth(r, first + i);
      // One f16 rounding per rank's value and per partial sum, relative
      // 2^-11 each, of values below 3 (halved by the prescale).
      ASSERT_NEAR(buffers[b][i], sum / size(), 4e-3 * size())
          << "buffer " << b << " index " << i;
    }
    first += counts[b];
  }
}

TEST(Hierarchical, FusedWireF16IsCloseWithAvg) {
  const std::vector<int64_t> counts = {3, 4097, 0, 1001};
  std::vector<std::vector<float>> buffers;
  std::vector<void *> pointers = fillSmooth(buffers, counts, rank());
  int64_t before = commrt::hierarchicalAllreducesRun();
  ASSERT_EQ(commrt_fused_allreduce(pointers.data(), counts.data(),
                                   static_cast<int32_t>(counts.size()),
                                   COMMRT_F32, COMMRT_AVG, COMMRT_F16, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectHierarchicalRuns(before, 1);
  expectCloseToAverage(buffers, counts);
  for (const std::vector<float> &buffer : buffers)
    EXPECT_TRUE(sameOnAllRanks(buffer.data(), buffer.size() * sizeof(float)));
}

/// Asynchronous collectives on two channels, each over its own node and
/// peers communicators.
TEST(Hierarchical, AsyncOnTwoChannels) {
  if (channels() < 2)
    GTEST_SKIP() << "needs two channels";
  const std::vector<int64_t> counts = {1000, 77};
  std::vector<std::vector<float>> first, second;
  std::vector<void *> firstPointers = fillSmooth(first, counts, rank());
  std::vector<void *> secondPointers = fillSmooth(second, counts, rank());
  int64_t before = commrt::hierarchicalAllreducesRun();
  int64_t handles[2];
  ASSERT_EQ(commrt_fused_allreduce_start(firstPointers.data(), counts.data(), 2,
                                         COMMRT_F32, COMMRT_AVG, COMMRT_F16,
                                         0.5f, 0, &handles[0]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_fused_allreduce_start(
                secondPointers.data(), counts.data(), 2, COMMRT_F32, COMMRT_AVG,
                COMMRT_WIRE_NONE, 1.0f, 1, &handles[1]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t handle : handles)
    ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  expectHierarchicalRuns(before, 2);
  expectCloseToAverage(first, counts);
  expectCloseToAverage(second, counts);
}

//===----------------------------------------------------------------------===//
// The algorithm of each call
//===----------------------------------------------------------------------===//

/// Fills fused f32 buffers of `kFusedCounts` with the contributions.
void fillFused(std::vector<std::vector<float>> &buffers,
               std::vector<void *> &pointers) {
  int64_t total = 0;
  for (int64_t count : kFusedCounts) {
    buffers.emplace_back(count);
    for (int64_t i = 0; i < count; ++i)
      buffers.back()[i] = static_cast<float>(contribution(rank(), total + i));
    total += count;
  }
  for (std::vector<float> &buffer : buffers)
    pointers.push_back(buffer.data());
}

/// Expects the buffers of fillFused to hold the exact sum over all ranks.
void expectFusedSum(const std::vector<std::vector<float>> &buffers) {
  int64_t total = 0;
  for (const std::vector<float> &buffer : buffers)
    total += static_cast<int64_t>(buffer.size());
  std::vector<double> flat = flatReduction(COMMRT_SUM, 0, total);
  int64_t first = 0;
  for (size_t b = 0; b < buffers.size(); ++b) {
    for (size_t i = 0; i < buffers[b].size(); ++i)
      ASSERT_EQ(buffers[b][i], static_cast<float>(flat[first + i]))
          << "buffer " << b << " index " << i;
    first += static_cast<int64_t>(buffers[b].size());
  }
}

class PerCallAlgorithmTest : public ::testing::TestWithParam<commrt_algorithm> {
};

/// Whatever COMMRT_ALLREDUCE says, a call's algorithm decides how it runs:
/// the hierarchical one wherever the ranks form nodes, the others never
/// (the default follows COMMRT_ALLREDUCE); the sum is exact either way.
TEST_P(PerCallAlgorithmTest, RunsAsAskedWithTheExactSum) {
  const commrt_algorithm algorithm = GetParam();
  std::vector<std::vector<float>> buffers;
  std::vector<void *> pointers;
  fillFused(buffers, pointers);
  int64_t before = commrt::hierarchicalAllreducesRun();
  ASSERT_EQ(commrt_group_fused_allreduce(
                0, pointers.data(), kFusedCounts, std::size(kFusedCounts),
                COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f, algorithm),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t expected = 0;
  if (algorithm == COMMRT_ALGORITHM_HIERARCHICAL)
    expected = ranksFormNodes() ? 1 : 0;
  else if (algorithm == COMMRT_ALGORITHM_DEFAULT)
    expected = hierarchicalOverAllRanks() ? 1 : 0;
  EXPECT_EQ(commrt::hierarchicalAllreducesRun() - before, expected);
  expectFusedSum(buffers);
}

TEST_P(PerCallAlgorithmTest, StartedOnAChannelRunsAsAsked) {
  const commrt_algorithm algorithm = GetParam();
  std::vector<std::vector<float>> buffers;
  std::vector<void *> pointers;
  fillFused(buffers, pointers);
  int64_t before = commrt::hierarchicalAllreducesRun();
  int64_t handle = 0;
  ASSERT_EQ(commrt_group_fused_allreduce_start(
                0, pointers.data(), kFusedCounts, std::size(kFusedCounts),
                COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f, algorithm,
                commrt_channels() - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  if (algorithm == COMMRT_ALGORITHM_HIERARCHICAL)
    EXPECT_EQ(commrt::hierarchicalAllreducesRun() - before,
              ranksFormNodes() ? 1 : 0);
  expectFusedSum(buffers);
}

/// The name of a test of `algorithm`.
std::string
algorithmName(const ::testing::TestParamInfo<commrt_algorithm> &info) {
  static const char *const names[] = {"Default", "Ring", "Tree",
                                      "Hierarchical"};
  return names[info.param];
}

INSTANTIATE_TEST_SUITE_P(Algorithms, PerCallAlgorithmTest,
                         ::testing::Values(COMMRT_ALGORITHM_DEFAULT,
                                           COMMRT_ALGORITHM_RING,
                                           COMMRT_ALGORITHM_TREE,
                                           COMMRT_ALGORITHM_HIERARCHICAL),
                         algorithmName);

TEST(PerCallAlgorithm, UnknownAlgorithmIsRejected) {
  float value = 1.0f;
  void *pointers[] = {&value};
  const int64_t counts[] = {1};
  EXPECT_TRUE(failedWith(
      commrt_group_fused_allreduce(0, pointers, counts, 1, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f, 7),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_group_fused_allreduce: algorithm 7 is not a "
      "commrt_algorithm (0..3)"));
  int64_t handle = -1;
  EXPECT_TRUE(failedWith(commrt_group_fused_allreduce_start(
                             0, pointers, counts, 1, COMMRT_F32, COMMRT_SUM,
                             COMMRT_WIRE_NONE, 1.0f, -1, 0, &handle),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_group_fused_allreduce_start: algorithm -1 is "
                         "not a commrt_algorithm (0..3)"));
  EXPECT_EQ(handle, 0);
}

TEST(PerCallAlgorithm, RanksThatDisagreeOnTheAlgorithmFailOnEveryRank) {
  if (size() < 2)
    GTEST_SKIP() << "needs two ranks";
  float value = 1.0f;
  void *pointers[] = {&value};
  const int64_t counts[] = {1};
  // Checks on for this call: a new collective is checked by default, but a
  // run with COMMRT_CHECK=0 must still not hang here.
  ASSERT_EQ(commrt_set_consistency_checks(COMMRT_CHECKS_EVERY_CALL),
            COMMRT_SUCCESS);
  int32_t status = commrt_group_fused_allreduce(
      0, pointers, counts, 1, COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
      rank() == 0 ? COMMRT_ALGORITHM_RING : COMMRT_ALGORITHM_TREE);
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_MISMATCH,
                         "commrt_group_fused_allreduce: ranks disagree on "
                         "algorithm (min 1, max 2)"));
  ASSERT_EQ(commrt_set_consistency_checks(COMMRT_CHECKS_FIRST_OF_EACH),
            COMMRT_SUCCESS);
}

//===----------------------------------------------------------------------===//
// Process groups
//===----------------------------------------------------------------------===//

/// The handle of the group of ranks with this rank's `color`, ordered by
/// `key`, split under `id`.
int32_t splitGroup(int64_t id, int32_t color, int32_t key) {
  int32_t group = -1;
  EXPECT_EQ(commrt_group_split(id, color, key, &group), COMMRT_SUCCESS)
      << commrt_last_error();
  return group;
}

/// Runs a fused f32 SUM of the contributions among `group`, whose members
/// are the world ranks `members`, and expects their exact sum.
void expectGroupSum(int32_t group, const std::vector<int> &members) {
  const std::vector<int64_t> counts = {1001, 6};
  std::vector<std::vector<float>> buffers;
  std::vector<void *> pointers;
  int64_t first = 0;
  for (int64_t count : counts) {
    buffers.emplace_back(count);
    for (int64_t i = 0; i < count; ++i)
      buffers.back()[i] = static_cast<float>(contribution(rank(), first + i));
    pointers.push_back(buffers.back().data());
    first += count;
  }
  ASSERT_EQ(commrt_group_fused_allreduce(
                group, pointers.data(), counts.data(), 2, COMMRT_F32,
                COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f, COMMRT_ALGORITHM_DEFAULT),
            COMMRT_SUCCESS)
      << commrt_last_error();
  first = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    for (int64_t i = 0; i < counts[b]; ++i) {
      double sum = 0.0;
      for (int r : members)
        sum += contribution(r, first + i);
      ASSERT_EQ(buffers[b][i], static_cast<float>(sum))
          << "buffer " << b << " index " << i;
    }
    first += counts[b];
  }
}

TEST(Hierarchical, RowsOfTwoByTwoReduceWithinTheGroup) {
  if (size() != 4)
    GTEST_SKIP() << "needs four ranks";
  int32_t rows = splitGroup(301, rank() / 2, rank());
  // Each row is one emulated node: the flat algorithm among its two ranks.
  int row = rank() / 2;
  expectGroupSum(rows, {2 * row, 2 * row + 1});
}

TEST(Hierarchical, GroupOfAllRanksInReverseOrder) {
  if (size() != 4)
    GTEST_SKIP() << "needs four ranks";
  // Group ranks reverse the world's; nodes still count world ranks.
  int32_t all = splitGroup(302, 0, -rank());
  int64_t before = commrt::hierarchicalAllreducesRun();
  expectGroupSum(all, {0, 1, 2, 3});
  expectHierarchicalRuns(before, 1);
}

} // namespace
