//===- MpiGroupTest.cpp - commrt process groups across MPI ranks ----------===//
//
// Run under mpirun with any number of ranks (CTest uses 1 and 4). The ranks
// are laid out as rows of two (color rank / 2) and columns (color rank % 2),
// a 2x2 grid at 4 ranks; every expectation is computed from that layout, so
// it holds for any number of ranks. Values are small integers and halves, so
// group sums compare exactly; the reference of a sparse allreduce is a dense
// MPI_Allreduce over the test's own split of MPI_COMM_WORLD.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"
#include "commrt/commrt.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using commrt::testing::worldRank;
using commrt::testing::worldSize;

/// A layout of the ranks into groups: the ids of its split, and each rank's
/// color and key.
struct Layout {
  int64_t id;
  int32_t (*color)(int rank);
  int32_t (*key)(int rank);
};

int32_t rowOf(int rank) { return rank / 2; }
int32_t columnOf(int rank) { return rank % 2; }
int32_t everyone(int) { return 0; }
int32_t byRank(int rank) { return rank; }
int32_t reversed(int rank) { return -rank; }

/// Rows of two ranks, in world order.
const Layout kRows{101, rowOf, byRank};
/// Columns, in reverse world order.
const Layout kColumns{102, columnOf, reversed};
/// All ranks, in reverse world order.
const Layout kReversed{103, everyone, reversed};

/// The world ranks of this rank's group in `layout`, in group rank order.
std::vector<int> membersOf(const Layout &layout) {
  std::vector<int> members;
  int mine = layout.color(worldRank());
  for (int r = 0; r < worldSize(); ++r)
    if (layout.color(r) == mine)
      members.push_back(r);
  // By key, ties by world rank.
  std::sort(members.begin(), members.end(), [&](int a, int b) {
    return std::make_pair(layout.key(a), a) < std::make_pair(layout.key(b), b);
  });
  return members;
}

/// The handle of `layout`'s group: split by the first call, cached after.
int32_t groupOf(const Layout &layout) {
  int32_t group = -1;
  int rank = worldRank();
  EXPECT_EQ(commrt_group_split(layout.id, layout.color(rank), layout.key(rank),
                               &group),
            COMMRT_SUCCESS)
      << commrt_last_error();
  return group;
}

/// Rank `r`'s value at index `i`: a small integer or a half.
double contribution(int r, int64_t i) {
  return (r + 1) * 2 + static_cast<double>((i * 7 + r) % 23) * 0.5 - 5.0;
}

/// The sum over `members` of their contributions at `i`.
double groupSum(const std::vector<int> &members, int64_t i) {
  double sum = 0.0;
  for (int r : members)
    sum += contribution(r, i);
  return sum;
}

using commrt::testing::failedContaining;

/// Sets the consistency checks for the test's lifetime, then restores the
/// default.
class Checks {
public:
  explicit Checks(commrt_checks checks) {
    EXPECT_EQ(commrt_set_consistency_checks(checks), COMMRT_SUCCESS);
  }
  ~Checks() { commrt_set_consistency_checks(COMMRT_CHECKS_FIRST_OF_EACH); }
};

TEST(Group, RanksAndSizes) {
  EXPECT_EQ(commrt_group_rank(0), commrt_rank());
  EXPECT_EQ(commrt_group_size(0), commrt_size());
  for (const Layout *layout : {&kRows, &kColumns, &kReversed}) {
    int32_t group = groupOf(*layout);
    ASSERT_GT(group, 0);
    std::vector<int> members = membersOf(*layout);
    EXPECT_EQ(commrt_group_size(group), static_cast<int>(members.size()))
        << "split " << layout->id;
    int expectedRank = std::find(members.begin(), members.end(), worldRank()) -
                       members.begin();
    EXPECT_EQ(commrt_group_rank(group), expectedRank) << "split " << layout->id;
    // Every rank numbers its splits alike.
    int32_t extremes[2] = {group, -group};
    MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_INT32_T, MPI_MAX,
                  MPI_COMM_WORLD);
    EXPECT_EQ(extremes[0], -extremes[1]) << "ranks disagree on the handle";
  }
}

TEST(Group, LocalRankAndSizeAreTheNodes) {
  // The reference: the test's own split of the ranks sharing memory.
  MPI_Comm node;
  ASSERT_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                worldRank(), MPI_INFO_NULL, &node),
            MPI_SUCCESS);
  int nodeRank, nodeSize;
  MPI_Comm_rank(node, &nodeRank);
  MPI_Comm_size(node, &nodeSize);
  MPI_Comm_free(&node);
  EXPECT_EQ(commrt_local_rank(), nodeRank);
  EXPECT_EQ(commrt_local_size(), nodeSize);
  EXPECT_GE(commrt_local_size(), 1);
  EXPECT_LE(commrt_local_size(), commrt_size());
}

TEST(Group, SplitIsCachedWithoutCommunicating) {
  int32_t rows = groupOf(kRows);
  int rank = worldRank();
  // Only even ranks ask again: a split that communicated would hang.
  if (rank % 2 == 0)
    for (int i = 0; i < 3; ++i) {
      int32_t again = -1;
      ASSERT_EQ(commrt_group_split(kRows.id, kRows.color(rank), kRows.key(rank),
                                   &again),
                COMMRT_SUCCESS)
          << commrt_last_error();
      EXPECT_EQ(again, rows);
    }
  // The same id with another color or key is a programming error, found
  // locally.
  int32_t other = 77;
  EXPECT_TRUE(
      failedContaining(commrt_group_split(kRows.id, kRows.color(rank) + 1,
                                          kRows.key(rank), &other),
                       COMMRT_ERROR_INVALID_ARGUMENT,
                       "commrt_group_split: split id 101 made group"));
  EXPECT_EQ(other, 0);
  EXPECT_TRUE(failedContaining(commrt_group_split(kRows.id, kRows.color(rank),
                                                  kRows.key(rank) + 5, &other),
                               COMMRT_ERROR_INVALID_ARGUMENT, "key"));
  // The group still works.
  std::vector<float> buffer(5, 1.0f);
  void *buffers[] = {buffer.data()};
  int64_t counts[] = {5};
  ASSERT_EQ(commrt_group_fused_allreduce(rows, buffers, counts, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         COMMRT_ALGORITHM_DEFAULT),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(buffer[0], static_cast<float>(membersOf(kRows).size()));
}

TEST(Group, UnknownHandlesFail) {
  int32_t unknown = 9999;
  float data[4] = {1, 2, 3, 4}, residual[4] = {};
  void *buffers[] = {data};
  int64_t counts[] = {4};
  EXPECT_TRUE(failedContaining(
      commrt_group_fused_allreduce(unknown, buffers, counts, 1, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                   COMMRT_ALGORITHM_DEFAULT),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_group_fused_allreduce: group 9999 is not a process group"));
  int64_t handle = 5;
  EXPECT_TRUE(failedContaining(
      commrt_group_fused_allreduce_start(-3, buffers, counts, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         COMMRT_ALGORITHM_DEFAULT, 0, &handle),
      COMMRT_ERROR_INVALID_ARGUMENT, "group -3"));
  EXPECT_EQ(handle, 0);
  EXPECT_TRUE(failedContaining(
      commrt_group_sparse_allreduce(unknown, data, residual, 4, 1.0,
                                    COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_group_sparse_allreduce: group 9999"));
  EXPECT_EQ(commrt_group_rank(unknown), -1);
  EXPECT_EQ(commrt_group_size(unknown), -1);
  EXPECT_EQ(data[0], 1.0f) << "a failed call must not touch the buffers";
}

TEST(Group, InvalidSplitFailsEveryRank) {
  Checks checks(COMMRT_CHECKS_EVERY_CALL);
  int rank = worldRank();
  int32_t group = 5;
  int32_t status = commrt_group_split(104, rank == 0 ? -1 : 0, 0, &group);
  EXPECT_TRUE(failedContaining(status, COMMRT_ERROR_INVALID_ARGUMENT,
                               rank == 0
                                   ? "color -1 is negative"
                                   : "rank 0 passed an invalid argument"));
  EXPECT_EQ(group, 0);
}

TEST(Group, MismatchedSplitIdsFailEveryRank) {
  if (worldSize() < 2)
    GTEST_SKIP() << "needs two ranks";
  Checks checks(COMMRT_CHECKS_FIRST_OF_EACH);
  int32_t group = 5;
  int32_t status = commrt_group_split(200 + worldRank() % 2, 0, 0, &group);
  EXPECT_TRUE(
      failedContaining(status, COMMRT_ERROR_MISMATCH,
                       "ranks disagree on split id (min 200, max 201)"));
  EXPECT_EQ(group, 0);
}

TEST(Group, ChecksRunAmongTheGroup) {
  Checks checks(COMMRT_CHECKS_EVERY_CALL);
  int32_t rows = groupOf(kRows);
  std::vector<int> members = membersOf(kRows);
  // The group's second rank passes another count; the other rows agree.
  bool second = members.size() > 1 && worldRank() == members[1];
  std::vector<double> buffer(8, 1.0);
  void *buffers[] = {buffer.data()};
  int64_t counts[] = {second ? 7 : 8};
  int32_t status = commrt_group_fused_allreduce(
      rows, buffers, counts, 1, COMMRT_F64, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
      COMMRT_ALGORITHM_DEFAULT);
  if (members.size() > 1)
    EXPECT_TRUE(
        failedContaining(status, COMMRT_ERROR_MISMATCH,
                         "commrt_group_fused_allreduce: ranks disagree on "
                         "total count (min 7, max 8)"));
  else
    EXPECT_EQ(status, COMMRT_SUCCESS) << commrt_last_error();
}

/// A dtype and a reduction of a group allreduce.
struct DenseCase {
  commrt_dtype dtype;
  commrt_reduce reduce;
};

class GroupAllreduceTest : public ::testing::TestWithParam<DenseCase> {
protected:
  /// Reduces two buffers over `layout`'s group and checks them exactly.
  template <typename T> void reducesExactly(const Layout &layout) {
    DenseCase param = GetParam();
    int32_t group = groupOf(layout);
    std::vector<int> members = membersOf(layout);
    int rank = worldRank();
    // The second buffer is large enough for the ring at any threshold of
    // 1 MiB or less.
    std::vector<T> first(37), second(300000);
    for (size_t i = 0; i < first.size(); ++i)
      first[i] = static_cast<T>(contribution(rank, i));
    for (size_t i = 0; i < second.size(); ++i)
      second[i] = static_cast<T>(contribution(rank, i + 1000));
    void *buffers[] = {first.data(), nullptr, second.data()};
    int64_t counts[] = {static_cast<int64_t>(first.size()), 0,
                        static_cast<int64_t>(second.size())};
    ASSERT_EQ(commrt_group_fused_allreduce(
                  group, buffers, counts, 3, param.dtype, param.reduce,
                  COMMRT_WIRE_NONE, 1.0f, COMMRT_ALGORITHM_DEFAULT),
              COMMRT_SUCCESS)
        << commrt_last_error();
    auto expected = [&](int64_t i) {
      T sum = static_cast<T>(groupSum(members, i));
      if (param.reduce == COMMRT_AVG)
        sum /= static_cast<T>(members.size());
      return sum;
    };
    for (size_t i = 0; i < first.size(); ++i)
      ASSERT_EQ(first[i], expected(i))
          << "split " << layout.id << " index " << i;
    for (size_t i = 0; i < second.size(); ++i)
      ASSERT_EQ(second[i], expected(i + 1000))
          << "split " << layout.id << " index " << i;
  }

  void reducesExactly(const Layout &layout) {
    if (GetParam().dtype == COMMRT_F32)
      reducesExactly<float>(layout);
    else
      reducesExactly<double>(layout);
  }
};

TEST_P(GroupAllreduceTest, Rows) { reducesExactly(kRows); }
TEST_P(GroupAllreduceTest, Columns) { reducesExactly(kColumns); }
TEST_P(GroupAllreduceTest, AllRanksReversed) { reducesExactly(kReversed); }

INSTANTIATE_TEST_SUITE_P(
    Exact, GroupAllreduceTest,
    ::testing::Values(DenseCase{COMMRT_F32, COMMRT_SUM},
                      DenseCase{COMMRT_F32, COMMRT_AVG},
                      DenseCase{COMMRT_F64, COMMRT_SUM},
                      DenseCase{COMMRT_F64, COMMRT_AVG}),
    [](const ::testing::TestParamInfo<DenseCase> &info) {
      return std::string(info.param.dtype == COMMRT_F32 ? "f32" : "f64") +
             (info.param.reduce == COMMRT_SUM ? "_sum" : "_avg");
    });

TEST(Group, GroupZeroIsAllRanks) {
  std::vector<int> all;
  for (int r = 0; r < worldSize(); ++r)
    all.push_back(r);
  std::vector<float> buffer(100);
  for (size_t i = 0; i < buffer.size(); ++i)
    buffer[i] = static_cast<float>(contribution(worldRank(), i));
  void *buffers[] = {buffer.data()};
  int64_t counts[] = {100};
  ASSERT_EQ(commrt_group_fused_allreduce(0, buffers, counts, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         COMMRT_ALGORITHM_DEFAULT),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t i = 0; i < buffer.size(); ++i)
    ASSERT_EQ(buffer[i], static_cast<float>(groupSum(all, i))) << i;
}

TEST(Group, WireF16IsCloseWithAvg) {
  int32_t columns = groupOf(kColumns);
  std::vector<int> members = membersOf(kColumns);
  int rank = worldRank();
  const int64_t count = 5000;
  auto value = [](int r, int64_t i) {
    return static_cast<float>(std::sin(0.01 * i + r) * 3.0);
  };
  std::vector<float> buffer(count);
  for (int64_t i = 0; i < count; ++i)
    buffer[i] = value(rank, i);
  void *buffers[] = {buffer.data()};
  int64_t counts[] = {count};
  ASSERT_EQ(commrt_group_fused_allreduce(columns, buffers, counts, 1,
                                         COMMRT_F32, COMMRT_AVG, COMMRT_F16,
                                         0.5f, COMMRT_ALGORITHM_DEFAULT),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0.0;
    for (int r : members)
      sum += value(r, i);
    double expected = sum / members.size();
    // One f16 rounding per rank's value and per partial sum, relative
    // 2^-11 each, of values below 3 (halved by the prescale).
    ASSERT_NEAR(buffer[i], expected, 4e-3 * members.size()) << i;
  }
}

TEST(Group, ReduceScatterAndAllGatherShardAmongTheGroup) {
  // Columns in reverse world order: the shards follow the group's ranks.
  int32_t columns = groupOf(kColumns);
  std::vector<int> members = membersOf(kColumns);
  const int p = static_cast<int>(members.size());
  const int me = commrt_group_rank(columns);
  const int64_t count = 1001, each = (count + p - 1) / p;
  std::vector<float> buffer(count);
  for (int64_t i = 0; i < count; ++i)
    buffer[i] = static_cast<float>(contribution(worldRank(), i));
  void *buffers[] = {buffer.data()};
  int64_t counts[] = {count};
  std::vector<float> shard(each, -1.0f);
  ASSERT_EQ(commrt_reduce_scatter(columns, buffers, counts, 1, shard.data(),
                                  each, COMMRT_F32, COMMRT_SUM,
                                  COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < each; ++i) {
    int64_t at = me * each + i;
    ASSERT_EQ(shard[i],
              at < count ? static_cast<float>(groupSum(members, at)) : 0.0f)
        << "shard element " << i;
  }
  std::fill(buffer.begin(), buffer.end(), 0.0f);
  ASSERT_EQ(commrt_all_gather(columns, shard.data(), each, buffers, counts, 1,
                              COMMRT_F32, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(buffer[i], static_cast<float>(groupSum(members, i))) << i;
}

TEST(Group, AsyncOnTwoChannelsOverTwoGroups) {
  int32_t rows = groupOf(kRows), columns = groupOf(kColumns);
  if (commrt_channels() < 2)
    GTEST_SKIP() << "needs two channels";
  std::vector<int> rowMembers = membersOf(kRows),
                   columnMembers = membersOf(kColumns);
  int rank = worldRank();
  const int64_t count = 1 << 17;
  std::vector<float> rowBuffer(count), columnBuffer(count), worldBuffer(count);
  for (int64_t i = 0; i < count; ++i) {
    rowBuffer[i] = static_cast<float>(contribution(rank, i));
    columnBuffer[i] = static_cast<float>(contribution(rank, i + 7));
    worldBuffer[i] = static_cast<float>(contribution(rank, i + 3));
  }
  for (int round = 0; round < 3; ++round) {
    void *rowBuffers[] = {rowBuffer.data()};
    void *columnBuffers[] = {columnBuffer.data()};
    void *worldBuffers[] = {worldBuffer.data()};
    int64_t counts[] = {count};
    int64_t rowHandle = 0, columnHandle = 0, worldHandle = 0;
    // Row collectives on channel 0 and column ones on channel 1, with one of
    // all ranks on channel 0 among them, all in flight together.
    ASSERT_EQ(commrt_group_fused_allreduce_start(
                  rows, rowBuffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                  COMMRT_WIRE_NONE, 1.0f, COMMRT_ALGORITHM_DEFAULT, 0,
                  &rowHandle),
              COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(commrt_group_fused_allreduce_start(
                  columns, columnBuffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                  COMMRT_WIRE_NONE, 1.0f, COMMRT_ALGORITHM_DEFAULT, 1,
                  &columnHandle),
              COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(commrt_fused_allreduce_start(worldBuffers, counts, 1, COMMRT_F32,
                                           COMMRT_MAX, COMMRT_WIRE_NONE, 1.0f,
                                           0, &worldHandle),
              COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_NE(rowHandle, columnHandle);
    ASSERT_EQ(commrt_wait(columnHandle), COMMRT_SUCCESS) << commrt_last_error();
    ASSERT_EQ(commrt_wait(worldHandle), COMMRT_SUCCESS) << commrt_last_error();
    ASSERT_EQ(commrt_wait(rowHandle), COMMRT_SUCCESS) << commrt_last_error();
    if (round > 0)
      continue;
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(rowBuffer[i], static_cast<float>(groupSum(rowMembers, i))) << i;
      ASSERT_EQ(columnBuffer[i],
                static_cast<float>(groupSum(columnMembers, i + 7)))
          << i;
      float largest = static_cast<float>(contribution(0, i + 3));
      for (int r = 1; r < worldSize(); ++r)
        largest = std::max(largest, static_cast<float>(contribution(r, i + 3)));
      ASSERT_EQ(worldBuffer[i], largest) << i;
    }
  }
}

/// A small integer gradient entry of rank `r`.
float gradientAt(int r, int64_t i) {
  return static_cast<float>((i * 7 + r * 13 + (i * i) % 17) % 23 - 11);
}

/// A sparse allreduce scheme.
struct SparseCase {
  commrt_select select;
  commrt_exchange exchange;
  double density;
};

/// The name of a sparse case, e.g. "topk_allgather_100".
std::string sparseCaseName(const ::testing::TestParamInfo<SparseCase> &info) {
  static const char *const selects[] = {"topk", "threshold", "chunk"};
  static const char *const exchanges[] = {"allgather", "hash", "chunk"};
  return std::string(selects[info.param.select]) + "_" +
         exchanges[info.param.exchange] + "_" +
         std::to_string(static_cast<int>(info.param.density * 100));
}

class GroupSparseTest : public ::testing::TestWithParam<SparseCase> {};

TEST_P(GroupSparseTest, ReducesWhatTheGroupSent) {
  SparseCase param = GetParam();
  int32_t columns = groupOf(kColumns);
  std::vector<int> members = membersOf(kColumns);
  int rank = worldRank();
  const int64_t count = 3000;
  std::vector<float> grad(count), residual(count), acc(count);
  for (int64_t i = 0; i < count; ++i) {
    grad[i] = gradientAt(rank, i);
    residual[i] = static_cast<float>((i * 3 + rank) % 5 - 2);
    acc[i] = grad[i] + residual[i];
  }
  for (commrt_reduce reduce : {COMMRT_SUM, COMMRT_AVG}) {
    std::vector<float> g = grad, res = residual;
    ASSERT_EQ(commrt_group_sparse_allreduce(columns, g.data(), res.data(),
                                            count, param.density, param.select,
                                            param.exchange, reduce, 256),
              COMMRT_SUCCESS)
        << commrt_last_error();
    // The reference: what each rank sent (acc - residual), summed densely
    // over the test's own split of the world.
    MPI_Comm reference;
    MPI_Comm_split(MPI_COMM_WORLD, kColumns.color(rank), kColumns.key(rank),
                   &reference);
    std::vector<double> sent(count);
    for (int64_t i = 0; i < count; ++i)
      sent[i] = static_cast<double>(acc[i]) - res[i];
    MPI_Allreduce(MPI_IN_PLACE, sent.data(), static_cast<int>(count),
                  MPI_DOUBLE, MPI_SUM, reference);
    MPI_Comm_free(&reference);
    for (int64_t i = 0; i < count; ++i) {
      float expected = static_cast<float>(sent[i]);
      if (reduce == COMMRT_AVG)
        expected /= static_cast<float>(members.size());
      ASSERT_EQ(g[i], expected) << "index " << i;
    }
    if (param.density == 1.0 && param.select == COMMRT_SELECT_TOPK)
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(res[i], 0.0f) << "density 1 sends everything";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, GroupSparseTest,
    ::testing::Values(
        SparseCase{COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_ALLGATHER, 1.0},
        SparseCase{COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_ALLGATHER, 0.1},
        SparseCase{COMMRT_SELECT_THRESHOLD, COMMRT_EXCHANGE_HASH, 0.1},
        SparseCase{COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_HASH, 1.0},
        SparseCase{COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK, 0.25}),
    sparseCaseName);

} // namespace
