//===- MpiAllreduceTest.cpp - commrt collectives across MPI ranks ---------===//
//
// Run under mpirun with any number of ranks (CTest uses 2 and 4). Values are
// small integers and halves, exact in every dtype, so results compare
// exactly. Broadcasts and allgathers are tested here too.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// The result of `reduce` over all ranks' contributions at index `i`.
double expected(commrt_reduce reduce, int64_t i) {
  return commrt::testing::expectedReduction(reduce, i, size());
}

TEST(Runtime, RanksMatchMpi) {
  int worldRank, worldSize;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  EXPECT_EQ(rank(), worldRank);
  EXPECT_EQ(size(), worldSize);
  EXPECT_EQ(commrt_backend_in_use(), COMMRT_BACKEND_MPI);
}

using DtypeAndReduce = std::tuple<commrt_dtype, commrt_reduce>;

class AllreduceTest : public ::testing::TestWithParam<DtypeAndReduce> {};

TEST_P(AllreduceTest, ReducesExactlyInPlace) {
  auto [dtype, reduce] = GetParam();
  const int64_t count = 1000;
  GuardedContributions buffer(dtype, count, rank());
  ASSERT_EQ(commrt_allreduce(buffer.data(), count, dtype, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(buffer.get(i), expected(reduce, i)) << "index " << i;
  buffer.expectGuardsIntact();
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, AllreduceTest,
    ::testing::Combine(
        ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
        ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN)),
    [](const ::testing::TestParamInfo<DtypeAndReduce> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param));
    });

class LargeAllreduceTest : public ::testing::TestWithParam<commrt_dtype> {};

TEST_P(LargeAllreduceTest, SumsAMillionElements) {
  commrt_dtype dtype = GetParam();
  const int64_t count = 1 << 20;
  TypedBuffer buffer(dtype, count);
  for (int64_t i = 0; i < count; ++i)
    buffer.set(i, contribution(rank(), i));
  ASSERT_EQ(commrt_allreduce(buffer.data(), count, dtype, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(buffer.get(i), expected(COMMRT_SUM, i)) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, LargeAllreduceTest,
    ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
    [](const ::testing::TestParamInfo<commrt_dtype> &info) {
      return dtypeName(info.param);
    });

class AllreduceWireTest : public ::testing::TestWithParam<DtypeAndReduce> {};

TEST_P(AllreduceWireTest, ReducesThroughTheWireType) {
  auto [wire, reduce] = GetParam();
  const int64_t count = 1000;
  std::vector<float> data(count);
  // 2^-12 is lost on the wire in both types: the results are those of the
  // integers alone.
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(contribution(rank(), i)) * (1.0f + 0x1p-12f);
  ASSERT_EQ(commrt_allreduce_wire(data.data(), count, wire, reduce, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // Within a few ulps of f32: unpacking for AVG multiplies by 1/size.
  for (int64_t i = 0; i < count; ++i)
    ASSERT_FLOAT_EQ(data[i], expected(reduce, i)) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(
    WireTypes, AllreduceWireTest,
    ::testing::Combine(::testing::Values(COMMRT_F16, COMMRT_BF16),
                       ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX,
                                         COMMRT_MIN)),
    [](const ::testing::TestParamInfo<DtypeAndReduce> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param));
    });

/// A broadcast's root: the first or the last rank.
enum class Root { First, Last };

using DtypeAndRoot = std::tuple<commrt_dtype, Root>;

class BroadcastTest : public ::testing::TestWithParam<DtypeAndRoot> {
protected:
  int root() const {
    return std::get<1>(GetParam()) == Root::First ? 0 : size() - 1;
  }
};

TEST_P(BroadcastTest, CopiesRootsElementsToEveryRank) {
  commrt_dtype dtype = std::get<0>(GetParam());
  for (int64_t count : {int64_t(1), int64_t(1000), int64_t(1) << 20}) {
    // One guard element on either side must keep this rank's value.
    TypedBuffer buffer(dtype, count + 2);
    buffer.set(0, 100 + rank());
    buffer.set(count + 1, 200 + rank());
    for (int64_t i = 0; i < count; ++i)
      buffer.set(i + 1, contribution(rank(), i));
    TypedBuffer expected(dtype, count);
    for (int64_t i = 0; i < count; ++i)
      expected.set(i, contribution(root(), i));
    const size_t width = commrt::elementSize(dtype);
    void *data = static_cast<char *>(buffer.data()) + width;
    ASSERT_EQ(commrt_broadcast(data, count, dtype, root()), COMMRT_SUCCESS)
        << commrt_last_error();
    // Bit for bit: 16-bit elements are copied, not converted.
    ASSERT_EQ(std::memcmp(data, expected.data(), count * width), 0)
        << "count " << count;
    for (int64_t i = 0; i < std::min<int64_t>(count, 16); ++i)
      EXPECT_EQ(buffer.get(i + 1), contribution(root(), i)) << "index " << i;
    EXPECT_EQ(buffer.get(0), 100 + rank());
    EXPECT_EQ(buffer.get(count + 1), 200 + rank());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, BroadcastTest,
    ::testing::Combine(::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16,
                                         COMMRT_BF16),
                       ::testing::Values(Root::First, Root::Last)),
    [](const ::testing::TestParamInfo<DtypeAndRoot> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) +
             (std::get<1>(info.param) == Root::First ? "_first" : "_last");
    });

TEST(Broadcast, CountZeroIsANoOp) {
  float value = static_cast<float>(rank());
  EXPECT_EQ(commrt_broadcast(nullptr, 0, COMMRT_F32, 0), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(commrt_broadcast(&value, 0, COMMRT_BF16, size() - 1),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, static_cast<float>(rank()));
}

/// Invalid arguments passed by every rank, with consistency checks off
/// (false) and on (true): every rank fails alike, and none is left waiting.
class BroadcastInvalidTest : public ChecksTest {};

TEST_P(BroadcastInvalidTest, FailsOnEveryRank) {
  float data[4] = {};
  const std::string ranks = "(expected 0.." + std::to_string(size() - 1) + ")";
  EXPECT_TRUE(failedWith(commrt_broadcast(nullptr, 4, COMMRT_F32, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: buffer is null but count is 4"));
  EXPECT_TRUE(failedWith(commrt_broadcast(data, -1, COMMRT_F32, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: count -1 is negative"));
  EXPECT_TRUE(failedWith(commrt_broadcast(data, 4, COMMRT_F32, -1),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: root -1 is out of range " + ranks));
  EXPECT_TRUE(failedWith(commrt_broadcast(data, 4, COMMRT_F16, size()),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: root " + std::to_string(size()) +
                             " is out of range " + ranks));
  EXPECT_TRUE(failedWith(
      commrt_broadcast(data, 4, 4, 0), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_broadcast: dtype 4 is not a commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(failedWith(commrt_broadcast(nullptr, 0, COMMRT_F32, size()),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: root " + std::to_string(size()) +
                             " is out of range " + ranks))
      << "the root is checked even when count is 0";
  // The ranks are still in step.
  float value = rank() == 0 ? 5.0f : 0.0f;
  ASSERT_EQ(commrt_broadcast(&value, 1, COMMRT_F32, 0), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, 5.0f);
}

INSTANTIATE_TEST_SUITE_P(Checks, BroadcastInvalidTest, ::testing::Bool(),
                         checksName);

/// Rank r's count in an allgather of `base` per rank: base + 3r, and none
/// on rank 1 (a rank with nothing to send).
int64_t allgatherCount(int r, int64_t base) {
  return r == 1 ? 0 : base + 3 * r;
}

class AllgatherTest : public ::testing::TestWithParam<commrt_dtype> {};

TEST_P(AllgatherTest, ConcatenatesEveryRanksElementsInRankOrder) {
  commrt_dtype dtype = GetParam();
  const size_t width = commrt::elementSize(dtype);
  for (int64_t base : {int64_t(1), int64_t(1000), int64_t(1) << 18}) {
    std::vector<int64_t> counts(size());
    int64_t total = 0;
    for (int r = 0; r < size(); ++r)
      total += counts[r] = allgatherCount(r, base);
    // Each rank sends its own contributions (scaled by rank + 1).
    TypedBuffer send(dtype, std::max<int64_t>(1, counts[rank()]));
    for (int64_t i = 0; i < counts[rank()]; ++i)
      send.set(i, contribution(rank(), i % 64));
    // One guard element on either side of what is received.
    TypedBuffer received(dtype, total + 2);
    received.set(0, 100 + rank());
    received.set(total + 1, 200 + rank());
    TypedBuffer expected(dtype, total);
    for (int r = 0, at = 0; r < size(); at += counts[r++])
      for (int64_t i = 0; i < counts[r]; ++i)
        expected.set(at + i, contribution(r, i % 64));
    void *into = static_cast<char *>(received.data()) + width;
    ASSERT_EQ(commrt_allgather(send.data(), into, counts.data(), dtype),
              COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(std::memcmp(into, expected.data(), total * width), 0)
        << "base " << base;
    EXPECT_EQ(received.get(0), 100 + rank());
    EXPECT_EQ(received.get(total + 1), 200 + rank());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, AllgatherTest,
    ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
    [](const ::testing::TestParamInfo<commrt_dtype> &info) {
      return std::string(dtypeName(info.param));
    });

TEST(Allgather, NothingToGatherIsANoOp) {
  std::vector<int64_t> counts(size(), 0);
  EXPECT_EQ(commrt_allgather(nullptr, nullptr, counts.data(), COMMRT_F32),
            COMMRT_SUCCESS)
      << commrt_last_error();
}

/// Invalid arguments passed by every rank, with consistency checks off
/// (false) and on (true): every rank fails alike, and none is left waiting.
class AllgatherInvalidTest : public ChecksTest {};

TEST_P(AllgatherInvalidTest, FailsOnEveryRank) {
  std::vector<float> send(4), received(4 * size());
  std::vector<int64_t> counts(size(), 4);
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), received.data(), nullptr, COMMRT_F32),
      COMMRT_ERROR_INVALID_ARGUMENT, "commrt_allgather: counts is null"));
  EXPECT_TRUE(failedWith(
      commrt_allgather(nullptr, received.data(), counts.data(), COMMRT_F32),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allgather: send is null but this rank's count, counts[" +
          std::to_string(rank()) + "], is 4"));
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), nullptr, counts.data(), COMMRT_F32),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allgather: recv is null but the counts add up to " +
          std::to_string(4 * size())));
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), received.data(), counts.data(), 4),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allgather: dtype 4 is not a commrt_dtype (expected 0..3)"));
  counts[size() - 1] = -2;
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), received.data(), counts.data(), COMMRT_F32),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allgather: counts[" + std::to_string(size() - 1) +
          "] -2 is negative"));
  // The ranks are still in step.
  float value = rank() == 0 ? 5.0f : 0.0f;
  ASSERT_EQ(commrt_broadcast(&value, 1, COMMRT_F32, 0), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, 5.0f);
}

INSTANTIATE_TEST_SUITE_P(Checks, AllgatherInvalidTest, ::testing::Bool(),
                         checksName);

/// With COMMRT_CHECKS_FIRST_OF_EACH, the default, a training loop pays for
/// the checks of its first step only, and a disagreement in a collective no
/// rank has run before fails on every rank as with every call checked.
TEST(FirstOfEachChecks, CheckEachDistinctCollectiveOnce) {
  if (size() < 2)
    GTEST_SKIP() << "needs two or more ranks";
  ASSERT_EQ(commrt_set_consistency_checks(COMMRT_CHECKS_FIRST_OF_EACH),
            COMMRT_SUCCESS);
  // Sizes no other test uses, so that these collectives are new here.
  std::vector<float> bucketA(4099), bucketB(8209);
  int64_t before = commrt::consistencyChecksRun();
  for (int step = 0; step < 5; ++step) {
    ASSERT_EQ(commrt_allreduce(bucketA.data(), 4099, COMMRT_F32, COMMRT_SUM),
              COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(commrt_allreduce(bucketB.data(), 8209, COMMRT_F32, COMMRT_AVG),
              COMMRT_SUCCESS)
        << commrt_last_error();
  }
  EXPECT_EQ(commrt::consistencyChecksRun() - before, 2)
      << "one check for each of the two distinct collectives";

  int64_t count = 4111 + rank();
  std::vector<float> uneven(count);
  EXPECT_TRUE(
      failedWith(commrt_allreduce(uneven.data(), count, COMMRT_F32, COMMRT_SUM),
                 COMMRT_ERROR_MISMATCH,
                 "commrt_allreduce: ranks disagree on count (min 4111, max " +
                     std::to_string(4111 + size() - 1) + ")"));

  // Every call checked again: a check each.
  ASSERT_EQ(commrt_set_consistency_checks(COMMRT_CHECKS_EVERY_CALL),
            COMMRT_SUCCESS);
  before = commrt::consistencyChecksRun();
  for (int step = 0; step < 3; ++step)
    ASSERT_EQ(commrt_allreduce(bucketA.data(), 4099, COMMRT_F32, COMMRT_SUM),
              COMMRT_SUCCESS)
        << commrt_last_error();
  EXPECT_EQ(commrt::consistencyChecksRun() - before, 3);
  commrt_set_consistency_checks(COMMRT_CHECKS_OFF);
}

TEST_F(CheckedTest, CountMismatchFailsOnEveryRank) {
  float data[4] = {};
  int64_t count = rank() == 0 ? 3 : 4;
  EXPECT_TRUE(failedWith(commrt_allreduce(data, count, COMMRT_F32, COMMRT_SUM),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_allreduce: ranks disagree on count (min 3, "
                         "max 4)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, DtypeMismatchFailsOnEveryRank) {
  double data[4] = {};
  int32_t dtype = rank() == lastRank() ? COMMRT_F64 : COMMRT_F32;
  EXPECT_TRUE(failedWith(commrt_allreduce(data, 4, dtype, COMMRT_MAX),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_allreduce: ranks disagree on dtype (min 0, "
                         "max 1)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, ReduceMismatchFailsOnEveryRank) {
  float data[4] = {};
  int32_t reduce = rank() == 0 ? COMMRT_MIN : COMMRT_SUM;
  EXPECT_TRUE(failedWith(commrt_allreduce(data, 4, COMMRT_F32, reduce),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_allreduce: ranks disagree on reduce (min 0, "
                         "max 3)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, WireMismatchFailsOnEveryRank) {
  float data[4] = {};
  int32_t wire = rank() == 0 ? COMMRT_BF16 : COMMRT_F16;
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(data, 4, wire, COMMRT_SUM, 1.0f),
      COMMRT_ERROR_MISMATCH,
      "commrt_allreduce_wire: ranks disagree on wire (min 2, max 3)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, InvalidArgumentOnOneRankFailsOnEveryRank) {
  float data[4] = {};
  bool bad = rank() == lastRank();
  int32_t status =
      commrt_allreduce(bad ? nullptr : data, 4, COMMRT_F32, COMMRT_SUM);
  std::string message = bad ? "commrt_allreduce: buffer is null but count is 4"
                            : "commrt_allreduce: rank " +
                                  std::to_string(lastRank()) +
                                  " passed an invalid argument";
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, message));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, InvalidDtypeOnRankZeroFailsOnEveryRank) {
  float data[4] = {};
  int32_t status =
      commrt_allreduce(data, 4, rank() == 0 ? 9 : COMMRT_F32, COMMRT_SUM);
  std::string message =
      rank() == 0
          ? "commrt_allreduce: dtype 9 is not a commrt_dtype (expected 0..3)"
          : "commrt_allreduce: rank 0 passed an invalid argument";
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, message));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, BroadcastRootMismatchFailsOnEveryRank) {
  float data[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  int32_t root = rank() == 0 ? 0 : lastRank();
  EXPECT_TRUE(failedWith(commrt_broadcast(data, 4, COMMRT_F32, root),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_broadcast: ranks disagree on root (min 0, "
                         "max " +
                             std::to_string(lastRank()) + ")"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, AllgatherCountsMismatchFailsOnEveryRank) {
  if (size() < 2)
    GTEST_SKIP() << "needs two or more ranks";
  std::vector<float> send(3), received(2 * size() + 1);
  // The last rank believes rank 0 sends one element fewer ...
  std::vector<int64_t> counts(size(), 2);
  if (rank() == lastRank())
    counts[0] = 1;
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), received.data(), counts.data(), COMMRT_F32),
      COMMRT_ERROR_MISMATCH,
      "commrt_allgather: ranks disagree on total count "
      "(min " +
          std::to_string(2 * size() - 1) + ", max " +
          std::to_string(2 * size()) + ")"));
  expectRanksStillInStep();
  // ... and then that rank 1 sends that one more: the same total.
  if (rank() == lastRank())
    counts[1] = 3;
  EXPECT_TRUE(failedWith(
      commrt_allgather(send.data(), received.data(), counts.data(), COMMRT_F32),
      COMMRT_ERROR_MISMATCH, "commrt_allgather: ranks disagree on counts"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, BroadcastCountMismatchFailsOnEveryRank) {
  double data[4] = {};
  int64_t count = rank() == lastRank() ? 4 : 3;
  EXPECT_TRUE(failedWith(commrt_broadcast(data, count, COMMRT_F64, 0),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_broadcast: ranks disagree on count (min 3, "
                         "max 4)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, BroadcastCountZeroOnOneRankFailsOnEveryRank) {
  float data[4] = {};
  int64_t count = rank() == 0 ? 0 : 4;
  EXPECT_TRUE(failedWith(commrt_broadcast(data, count, COMMRT_F32, 0),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_broadcast: ranks disagree on count (min 0, "
                         "max 4)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, BroadcastDtypeMismatchFailsOnEveryRank) {
  uint16_t data[4] = {};
  int32_t dtype = rank() == 0 ? COMMRT_BF16 : COMMRT_F16;
  EXPECT_TRUE(failedWith(commrt_broadcast(data, 4, dtype, 0),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_broadcast: ranks disagree on dtype (min 2, "
                         "max 3)"));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, BroadcastInvalidRootOnOneRankFailsOnEveryRank) {
  float data[4] = {};
  bool bad = rank() == lastRank();
  int32_t status = commrt_broadcast(data, 4, COMMRT_F32, bad ? size() : 0);
  std::string message =
      bad ? "commrt_broadcast: root " + std::to_string(size()) +
                " is out of range (expected 0.." + std::to_string(lastRank()) +
                ")"
          : "commrt_broadcast: rank " + std::to_string(lastRank()) +
                " passed an invalid argument";
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, message));
  expectRanksStillInStep();
}

TEST_F(CheckedTest, MatchingCallsSucceed) {
  EXPECT_EQ(commrt_allreduce(nullptr, 0, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  float value = rank() == lastRank() ? -3.5f : 0.0f;
  EXPECT_EQ(commrt_broadcast(&value, 1, COMMRT_F32, lastRank()), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, -3.5f);
  expectRanksStillInStep();
}

} // namespace
