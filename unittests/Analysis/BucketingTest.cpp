//===- BucketingTest.cpp - Tests of the optimal bucketing -----------------===//

#include "CommOpt/Analysis/Bucketing.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

using namespace mlir::comm;

namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

/// The same optimum by the plain quadratic dynamic program.
double bruteForceEndUs(const std::vector<BucketItem> &items, AffineCost cost) {
  size_t n = items.size();
  std::vector<double> f(n + 1, std::numeric_limits<double>::infinity());
  f[0] = 0.0;
  for (size_t j = 1; j <= n; ++j) {
    double bytes = 0.0;
    for (size_t i = j; i >= 1; --i) {
      bytes += items[i - 1].bytes;
      // Members i..j-1 must not be needed before j's position.
      if (i < j && items[i - 1].deadline <= items[j - 1].position)
        break;
      f[j] = std::min(f[j],
                      std::max(f[i - 1], items[j - 1].readyUs) + cost(bytes));
    }
  }
  return f[n];
}

/// Checks that `buckets` cover the items in order and respect deadlines.
void expectValid(const std::vector<BucketItem> &items,
                 llvm::ArrayRef<BucketRange> buckets) {
  size_t next = 0;
  for (const BucketRange &bucket : buckets) {
    ASSERT_EQ(bucket.first, next);
    ASSERT_LT(bucket.first, bucket.last);
    for (size_t k = bucket.first; k + 1 < bucket.last; ++k)
      EXPECT_GT(items[k].deadline, items[bucket.last - 1].position);
    next = bucket.last;
  }
  EXPECT_EQ(next, items.size());
}

TEST(Bucketing, HandExample) {
  // Three gradients ready at 0, 10 and 20 us; a collective costs
  // 5 us + 1 us per byte.
  AffineCost cost{5.0, 1.0};
  std::vector<BucketItem> items = {
      {4, 0, 0, kNone}, {4, 10, 1, kNone}, {4, 20, 2, kNone}};
  // Separately: [0, 9], [10, 19], [20, 29]: ends at 29. One bucket at 20:
  // 20 + 5 + 12 = 37. Separate is best.
  llvm::SmallVector<BucketRange> buckets = planOptimalBuckets(items, cost);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(bucketsEndUs(items, buckets, cost), 29.0);

  // With a 50 us latency, one bucket (20 + 50 + 12 = 82) beats three
  // (0+54, 10->54+54=108, 162): fuse everything.
  AffineCost slow{50.0, 1.0};
  buckets = planOptimalBuckets(items, slow);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_DOUBLE_EQ(bucketsEndUs(items, buckets, slow), 82.0);
}

TEST(Bucketing, DeadlineSplitsABucket) {
  // Item 0 is used at position 1 (before item 1 at position 2): it cannot
  // wait for item 1, even though one bucket would be cheaper.
  AffineCost slow{50.0, 1.0};
  std::vector<BucketItem> items = {{4, 0, 0, 1}, {4, 10, 2, kNone}};
  llvm::SmallVector<BucketRange> buckets = planOptimalBuckets(items, slow);
  ASSERT_EQ(buckets.size(), 2u);
  expectValid(items, buckets);
  EXPECT_DOUBLE_EQ(bucketsEndUs(items, buckets, slow), 54.0 + 54.0);
}

TEST(Bucketing, MergedWFBPMergesWhileTheChannelIsBusy) {
  // Cost 50 us + 1 us/byte. g0 (100 B) ready at 0 is sent at once: [0, 150].
  // g1 ready at 10 and g2 at 20 arrive while the channel is busy: they wait
  // together and go as one bucket at 150 (ends 150 + 50 + 8 = 208). g3 ready
  // at 300 finds the channel free: the waiting bucket was issued, g3 goes
  // alone.
  AffineCost cost{50.0, 1.0};
  std::vector<BucketItem> items = {{100, 0, 0, kNone},
                                   {4, 10, 1, kNone},
                                   {4, 20, 2, kNone},
                                   {4, 300, 3, kNone}};
  llvm::SmallVector<BucketRange> buckets = planMergedWFBP(items, cost);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first, 0u);
  EXPECT_EQ(buckets[0].last, 1u);
  EXPECT_EQ(buckets[1].first, 1u);
  EXPECT_EQ(buckets[1].last, 3u);
  EXPECT_EQ(buckets[2].first, 3u);
  EXPECT_DOUBLE_EQ(bucketsEndUs(items, buckets, cost), 300.0 + 54.0);
}

TEST(Bucketing, MergedWFBPRespectsDeadlinesAndIsNeverBetterThanOptimal) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    size_t n = 1 + rng() % 30;
    AffineCost cost{std::uniform_real_distribution<double>(0.0, 300.0)(rng),
                    1e-4};
    std::vector<BucketItem> items(n);
    double ready = 0.0;
    for (size_t k = 0; k < n; ++k) {
      ready += std::uniform_real_distribution<double>(0.0, 500.0)(rng);
      items[k] = {std::uniform_real_distribution<double>(1.0, 1e6)(rng), ready,
                  2 * k, rng() % 4 == 0 ? 2 * k + 1 : kNone};
    }
    llvm::SmallVector<BucketRange> merged = planMergedWFBP(items, cost);
    expectValid(items, merged);
    EXPECT_GE(bucketsEndUs(items, merged, cost) + 1e-9,
              bruteForceEndUs(items, cost));
  }
}

TEST(Bucketing, EmptyInput) {
  EXPECT_TRUE(planOptimalBuckets({}, AffineCost{1.0, 1.0}).empty());
  EXPECT_TRUE(planMergedWFBP({}, AffineCost{1.0, 1.0}).empty());
}

TEST(Bucketing, MatchesTheQuadraticOptimumOnRandomSteps) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    size_t n = 1 + rng() % 40;
    std::uniform_real_distribution<double> bytes(1.0, 1e6);
    std::uniform_real_distribution<double> gap(0.0, 500.0);
    AffineCost cost{std::uniform_real_distribution<double>(0.0, 300.0)(rng),
                    std::uniform_real_distribution<double>(1e-5, 1e-3)(rng)};
    std::vector<BucketItem> items(n);
    double ready = 0.0;
    for (size_t k = 0; k < n; ++k) {
      ready += gap(rng);
      items[k] = {bytes(rng), ready, 2 * k, kNone};
      // Some gradients are used before later ones are ready.
      if (rng() % 5 == 0)
        items[k].deadline = 2 * k + 1 + 2 * (rng() % 3);
    }
    llvm::SmallVector<BucketRange> buckets = planOptimalBuckets(items, cost);
    expectValid(items, buckets);
    double expected = bruteForceEndUs(items, cost);
    EXPECT_NEAR(bucketsEndUs(items, buckets, cost), expected,
                1e-9 * std::max(1.0, expected))
        << "trial " << trial;
  }
}

} // namespace
