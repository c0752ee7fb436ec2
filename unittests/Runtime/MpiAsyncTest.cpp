//===- MpiAsyncTest.cpp - Async and fused collectives across MPI ranks ----===//
//
// Run under mpirun with any number of ranks (CTest uses 2 and 4). Results are
// compared bit for bit with the blocking collectives, exactly with the
// reference for values whose sums are exact, and within a stated bound for
// reduced-precision wire types.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using commrt::elementSize;
using namespace commrt::testing;

namespace {

double expected(commrt_reduce reduce, int64_t i) {
  return expectedReduction(reduce, i, size());
}

/// A value in +-[0.5, 1) that rank `r` contributes at index `i`, with all
/// mantissa bits in play, so that sums round.
double noisy(int r, int64_t i) {
  // SplitMix64 of (r, i).
  uint64_t x = (static_cast<uint64_t>(r) << 40) + static_cast<uint64_t>(i) +
               0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  double magnitude = 0.5 + static_cast<double>(x >> 11) * 0x1p-54;
  return x & 1 ? -magnitude : magnitude;
}

/// This rank's `count` contributions in f32, for the sums of `expected`.
std::vector<float> contributionsF32(int64_t count) {
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(contribution(rank(), i));
  return data;
}

/// How many of `data`'s elements differ from the expected sums, and the
/// index of the first (-1 for none) in `firstWrong`.
int64_t countWrongSums(const std::vector<float> &data, int64_t &firstWrong) {
  int64_t wrong = 0;
  firstWrong = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i) {
    if (data[i] == expected(COMMRT_SUM, i))
      continue;
    if (wrong++ == 0)
      firstWrong = i;
  }
  return wrong;
}

/// Fills `buffer`'s `count` elements with `value(rank, i)`.
template <typename Value>
void fill(TypedBuffer &buffer, int64_t count, Value value) {
  for (int64_t i = 0; i < count; ++i)
    buffer.set(i, value(rank(), i));
}

/// Whether the first `count` elements of `a` and `b`, of `dtype`, have the
/// same bits.
::testing::AssertionResult sameBits(TypedBuffer &a, TypedBuffer &b,
                                    commrt_dtype dtype, int64_t count) {
  const auto *x = static_cast<const unsigned char *>(a.data());
  const auto *y = static_cast<const unsigned char *>(b.data());
  size_t width = elementSize(dtype);
  for (int64_t i = 0; i < count; ++i)
    if (std::memcmp(x + i * width, y + i * width, width) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a.get(i) << " vs " << b.get(i);
  return ::testing::AssertionSuccess();
}

using DtypeAndReduce = std::tuple<commrt_dtype, commrt_reduce>;

std::string
dtypeAndReduceName(const ::testing::TestParamInfo<DtypeAndReduce> &info) {
  return std::string(dtypeName(std::get<0>(info.param))) + "_" +
         reduceName(std::get<1>(info.param));
}

const auto kAllDtypesAndReduces = ::testing::Combine(
    ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
    ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN));

class AsyncTest : public ::testing::TestWithParam<DtypeAndReduce> {};

TEST_P(AsyncTest, MatchesTheBlockingAllreduceBitForBit) {
  auto [dtype, reduce] = GetParam();
  const int64_t count = 4099;
  TypedBuffer blocking(dtype, count), async(dtype, count);
  fill(blocking, count, noisy);
  fill(async, count, noisy);
  ASSERT_EQ(commrt_allreduce(blocking.data(), count, dtype, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle;
  ASSERT_EQ(commrt_allreduce_start(async.data(), count, dtype, reduce,
                                   (dtype * 4 + reduce) % channels(), &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_TRUE(sameBits(blocking, async, dtype, count));
}

TEST_P(AsyncTest, FusedStartMatchesTheBlockingFusedAllreduceBitForBit) {
  auto [dtype, reduce] = GetParam();
  const int64_t counts[] = {1000, 0, 3, 2048};
  std::vector<TypedBuffer> blocking, async;
  std::vector<void *> blockingData, asyncData;
  for (int64_t count : counts) {
    blocking.emplace_back(dtype, count);
    async.emplace_back(dtype, count);
    fill(blocking.back(), count, noisy);
    fill(async.back(), count, noisy);
  }
  for (size_t i = 0; i < blocking.size(); ++i) {
    blockingData.push_back(blocking[i].data());
    asyncData.push_back(async[i].data());
  }
  // A wire type where the dtype allows one.
  int32_t wire = elementSize(dtype) > 2 ? COMMRT_BF16 : COMMRT_WIRE_NONE;
  ASSERT_EQ(commrt_fused_allreduce(blockingData.data(), counts, 4, dtype,
                                   reduce, wire, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle;
  ASSERT_EQ(commrt_fused_allreduce_start(
                asyncData.data(), counts, 4, dtype, reduce, wire, 0.5f,
                channels() - 1 - reduce % channels(), &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  for (size_t i = 0; i < blocking.size(); ++i)
    EXPECT_TRUE(sameBits(blocking[i], async[i], dtype, counts[i]))
        << "buffer " << i;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, AsyncTest, kAllDtypesAndReduces,
                         dtypeAndReduceName);

class FusedTest : public ::testing::TestWithParam<DtypeAndReduce> {};

TEST_P(FusedTest, ReducesMixedSizesWithEmptyBuffersExactly) {
  auto [dtype, reduce] = GetParam();
  const int64_t counts[] = {0, 1, 1000, 0, 37, 65536, 0};
  const int n = 7;
  for (bool async : {false, true}) {
    std::vector<TypedBuffer> buffers;
    std::vector<void *> data;
    for (int64_t count : counts) {
      buffers.emplace_back(dtype, count);
      fill(buffers.back(), count, contribution);
      // Zero-length buffers may be null.
      data.push_back(count ? buffers.back().data() : nullptr);
    }
    if (async) {
      int64_t handle;
      ASSERT_EQ(commrt_fused_allreduce_start(data.data(), counts, n, dtype,
                                             reduce, COMMRT_WIRE_NONE, 1.0f, 0,
                                             &handle),
                COMMRT_SUCCESS)
          << commrt_last_error();
      ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
    } else {
      ASSERT_EQ(commrt_fused_allreduce(data.data(), counts, n, dtype, reduce,
                                       COMMRT_WIRE_NONE, 1.0f),
                COMMRT_SUCCESS)
          << commrt_last_error();
    }
    for (int b = 0; b < n; ++b)
      for (int64_t i = 0; i < counts[b]; ++i)
        ASSERT_EQ(buffers[b].get(i), expected(reduce, i))
            << (async ? "async" : "blocking") << ", buffer " << b << ", index "
            << i;
  }
}

TEST_P(FusedTest, ScalesWithoutAWireType) {
  auto [dtype, reduce] = GetParam();
  // Halving and doubling is exact for these values: the results are the
  // unscaled ones.
  const int64_t counts[] = {100, 7};
  TypedBuffer first(dtype, counts[0]), second(dtype, counts[1]);
  fill(first, counts[0], contribution);
  fill(second, counts[1], contribution);
  void *data[] = {first.data(), second.data()};
  ASSERT_EQ(commrt_fused_allreduce(data, counts, 2, dtype, reduce,
                                   COMMRT_WIRE_NONE, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < counts[0]; ++i)
    ASSERT_EQ(first.get(i), expected(reduce, i)) << "index " << i;
  for (int64_t i = 0; i < counts[1]; ++i)
    ASSERT_EQ(second.get(i), expected(reduce, i)) << "index " << i;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, FusedTest, kAllDtypesAndReduces,
                         dtypeAndReduceName);

using DtypeWireAndReduce =
    std::tuple<commrt_dtype, commrt_dtype, commrt_reduce>;

class WireTest : public ::testing::TestWithParam<DtypeWireAndReduce> {
protected:
  /// Runs a fused allreduce of two buffers of `count` and 3 elements of
  /// `value(rank, i)` with prescale 0.5, and returns both. Their equal
  /// inputs need not give equal results: the ring sums each segment in its
  /// own order, rounding to the wire type at every step.
  template <typename Value>
  std::pair<TypedBuffer, TypedBuffer>
  reduceTwoBuffers(int64_t count, Value value, bool async) {
    auto [dtype, wire, reduce] = GetParam();
    TypedBuffer first(dtype, count), second(dtype, 3);
    fill(first, count, value);
    fill(second, 3, value);
    void *data[] = {first.data(), second.data()};
    const int64_t counts[] = {count, 3};
    if (async) {
      int64_t handle;
      EXPECT_EQ(commrt_fused_allreduce_start(data, counts, 2, dtype, reduce,
                                             wire, 0.5f, 1 % channels(),
                                             &handle),
                COMMRT_SUCCESS)
          << commrt_last_error();
      EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
    } else {
      EXPECT_EQ(
          commrt_fused_allreduce(data, counts, 2, dtype, reduce, wire, 0.5f),
          COMMRT_SUCCESS)
          << commrt_last_error();
    }
    return {std::move(first), std::move(second)};
  }
};

// The error bound. Let u be the unit roundoff of the wire type (2^-11 for
// f16, 2^-8 for bf16) and x_r the value of rank r (as stored in the dtype).
// Scaling by the power of two 0.5 and back is exact. Each x_r is rounded
// once when packed and then by at most P - 1 additions of the reduction,
// whatever its order, so (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., section 4.2), with g = P u / (1 - P u):
//   SUM:      |result - sum_r x_r| <= g sum_r |x_r| + e,
//   AVG:      |result - sum_r x_r / P| <= g sum_r |x_r| / P + e,
//   MAX, MIN: |result - exact| <= u |exact|, since rounding is monotonic,
// where e = 2^-23 |exact| covers rounding the unpacked result to f32 and
// dividing by a P that is not a power of two. No value here is subnormal or
// overflows.
TEST_P(WireTest, StaysWithinTheErrorBound) {
  auto [dtypeParam, wire, reduceKind] = GetParam();
  const commrt_dtype dtype = dtypeParam;
  const int64_t count = 5000;
  const double u = wire == COMMRT_F16 ? 0x1p-11 : 0x1p-8;
  const int p = size();
  const double g = p * u / (1 - p * u);
  auto stored = [&](int r, int64_t i) {
    return dtype == COMMRT_F32 ? static_cast<float>(noisy(r, i)) : noisy(r, i);
  };
  for (bool async : {false, true}) {
    std::pair<TypedBuffer, TypedBuffer> buffers =
        reduceTwoBuffers(count, noisy, async);
    const TypedBuffer &first = buffers.first, &second = buffers.second;
    auto result = [&](int64_t i) {
      return i < count ? first.get(i) : second.get(i - count);
    };
    // The first buffer, then the second (3 elements of the same values).
    for (int64_t j = 0; j < count + 3; ++j) {
      const int64_t i = j < count ? j : j - count;
      double sum = 0, absSum = 0, max = stored(0, i), min = max;
      for (int r = 0; r < p; ++r) {
        // In double: exact for f32 values, far below the bound for f64.
        sum += stored(r, i);
        absSum += std::fabs(stored(r, i));
        max = std::max(max, stored(r, i));
        min = std::min(min, stored(r, i));
      }
      double exact = 0, bound = 0;
      switch (reduceKind) {
      case COMMRT_SUM:
        exact = sum;
        bound = g * absSum;
        break;
      case COMMRT_AVG:
        exact = sum / p;
        bound = g * absSum / p;
        break;
      case COMMRT_MAX:
        exact = max;
        bound = u * std::fabs(max);
        break;
      case COMMRT_MIN:
        exact = min;
        bound = u * std::fabs(min);
        break;
      }
      bound += 0x1p-23 * std::fabs(exact);
      ASSERT_LE(std::fabs(result(j) - exact), bound)
          << (async ? "async" : "blocking") << ", "
          << (j < count ? "first" : "second") << " buffer, index " << i;
    }
  }
}

TEST_P(WireTest, IsExactForRepresentableValues) {
  auto reduceKind = std::get<2>(GetParam());
  if (reduceKind == COMMRT_AVG && (size() & (size() - 1)) != 0)
    GTEST_SKIP() << "dividing by " << size() << " rounds";
  // The contributions, their halves and all partial sums are exact in f16
  // and bf16.
  for (bool async : {false, true}) {
    auto [first, second] = reduceTwoBuffers(1000, contribution, async);
    for (int64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(first.get(i), expected(reduceKind, i))
          << (async ? "async" : "blocking") << ", index " << i;
    for (int64_t i = 0; i < 3; ++i)
      ASSERT_EQ(second.get(i), expected(reduceKind, i))
          << (async ? "async" : "blocking") << ", second buffer, index " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    WideTypes, WireTest,
    ::testing::Combine(::testing::Values(COMMRT_F32, COMMRT_F64),
                       ::testing::Values(COMMRT_F16, COMMRT_BF16),
                       ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX,
                                         COMMRT_MIN)),
    [](const ::testing::TestParamInfo<DtypeWireAndReduce> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_via_" +
             dtypeName(std::get<1>(info.param)) + "_" +
             reduceName(std::get<2>(info.param));
    });

/// One collective of the in-flight test: a plain or a fused allreduce.
struct InFlight {
  commrt_dtype dtype;
  int64_t count;
  int32_t channel;
  bool fused;
  TypedBuffer buffer;
  int64_t handle = 0;
};

TEST(Async, SeveralHandlesOnSeveralChannelsWaitedOutOfOrder) {
  const int used = std::min(channels(), 4);
  const commrt_dtype dtypes[] = {COMMRT_F32, COMMRT_F64, COMMRT_F16,
                                 COMMRT_BF16};
  std::vector<InFlight> collectives;
  for (int k = 0; k < 12; ++k) {
    commrt_dtype dtype = dtypes[k % 4];
    int64_t count = 1000 * (k + 1) + k;
    collectives.push_back(
        {dtype, count, k % used, k % 3 == 0, TypedBuffer(dtype, count)});
  }
  // Start them all, three on each channel in use.
  for (InFlight &c : collectives) {
    fill(c.buffer, c.count, contribution);
    if (c.fused) {
      void *data[] = {c.buffer.data()};
      ASSERT_EQ(commrt_fused_allreduce_start(data, &c.count, 1, c.dtype,
                                             COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                             c.channel, &c.handle),
                COMMRT_SUCCESS)
          << commrt_last_error();
    } else {
      ASSERT_EQ(commrt_allreduce_start(c.buffer.data(), c.count, c.dtype,
                                       COMMRT_SUM, c.channel, &c.handle),
                COMMRT_SUCCESS)
          << commrt_last_error();
    }
  }
  // A blocking collective does not wait for them.
  double value = 1.0;
  ASSERT_EQ(commrt_allreduce(&value, 1, COMMRT_F64, COMMRT_SUM), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, size());
  // Wait in another order: the last started first, across channels.
  for (int k : {11, 4, 7, 0, 9, 2, 5, 10, 1, 8, 3, 6}) {
    InFlight &c = collectives[k];
    ASSERT_EQ(commrt_wait(c.handle), COMMRT_SUCCESS)
        << "collective " << k << ": " << commrt_last_error();
    for (int64_t i = 0; i < c.count; ++i)
      ASSERT_EQ(c.buffer.get(i), expected(COMMRT_SUM, i))
          << "collective " << k << ", index " << i;
  }
}

TEST(Async, ProgressesWithoutTheCallerWaiting) {
  // 64 MiB of f32. The caller only polls commrt_test, which never enters
  // MPI: the collective completes through the runtime's own progress.
  const int64_t count = int64_t(16) << 20;
  std::vector<float> data = contributionsF32(count);
  int64_t handle;
  ASSERT_EQ(commrt_allreduce_start(data.data(), count, COMMRT_F32, COMMRT_SUM,
                                   0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int32_t done = 0;
  while (!done) {
    ASSERT_EQ(commrt_test(handle, &done), COMMRT_SUCCESS)
        << commrt_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The results are in place before the wait.
  int64_t firstWrong;
  EXPECT_EQ(countWrongSums(data, firstWrong), 0)
      << "the first at index " << firstWrong;
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
}

TEST(Async, WaitForSleepsUntilDoneOrTimesOut) {
  // Every rank but 0 starts late, so rank 0's collective cannot finish
  // within a wait of no time; a long wait then returns as soon as it does.
  const int64_t count = int64_t(1) << 16;
  std::vector<float> data = contributionsF32(count);
  // Consistency checks would agree on the arguments in the start, which
  // then waits for every rank; a blocking allreduce lines the ranks up.
  ASSERT_EQ(commrt_set_consistency_checks(COMMRT_CHECKS_OFF), COMMRT_SUCCESS);
  float barrier = 1.0f;
  ASSERT_EQ(commrt_allreduce(&barrier, 1, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  if (rank() != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int64_t handle;
  ASSERT_EQ(commrt_allreduce_start(data.data(), count, COMMRT_F32, COMMRT_SUM,
                                   0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int32_t done = 7;
  if (rank() == 0 && size() > 1) {
    ASSERT_EQ(commrt_wait_for(handle, 0.0, &done), COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_EQ(done, 0) << "finished before the other ranks started";
  }
  ASSERT_EQ(commrt_wait_for(handle, 600.0, &done), COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(done, 1);
  // The results are in place before the handle is consumed.
  int64_t firstWrong;
  EXPECT_EQ(countWrongSums(data, firstWrong), 0)
      << "the first at index " << firstWrong;
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
}

/// Tests that run with consistency checks on and need two or more ranks.
class CheckedAsyncTest : public CheckedTest {
protected:
  /// Runs a valid blocking and a valid asynchronous allreduce on every
  /// channel, showing that an error left no rank behind.
  void expectRanksStillInStep() override {
    ASSERT_NO_FATAL_FAILURE(CheckedTest::expectRanksStillInStep());
    for (int channel = 0; channel < channels(); ++channel) {
      float one = 1.0f;
      int64_t handle;
      ASSERT_EQ(commrt_allreduce_start(&one, 1, COMMRT_F32, COMMRT_SUM, channel,
                                       &handle),
                COMMRT_SUCCESS)
          << commrt_last_error();
      ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
      EXPECT_EQ(one, size()) << "channel " << channel;
    }
  }

  /// A fused allreduce of f32 buffers of `counts` on this rank.
  int32_t fused(std::vector<int64_t> counts, int32_t dtype = COMMRT_F32,
                int32_t reduce = COMMRT_SUM, int32_t wire = COMMRT_WIRE_NONE,
                float prescale = 1.0f) {
    std::vector<std::vector<double>> storage;
    std::vector<void *> data;
    for (int64_t count : counts) {
      storage.emplace_back(count);
      data.push_back(storage.back().data());
    }
    return commrt_fused_allreduce(data.data(), counts.data(),
                                  static_cast<int32_t>(counts.size()), dtype,
                                  reduce, wire, prescale);
  }
};

TEST_F(CheckedAsyncTest, FusedTotalCountMismatchFailsOnEveryRank) {
  EXPECT_TRUE(failedWith(
      fused({3, rank() == 0 ? 4 : 5}), COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on total count (min 7, max 8)"));
  expectRanksStillInStep();
}

TEST_F(CheckedAsyncTest, FusedBufferCountMismatchFailsOnEveryRank) {
  EXPECT_TRUE(failedWith(
      fused(rank() == lastRank() ? std::vector<int64_t>{6}
                                 : std::vector<int64_t>{3, 3}),
      COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on nbuffers (min 1, max 2)"));
  expectRanksStillInStep();
}

TEST_F(CheckedAsyncTest, FusedSplitMismatchFailsOnEveryRank) {
  EXPECT_TRUE(failedWith(fused(rank() == 0 ? std::vector<int64_t>{2, 4}
                                           : std::vector<int64_t>{4, 2}),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_fused_allreduce: ranks disagree on counts"));
  expectRanksStillInStep();
}

TEST_F(CheckedAsyncTest, FusedDtypeWireReduceAndPrescaleMismatchesFail) {
  bool odd = rank() == lastRank();
  EXPECT_TRUE(failedWith(
      fused({4, 1}, odd ? COMMRT_F64 : COMMRT_F32), COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on dtype (min 0, max 1)"));
  EXPECT_TRUE(failedWith(
      fused({4, 1}, COMMRT_F32, COMMRT_SUM,
            odd ? COMMRT_F16 : COMMRT_WIRE_NONE),
      COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on wire (min -1, max 2)"));
  EXPECT_TRUE(failedWith(
      fused({4, 1}, COMMRT_F32, odd ? COMMRT_MAX : COMMRT_SUM),
      COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on reduce (min 0, max 2)"));
  EXPECT_TRUE(failedWith(
      fused({4, 1}, COMMRT_F32, COMMRT_SUM, COMMRT_BF16, odd ? 0.5f : 1.0f),
      COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce: ranks disagree on prescale (0.5 and 1)"));
  expectRanksStillInStep();
}

TEST_F(CheckedAsyncTest, StartCountAndChannelMismatchesFailOnEveryRank) {
  if (channels() < 2)
    GTEST_SKIP() << "needs two channels";
  float data[4] = {};
  int64_t handle = 42;
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(data, rank() == 0 ? 3 : 4, COMMRT_F32, COMMRT_SUM,
                             0, &handle),
      COMMRT_ERROR_MISMATCH,
      "commrt_allreduce_start: ranks disagree on count (min 3, max 4)"));
  EXPECT_EQ(handle, 0);
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(data, 4, COMMRT_F32, COMMRT_SUM,
                             rank() == 0 ? 0 : 1, &handle),
      COMMRT_ERROR_MISMATCH,
      "commrt_allreduce_start: ranks disagree on channel (min 0, max 1)"));
  void *buffers[] = {data};
  const int64_t counts[] = {4};
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_BF16, 1.0f,
                                   rank() == lastRank() ? 1 : 0, &handle),
      COMMRT_ERROR_MISMATCH,
      "commrt_fused_allreduce_start: ranks disagree on channel (min 0, max "
      "1)"));
  EXPECT_EQ(handle, 0);
  expectRanksStillInStep();
}

TEST_F(CheckedAsyncTest, InvalidArgumentOnOneRankFailsOnEveryRank) {
  float data[4] = {};
  bool bad = rank() == lastRank();
  int64_t handle;
  int32_t status = commrt_allreduce_start(data, 4, COMMRT_F32, COMMRT_SUM,
                                          bad ? channels() : 0, &handle);
  std::string message =
      bad ? "commrt_allreduce_start: channel " + std::to_string(channels()) +
                " is out of range (expected 0.." +
                std::to_string(channels() - 1) +
                "; COMMRT_CHANNELS sets the number of channels)"
          : "commrt_allreduce_start: rank " + std::to_string(lastRank()) +
                " passed an invalid argument";
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, message));

  void *buffers[] = {data, nullptr};
  const int64_t counts[] = {4, rank() == 0 ? 1 : 0};
  status = commrt_fused_allreduce(buffers, counts, 2, COMMRT_F32, COMMRT_SUM,
                                  COMMRT_WIRE_NONE, 1.0f);
  message = rank() == 0 ? "commrt_fused_allreduce: buffers[1] is null but "
                          "counts[1] is 1"
                        : "commrt_fused_allreduce: rank 0 passed an invalid "
                          "argument";
  EXPECT_TRUE(failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, message));
  expectRanksStillInStep();
}

} // namespace

namespace {

/// One collective of the stress test: its buffers (one, or several fused),
/// how it travels, and its handle.
struct StressCollective {
  commrt_dtype dtype;
  int32_t wire;
  int32_t channel;
  bool fused;
  std::vector<int64_t> counts;
  std::vector<TypedBuffer> buffers;
  int64_t handle = 0;
  bool waited = false;
};

} // namespace

/// Many collectives of random sizes, dtypes and wire types in flight on
/// every channel at once, polled with commrt_test at random and waited in
/// an order of each rank's own, checked exactly. Every rank draws the same
/// collectives (one seed), so they match across ranks; only the polling and
/// the waiting differ. Built for ThreadSanitizer (scripts/sanitize.sh
/// thread) as much as for the results.
TEST(Async, StressManyInFlightOnEveryChannelWaitedInRandomOrder) {
  std::mt19937_64 shared(20261124);
  std::mt19937_64 local(1000 + rank());
  auto pick = [](std::mt19937_64 &engine, int64_t n) {
    return static_cast<int64_t>(engine() % static_cast<uint64_t>(n));
  };
  const commrt_dtype dtypes[] = {COMMRT_F32, COMMRT_F64, COMMRT_F16,
                                 COMMRT_BF16};
  // The contributions' sums are small integers, exact in every wire type.
  const int32_t wires[] = {COMMRT_WIRE_NONE, COMMRT_F16, COMMRT_BF16};
  for (int round = 0; round < 6; ++round) {
    std::vector<StressCollective> collectives(16 + pick(shared, 17));
    for (StressCollective &c : collectives) {
      c.dtype = dtypes[pick(shared, 4)];
      c.fused = pick(shared, 2) == 0;
      c.wire = c.fused && c.dtype == COMMRT_F32 ? wires[pick(shared, 3)]
                                                : COMMRT_WIRE_NONE;
      if (c.fused && c.dtype == COMMRT_F64)
        c.wire = pick(shared, 2) ? COMMRT_F16 : COMMRT_WIRE_NONE;
      c.channel = static_cast<int32_t>(pick(shared, channels()));
      int64_t pieces = c.fused ? 1 + pick(shared, 4) : 1;
      for (int64_t p = 0; p < pieces; ++p) {
        // Sizes from empty to past the ring's 1 MiB threshold.
        int64_t count =
            pick(shared, 4) == 0 ? pick(shared, 4) : pick(shared, 300000);
        c.counts.push_back(count);
        c.buffers.emplace_back(c.dtype, count);
        fill(c.buffers.back(), count, contribution);
      }
    }
    for (StressCollective &c : collectives) {
      if (c.fused) {
        std::vector<void *> data;
        for (TypedBuffer &buffer : c.buffers)
          data.push_back(buffer.data());
        ASSERT_EQ(commrt_fused_allreduce_start(
                      data.data(), c.counts.data(),
                      static_cast<int32_t>(c.counts.size()), c.dtype,
                      COMMRT_SUM, c.wire, 1.0f, c.channel, &c.handle),
                  COMMRT_SUCCESS)
            << commrt_last_error();
      } else {
        ASSERT_EQ(commrt_allreduce_start(c.buffers[0].data(), c.counts[0],
                                         c.dtype, COMMRT_SUM, c.channel,
                                         &c.handle),
                  COMMRT_SUCCESS)
            << commrt_last_error();
      }
    }
    // Poll at random, waiting now and then, until every handle is waited.
    size_t remaining = collectives.size();
    while (remaining > 0) {
      StressCollective &c =
          collectives[pick(local, static_cast<int64_t>(collectives.size()))];
      if (c.waited)
        continue;
      int32_t done = 0;
      ASSERT_EQ(commrt_test(c.handle, &done), COMMRT_SUCCESS)
          << commrt_last_error();
      if (!done && pick(local, 4) != 0) {
        std::this_thread::yield();
        continue;
      }
      ASSERT_EQ(commrt_wait(c.handle), COMMRT_SUCCESS) << commrt_last_error();
      c.waited = true;
      --remaining;
      for (size_t b = 0; b < c.buffers.size(); ++b)
        for (int64_t i = 0; i < c.counts[b]; ++i)
          ASSERT_EQ(c.buffers[b].get(i), expected(COMMRT_SUM, i))
              << "round " << round << ", " << dtypeName(c.dtype)
              << (c.fused ? " fused" : "") << " on channel " << c.channel
              << ", buffer " << b << ", index " << i;
    }
  }
}
