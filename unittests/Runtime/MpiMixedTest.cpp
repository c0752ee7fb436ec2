//===- MpiMixedTest.cpp - Mixed-wire buckets on several ranks -------------===//
//
// commrt_mixed_allreduce reduces f16/bf16 and f32/f64 buffers in one ring
// allreduce. Every buffer must get what a bucket of its own kind would give
// it: exact results where its type's reduction is exact (small integers),
// within its own type's rounding otherwise (so f32 buffers are not
// narrowed), identical on all ranks; also where segments and 1 MiB pieces
// cross from the 16-bit part to the full-precision one.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// One bucket of f32 buffers with their contributions and flags.
struct MixedBucket {
  std::vector<std::vector<float>> buffers;
  std::vector<int64_t> counts;
  std::vector<int32_t> narrowed;
  std::vector<void *> pointers;

  /// Buffers of `counts`, buffer i narrowed where `narrowed[i]` is 1, each
  /// between two guard elements, filled by `value(i, element)`.
  template <typename Value>
  MixedBucket(std::vector<int64_t> counts, std::vector<int32_t> narrowed,
              Value &&value)
      : counts(std::move(counts)), narrowed(std::move(narrowed)) {
    for (size_t b = 0; b < this->counts.size(); ++b) {
      std::vector<float> &buffer = buffers.emplace_back(this->counts[b] + 2);
      buffer.front() = 42.0f;
      buffer.back() = 43.0f;
      for (int64_t i = 0; i < this->counts[b]; ++i)
        buffer[i + 1] = value(b, i);
    }
    for (std::vector<float> &buffer : buffers)
      pointers.push_back(buffer.data() + 1);
  }

  float at(size_t b, int64_t i) const { return buffers[b][i + 1]; }

  int32_t run(commrt_reduce reduce, int32_t wire, float prescale) {
    return commrt_mixed_allreduce(
        /*group=*/0, pointers.data(), counts.data(), narrowed.data(),
        static_cast<int32_t>(counts.size()), COMMRT_F32, reduce, wire,
        prescale);
  }

  void expectGuardsIntactAndSameOnAllRanks() const {
    for (size_t b = 0; b < buffers.size(); ++b) {
      EXPECT_EQ(buffers[b].front(), 42.0f) << "buffer " << b;
      EXPECT_EQ(buffers[b].back(), 43.0f) << "buffer " << b;
      EXPECT_TRUE(
          sameOnAllRanks(buffers[b].data(), buffers[b].size() * sizeof(float)))
          << "buffer " << b;
    }
  }
};

/// Sizes where the 16-bit part is odd (padded), buffers span the ring's
/// segments, and the 1 MiB pieces cross from one part to the other.
const std::vector<int64_t> kCounts = {3, 300001, 1, 262144, 7, 700001, 2};
const std::vector<int32_t> kNarrowed = {1, 0, 1, 1, 0, 1, 0};

using MixedCase = std::tuple<int32_t, commrt_reduce>;

class MixedTest : public ::testing::TestWithParam<MixedCase> {};

TEST_P(MixedTest, EachBufferGetsItsOwnKindsReductionExactly) {
  auto [wire, reduce] = GetParam();
  // Small integers: exact in f32, f16 and bf16, and so are their sums over
  // up to 8 ranks. The prescale is a power of two, exact too.
  MixedBucket bucket(kCounts, kNarrowed, [](size_t, int64_t i) {
    return static_cast<float>(contribution(rank(), i));
  });
  const float prescale =
      reduce == COMMRT_SUM || reduce == COMMRT_AVG ? 0.5f : 1.0f;
  ASSERT_EQ(bucket.run(reduce, wire, prescale), COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t b = 0; b < kCounts.size(); ++b) {
    int64_t mismatches = 0, first = -1;
    for (int64_t i = 0; i < kCounts[b]; ++i)
      if (bucket.at(b, i) !=
              static_cast<float>(expectedReduction(reduce, i, size())) &&
          mismatches++ == 0)
        first = i;
    EXPECT_EQ(mismatches, 0)
        << "buffer " << b << (kNarrowed[b] ? " (narrowed)" : " (f32)")
        << ", first at index " << first << ": " << bucket.at(b, first);
  }
  bucket.expectGuardsIntactAndSameOnAllRanks();
}

INSTANTIATE_TEST_SUITE_P(
    WiresAndReductions, MixedTest,
    ::testing::Combine(::testing::Values(COMMRT_F16, COMMRT_BF16),
                       ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX,
                                         COMMRT_MIN)),
    [](const ::testing::TestParamInfo<MixedCase> &info) {
      return std::string(dtypeName(
                 static_cast<commrt_dtype>(std::get<0>(info.param)))) +
             "_" + reduceName(std::get<1>(info.param));
    });

TEST(Mixed, ArbitraryValuesEachWithinItsOwnTypesRounding) {
  // Values that f16 cannot hold. Where an element is summed depends on its
  // ring segment, so the bound is the rounding, not a bit pattern: each
  // rank's value / size rounded to the wire type (relative 2^-11 for f16,
  // none for f32) and each of the size - 1 partial sums, of magnitude at
  // most 1, rounded (absolute 2^-11 in f16, 2^-24 in f32).
  auto value = [](int r, size_t b, int64_t i) {
    std::mt19937 generator(static_cast<uint32_t>(r * 7919 + b * 104729 + i));
    return std::uniform_real_distribution<float>(-1.0f, 1.0f)(generator);
  };
  const std::vector<int64_t> counts = {1001, 5000, 17, 70001};
  const std::vector<int32_t> narrowed = {0, 1, 0, 1};
  MixedBucket bucket(counts, narrowed,
                     [&](size_t b, int64_t i) { return value(rank(), b, i); });
  const float prescale = 1.0f / static_cast<float>(size());
  ASSERT_EQ(bucket.run(COMMRT_AVG, COMMRT_F16, prescale), COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t b = 0; b < counts.size(); ++b) {
    double worst = 0.0;
    for (int64_t i = 0; i < counts[b]; ++i) {
      double mean = 0.0;
      for (int r = 0; r < size(); ++r)
        mean += value(r, b, i);
      mean /= size();
      worst = std::max(worst, std::fabs(bucket.at(b, i) - mean));
    }
    EXPECT_LE(worst, size() * std::ldexp(1.0, narrowed[b] ? -11 : -24))
        << "buffer " << b << (narrowed[b] ? " (f16)" : " (f32)");
  }
  bucket.expectGuardsIntactAndSameOnAllRanks();
}

TEST(Mixed, StartAndWaitGiveTheBlockingResults) {
  auto value = [](size_t b, int64_t i) {
    return static_cast<float>(
        contribution(rank(), i + static_cast<int64_t>(b)));
  };
  MixedBucket blocking(kCounts, kNarrowed, value);
  MixedBucket started(kCounts, kNarrowed, value);
  ASSERT_EQ(blocking.run(COMMRT_SUM, COMMRT_F16, 1.0f), COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle = 0;
  ASSERT_EQ(commrt_mixed_allreduce_start(
                /*group=*/0, started.pointers.data(), started.counts.data(),
                started.narrowed.data(),
                static_cast<int32_t>(started.counts.size()), COMMRT_F32,
                COMMRT_SUM, COMMRT_F16, 1.0f, channels() - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  for (size_t b = 0; b < kCounts.size(); ++b)
    EXPECT_EQ(std::memcmp(blocking.buffers[b].data(), started.buffers[b].data(),
                          blocking.buffers[b].size() * sizeof(float)),
              0)
        << "buffer " << b;
}

class MixedMismatchTest : public CheckedTest {};

TEST_F(MixedMismatchTest, RanksThatNarrowDifferentBuffersFailTogether) {
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
  void *buffers[] = {a, b};
  const int64_t counts[] = {4, 4};
  // The last rank narrows the other buffer.
  const int32_t narrowed[] = {rank() == lastRank() ? 0 : 1,
                              rank() == lastRank() ? 1 : 0};
  EXPECT_TRUE(failedWith(commrt_mixed_allreduce(0, buffers, counts, narrowed, 2,
                                                COMMRT_F32, COMMRT_SUM,
                                                COMMRT_F16, 1.0f),
                         COMMRT_ERROR_MISMATCH,
                         "commrt_mixed_allreduce: ranks disagree on narrowed"));
  expectRanksStillInStep();
}

} // namespace
