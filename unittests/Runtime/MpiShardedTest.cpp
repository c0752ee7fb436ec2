//===- MpiShardedTest.cpp - Reduce-scatter and all-gather across ranks ----===//
//
// commrt_reduce_scatter and commrt_all_gather under mpirun (CTest runs 1, 2,
// 3 and 4 ranks): the shards of a flat tensor made of several buffers whose
// sizes the ranks do not divide, so that shards cross buffers, the ring's
// 1 MiB pieces and the padding of the last shards. Contributions are small
// integers, exact in every type, so results must be exact.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// Buffer sizes adding up to 1,262,167 elements: no rank count from 2 to 4
/// divides it, shards span several buffers, and an f32 shard is several
/// ring pieces.
const std::vector<int64_t> kCounts = {3, 300001, 1, 262144, 0, 7, 700011};

/// Rank `r`'s shard of `total` elements on `ranks` ranks, as commrt.h
/// describes it.
struct ShardRange {
  int64_t begin, length, padded;
};
ShardRange shardRange(int64_t total, int r, int ranks) {
  int64_t each = (total + ranks - 1) / ranks;
  int64_t begin = std::min(total, r * each);
  return {begin, std::min(total, begin + each) - begin, each};
}

/// The flat tensor's buffers of `dtype`, each between guards.
struct FlatBuffers {
  commrt_dtype dtype;
  std::vector<GuardedContributions> buffers;
  std::vector<void *> pointers;
  int64_t total = 0;

  /// Every buffer filled with rank `r`'s contributions at its elements'
  /// places in the flat tensor.
  FlatBuffers(commrt_dtype dtype, int r) : dtype(dtype) {
    for (int64_t count : kCounts) {
      buffers.emplace_back(dtype, count, r);
      total += count;
    }
    for (GuardedContributions &buffer : buffers)
      pointers.push_back(buffer.data());
  }

  /// Element `i` of the flat tensor.
  double get(int64_t i) const {
    for (size_t b = 0; b < kCounts.size(); ++b) {
      if (i < kCounts[b])
        return buffers[b].get(i);
      i -= kCounts[b];
    }
    return NAN;
  }

  void expectGuardsIntact() const {
    for (const GuardedContributions &buffer : buffers)
      buffer.expectGuardsIntact();
  }
};

/// The contribution of rank `r` at flat index `i`: buffer b's element j is
/// contribution(r, j), as GuardedContributions fills it.
double flatContribution(int r, int64_t i) {
  for (int64_t count : kCounts) {
    if (i < count)
      return contribution(r, i);
    i -= count;
  }
  return NAN;
}

/// What `reduce` gives at flat index `i` over `ranks` ranks.
double flatReduction(commrt_reduce reduce, int64_t i, int ranks) {
  for (int64_t count : kCounts) {
    if (i < count)
      return expectedReduction(reduce, i, ranks);
    i -= count;
  }
  return NAN;
}

/// A shard of `padded` elements between guards, its padding set to `fill`.
struct GuardedShard {
  GuardedShard(commrt_dtype dtype, int64_t padded, double fill)
      : dtype(dtype), padded(padded), buffer(dtype, padded + 2) {
    for (int64_t i = 0; i < padded + 2; ++i)
      buffer.set(i, fill);
    buffer.set(0, 42.0);
    buffer.set(padded + 1, 43.0);
  }
  void *data() {
    return static_cast<unsigned char *>(buffer.data()) +
           commrt::elementSize(dtype);
  }
  double get(int64_t i) const { return buffer.get(i + 1); }
  void set(int64_t i, double value) { buffer.set(i + 1, value); }
  void expectGuardsIntact() const {
    EXPECT_EQ(buffer.get(0), 42.0) << "the guard before the shard";
    EXPECT_EQ(buffer.get(padded + 1), 43.0) << "the guard after the shard";
  }

  commrt_dtype dtype;
  int64_t padded;
  TypedBuffer buffer;
};

/// dtype, wire (COMMRT_WIRE_NONE or a 16-bit type) and reduction.
using ShardedCase = std::tuple<commrt_dtype, int32_t, commrt_reduce>;

/// The test name of a case: dtype, wire ("own" for none) and reduction.
std::string caseName(const ::testing::TestParamInfo<ShardedCase> &info) {
  auto [dtype, wire, reduce] = info.param;
  return std::string(dtypeName(dtype)) + "_" +
         (wire == COMMRT_WIRE_NONE
              ? "own"
              : dtypeName(static_cast<commrt_dtype>(wire))) +
         "_" + reduceName(reduce);
}

class ReduceScatterTest : public ::testing::TestWithParam<ShardedCase> {};

TEST_P(ReduceScatterTest, EachRankGetsItsShardOfTheAllreduceExactly) {
  auto [dtype, wire, reduce] = GetParam();
  // A power of two: the prescale and its undoing are exact.
  const float prescale = wire == COMMRT_WIRE_NONE ? 1.0f : 0.5f;
  FlatBuffers flat(dtype, rank());
  const ShardRange own = shardRange(flat.total, rank(), size());
  GuardedShard shard(dtype, own.padded, /*fill=*/99.0);
  ASSERT_EQ(
      commrt_reduce_scatter(/*group=*/0, flat.pointers.data(), kCounts.data(),
                            static_cast<int32_t>(kCounts.size()), shard.data(),
                            own.padded, dtype, reduce, wire, prescale),
      COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < own.length; ++i) {
    double expected = flatReduction(reduce, own.begin + i, size());
    double got = shard.get(i);
    // An average of integers is exact only where the ranks divide the sum:
    // within the rounding of the type otherwise.
    bool exact = got == expected;
    if (!exact && reduce == COMMRT_AVG)
      exact = std::abs(got - expected) <= std::abs(expected) * 1e-2;
    if (!exact && wrong++ == 0)
      first = i;
  }
  EXPECT_EQ(wrong, 0) << "first wrong at shard index " << first << ": "
                      << shard.get(first) << " for "
                      << flatReduction(reduce, own.begin + first, size());
  for (int64_t i = own.length; i < own.padded; ++i)
    ASSERT_EQ(shard.get(i), 0.0) << "padding element " << i;
  shard.expectGuardsIntact();
  flat.expectGuardsIntact();
}

INSTANTIATE_TEST_SUITE_P(
    TypesWiresAndReductions, ReduceScatterTest,
    ::testing::Values(ShardedCase{COMMRT_F32, COMMRT_WIRE_NONE, COMMRT_SUM},
                      ShardedCase{COMMRT_F32, COMMRT_WIRE_NONE, COMMRT_AVG},
                      ShardedCase{COMMRT_F32, COMMRT_WIRE_NONE, COMMRT_MAX},
                      ShardedCase{COMMRT_F64, COMMRT_WIRE_NONE, COMMRT_MIN},
                      ShardedCase{COMMRT_F64, COMMRT_WIRE_NONE, COMMRT_AVG},
                      ShardedCase{COMMRT_BF16, COMMRT_WIRE_NONE, COMMRT_SUM},
                      ShardedCase{COMMRT_F32, COMMRT_F16, COMMRT_SUM},
                      ShardedCase{COMMRT_F32, COMMRT_F16, COMMRT_AVG},
                      ShardedCase{COMMRT_F32, COMMRT_BF16, COMMRT_MAX},
                      ShardedCase{COMMRT_F64, COMMRT_BF16, COMMRT_AVG}),
    caseName);

class AllGatherTest : public ::testing::TestWithParam<ShardedCase> {};

TEST_P(AllGatherTest, EveryRankGetsEveryShardInItsPlace) {
  auto [dtype, wire, reduce] = GetParam();
  (void)reduce;
  const float prescale = wire == COMMRT_WIRE_NONE ? 1.0f : 0.25f;
  // Every rank starts from values that are not the result.
  FlatBuffers flat(dtype, /*r=*/7);
  const ShardRange own = shardRange(flat.total, rank(), size());
  // The padding is not read: it holds a value no result has.
  GuardedShard shard(dtype, own.padded, /*fill=*/-1000.0);
  for (int64_t i = 0; i < own.length; ++i)
    shard.set(i, flatContribution(0, own.begin + i));
  ASSERT_EQ(commrt_all_gather(
                /*group=*/0, shard.data(), own.padded, flat.pointers.data(),
                kCounts.data(), static_cast<int32_t>(kCounts.size()), dtype,
                wire, prescale),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < flat.total; ++i)
    if (flat.get(i) != flatContribution(0, i) && wrong++ == 0)
      first = i;
  EXPECT_EQ(wrong, 0) << "first wrong at flat index " << first << ": "
                      << flat.get(first) << " for "
                      << flatContribution(0, first);
  flat.expectGuardsIntact();
  shard.expectGuardsIntact();
}

INSTANTIATE_TEST_SUITE_P(
    TypesAndWires, AllGatherTest,
    ::testing::Values(ShardedCase{COMMRT_F32, COMMRT_WIRE_NONE, COMMRT_SUM},
                      ShardedCase{COMMRT_F64, COMMRT_WIRE_NONE, COMMRT_SUM},
                      ShardedCase{COMMRT_F16, COMMRT_WIRE_NONE, COMMRT_SUM},
                      ShardedCase{COMMRT_F32, COMMRT_F16, COMMRT_SUM},
                      ShardedCase{COMMRT_F32, COMMRT_BF16, COMMRT_SUM}),
    caseName);

TEST(Sharded, AllGatherInAWireTypeGivesEveryRankTheSameRoundedValues) {
  // 0.1 is not a 16-bit float: the owner keeps the rounded value too, so
  // that all ranks hold the same parameters.
  std::vector<float> flat(10, -5.0f);
  const ShardRange own = shardRange(10, rank(), size());
  std::vector<float> shard(own.padded, 0.1f * static_cast<float>(rank() + 1));
  void *buffers[] = {flat.data()};
  const int64_t counts[] = {10};
  ASSERT_EQ(commrt_all_gather(0, shard.data(), own.padded, buffers, counts, 1,
                              COMMRT_F32, COMMRT_F16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < 10; ++i) {
    int owner = static_cast<int>(i / own.padded);
    float sent = 0.1f * static_cast<float>(owner + 1);
    EXPECT_EQ(flat[i], commrt::halfToFloat(commrt::floatToHalf(sent)))
        << "element " << i;
  }
  EXPECT_TRUE(sameOnAllRanks(flat.data(), flat.size() * sizeof(float)));
}

TEST(Sharded, ReduceScatterThenAllGatherIsTheAllreduce) {
  FlatBuffers sharded(COMMRT_F32, rank());
  FlatBuffers reduced(COMMRT_F32, rank());
  const ShardRange own = shardRange(sharded.total, rank(), size());
  std::vector<float> shard(own.padded);
  const int32_t n = static_cast<int32_t>(kCounts.size());
  ASSERT_EQ(commrt_reduce_scatter(0, sharded.pointers.data(), kCounts.data(), n,
                                  shard.data(), own.padded, COMMRT_F32,
                                  COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_all_gather(0, shard.data(), own.padded,
                              sharded.pointers.data(), kCounts.data(), n,
                              COMMRT_F32, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_fused_allreduce(reduced.pointers.data(), kCounts.data(), n,
                                   COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE,
                                   1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t b = 0; b < kCounts.size(); ++b)
    EXPECT_EQ(std::memcmp(sharded.pointers[b], reduced.pointers[b],
                          kCounts[b] * sizeof(float)),
              0)
        << "buffer " << b;
}

TEST(Sharded, StartedOnAChannelGivesTheBlockingResult) {
  FlatBuffers blocking(COMMRT_F32, rank());
  FlatBuffers started(COMMRT_F32, rank());
  const ShardRange own = shardRange(blocking.total, rank(), size());
  std::vector<float> blockingShard(own.padded), startedShard(own.padded);
  const int32_t n = static_cast<int32_t>(kCounts.size());
  ASSERT_EQ(commrt_reduce_scatter(0, blocking.pointers.data(), kCounts.data(),
                                  n, blockingShard.data(), own.padded,
                                  COMMRT_F32, COMMRT_AVG, COMMRT_BF16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle = 0;
  ASSERT_EQ(commrt_reduce_scatter_start(
                0, started.pointers.data(), kCounts.data(), n,
                startedShard.data(), own.padded, COMMRT_F32, COMMRT_AVG,
                COMMRT_BF16, 1.0f, channels() - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(blockingShard, startedShard);

  // And back: the all-gather started on channel 0.
  ASSERT_EQ(commrt_all_gather_start(0, startedShard.data(), own.padded,
                                    started.pointers.data(), kCounts.data(), n,
                                    COMMRT_F32, COMMRT_WIRE_NONE, 1.0f,
                                    /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  ASSERT_EQ(commrt_all_gather(0, blockingShard.data(), own.padded,
                              blocking.pointers.data(), kCounts.data(), n,
                              COMMRT_F32, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t b = 0; b < kCounts.size(); ++b)
    EXPECT_EQ(std::memcmp(blocking.pointers[b], started.pointers[b],
                          kCounts[b] * sizeof(float)),
              0)
        << "buffer " << b;
}

TEST(Sharded, FewerElementsThanRanksLeaveTheLastShardsPadding) {
  // 2 elements: on 3 or 4 ranks the last shards are all padding.
  double values[2] = {1.0 + rank(), 10.0 * (rank() + 1)};
  void *buffers[] = {values};
  const int64_t counts[] = {2};
  const ShardRange own = shardRange(2, rank(), size());
  std::vector<double> shard(own.padded, 77.0);
  ASSERT_EQ(commrt_reduce_scatter(0, buffers, counts, 1, shard.data(),
                                  own.padded, COMMRT_F64, COMMRT_SUM,
                                  COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  const int p = size();
  const double sums[2] = {p + p * (p - 1) / 2.0, 10.0 * p * (p + 1) / 2.0};
  for (int64_t i = 0; i < own.padded; ++i)
    EXPECT_EQ(shard[i], i < own.length ? sums[own.begin + i] : 0.0)
        << "shard element " << i;
}

class ShardedMismatchTest : public CheckedTest {
protected:
  /// The shard of a flat tensor of `total` elements on this many ranks.
  static int64_t shardOf(int64_t total) {
    return (total + size() - 1) / size();
  }
};

TEST_F(ShardedMismatchTest, AShardSizedForOtherRanksFailsNamingBoth) {
  // Rank 0 sized its shard for one rank more than there are (13 elements:
  // a shard of another size on 2 to 5 ranks).
  std::vector<float> a(13, 1.0f), shard(13);
  void *buffers[] = {a.data()};
  const int64_t counts[] = {13};
  const int64_t planned =
      rank() == 0 ? (13 + size()) / (size() + 1) : shardOf(13);
  int32_t status =
      commrt_reduce_scatter(0, buffers, counts, 1, shard.data(), planned,
                            COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f);
  if (rank() == 0)
    EXPECT_TRUE(failedWith(
        status, COMMRT_ERROR_INVALID_ARGUMENT,
        "commrt_reduce_scatter: shard_count is " + std::to_string(planned) +
            ", but a flat tensor of 13 elements on " + std::to_string(size()) +
            " ranks has shards of " + std::to_string(shardOf(13))));
  else
    EXPECT_EQ(status, COMMRT_ERROR_INVALID_ARGUMENT) << commrt_last_error();
  expectRanksStillInStep();
}

TEST_F(ShardedMismatchTest, ANullShardFailsOnEveryRank) {
  float a[4] = {1, 2, 3, 4};
  void *buffers[] = {a};
  const int64_t counts[] = {4};
  std::vector<float> shard(4);
  void *mine = rank() == lastRank() ? nullptr : shard.data();
  int32_t status =
      commrt_reduce_scatter(0, buffers, counts, 1, mine, shardOf(4), COMMRT_F32,
                            COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f);
  if (rank() == lastRank())
    EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT,
                           "commrt_reduce_scatter: shard is null, and the "
                           "buffers hold 4 elements"));
  else
    EXPECT_EQ(status, COMMRT_ERROR_INVALID_ARGUMENT) << commrt_last_error();
  expectRanksStillInStep();
}

TEST_F(ShardedMismatchTest, RanksWithDifferentFlatTensorsFailTogether) {
  std::vector<float> a(8, 1.0f), shard(8);
  void *buffers[] = {a.data()};
  const int64_t counts[] = {rank() == lastRank() ? 8 : 6};
  EXPECT_TRUE(failedWith(commrt_all_gather(0, shard.data(), shardOf(counts[0]),
                                           buffers, counts, 1, COMMRT_F32,
                                           COMMRT_WIRE_NONE, 1.0f),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_all_gather: ranks disagree on total count "
                         "(min 6, max 8)"));
  expectRanksStillInStep();
}

TEST_F(ShardedMismatchTest, AReduceScatterMetByAnAllGatherFailsTogether) {
  std::vector<float> a(8, 1.0f), shard(8);
  void *buffers[] = {a.data()};
  const int64_t counts[] = {8};
  int32_t status =
      rank() == lastRank()
          ? commrt_all_gather(0, shard.data(), shardOf(8), buffers, counts, 1,
                              COMMRT_F32, COMMRT_WIRE_NONE, 1.0f)
          : commrt_reduce_scatter(0, buffers, counts, 1, shard.data(),
                                  shardOf(8), COMMRT_F32, COMMRT_SUM,
                                  COMMRT_WIRE_NONE, 1.0f);
  EXPECT_EQ(status, COMMRT_ERROR_MISMATCH) << commrt_last_error();
  expectRanksStillInStep();
}

} // namespace
