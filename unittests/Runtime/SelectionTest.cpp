//===- SelectionTest.cpp - The radix search of threshold selection --------===//
//
// findThreshold against a brute-force count of what reaches its threshold:
// the guarantee commrt.h states, on data shaped to exercise each way the
// search ends (early stop after one pass, refinement to the last digit,
// ties, fewer nonzeros than k). findTopkCut (TopkSearch and TieSearch, the
// bookkeeping of the device's top-k) and the host's selectTopk, which
// collects what that cut takes, against a brute-force top-k.
//
//===----------------------------------------------------------------------===//

#include "Selection.h"
#include "Sparse.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using commrt::Cut;
using commrt::findThreshold;
using commrt::findTopkCut;
using commrt::magnitudeBits;
using commrt::RadixSearch;
using commrt::selectTopk;
using commrt::TieSearch;

namespace {

/// `count` Gaussian values (standard deviation 1e-3), drawn with `seed`.
std::vector<float> gaussian(size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> values(count);
  for (float &x : values)
    x = normal(random);
  return values;
}

/// 65536 magnitudes spread over 40 binades, as real gradients are, a third
/// of them negative, drawn with `seed`.
std::vector<float> wideDynamicRange(unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> exponent(-30.0f, 10.0f);
  std::vector<float> values(65536);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (i % 3 ? 1.0f : -1.0f) * std::exp2(exponent(random));
  return values;
}

int64_t countReaching(const std::vector<float> &values, uint32_t threshold) {
  return std::count_if(values.begin(), values.end(),
                       [&](float x) { return magnitudeBits(x) >= threshold; });
}

/// The k-th largest magnitude key of `values`.
uint32_t kthLargestKey(const std::vector<float> &values, int64_t k) {
  std::vector<uint32_t> keys;
  for (float x : values)
    keys.push_back(magnitudeBits(x));
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(),
                   std::greater<uint32_t>());
  return keys[k - 1];
}

/// Checks commrt.h's guarantee for the threshold of the k largest.
void checkGuarantee(const std::vector<float> &values, int64_t k) {
  SCOPED_TRACE("k = " + std::to_string(k));
  const uint32_t threshold =
      findThreshold(values.data(), static_cast<int64_t>(values.size()), k);
  ASSERT_GE(threshold, 1u) << "zeros must never be selected";
  const int64_t selected = countReaching(values, threshold);
  const int64_t nonzeros = countReaching(values, 1);
  const int64_t atLeastKth = countReaching(values, kthLargestKey(values, k));
  EXPECT_GE(selected, std::min(k, nonzeros));
  EXPECT_LE(selected, std::max(k + k / 8, atLeastKth));
  // Every entry larger than the k-th largest is selected.
  const uint32_t kth = kthLargestKey(values, k);
  for (float x : values)
    if (magnitudeBits(x) > kth)
      ASSERT_GE(magnitudeBits(x), threshold) << x << " was left out";
}

TEST(SelectionTest, GaussianGradients) {
  std::vector<float> values = gaussian(200000, 7);
  for (int64_t k : {1, 2, 17, 200, 1000, 20000, 199999, 200000})
    checkGuarantee(values, k);
}

TEST(SelectionTest, ExactThresholdAfterTheLastPass) {
  // Distinct magnitudes that differ only in their lowest bits: every pass is
  // needed, and the slack cannot be used, so the threshold is the k-th
  // largest key exactly.
  std::vector<float> values;
  for (uint32_t i = 0; i < 4096; ++i) {
    uint32_t bits = 0x3f800000u + i;
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(i % 2 ? -x : x);
  }
  std::shuffle(values.begin(), values.end(), std::mt19937(3));
  for (int64_t k : {1, 8, 9, 100, 500}) {
    uint32_t threshold = findThreshold(values.data(), 4096, k);
    EXPECT_EQ(threshold, 0x3f800000u + 4096 - k) << "k = " << k;
    EXPECT_EQ(countReaching(values, threshold), k);
  }
  // With k = 3700 all 4096 entries are within k + k / 8 at the first pass's
  // bin: the search stops there and selects them all.
  EXPECT_EQ(countReaching(values, findThreshold(values.data(), 4096, 3700)),
            4096);
}

TEST(SelectionTest, StopsEarlyWithinTheSlack) {
  // 1000 entries of magnitude 4 and 100000 of magnitude 1: the first pass's
  // bin of 4.0 holds exactly k = 1000, within k + k / 8, so the search stops
  // at that bin's lower edge without refining it.
  std::vector<float> values(100000, 1.0f);
  values.insert(values.end(), 1000, -4.0f);
  RadixSearch search(1000);
  std::array<int64_t, RadixSearch::kMaxBins> histogram;
  commrt::histogramPass(values.data(), static_cast<int64_t>(values.size()),
                        search, histogram);
  search.advance(histogram.data());
  ASSERT_TRUE(search.done());
  EXPECT_EQ(search.threshold(), magnitudeBits(4.0f) & ~((1u << 20) - 1));
  EXPECT_EQ(countReaching(values, search.threshold()), 1000);
}

TEST(SelectionTest, TiesAreSelectedTogether) {
  std::vector<float> values(5000, 0.5f);
  values[10] = 2.0f;
  values[20] = -3.0f;
  // The 3rd largest is one of 4998 equal magnitudes: all of them reach it.
  uint32_t threshold = findThreshold(values.data(), 5000, 3);
  EXPECT_EQ(threshold, magnitudeBits(0.5f));
  checkGuarantee(values, 3);
  // The 2 largest are distinct.
  EXPECT_EQ(countReaching(values, findThreshold(values.data(), 5000, 2)), 2);
}

TEST(SelectionTest, FewerNonzerosThanKSelectsEveryNonzero) {
  std::vector<float> values(10000, 0.0f);
  values[3] = 1e-40f; // A denormal: nonzero, so selected.
  values[4] = -7.0f;
  values[9999] = 0.25f;
  values[5000] = -0.0f;
  // k = 3: the 3rd largest is the denormal, and exactly 3 reach the
  // threshold (the lower edge of the denormal's bin).
  EXPECT_EQ(countReaching(values, findThreshold(values.data(), 10000, 3)), 3);
  for (int64_t k : {4, 50, 10000}) {
    uint32_t threshold = findThreshold(values.data(), 10000, k);
    EXPECT_EQ(threshold, 1u) << "k = " << k;
    EXPECT_EQ(countReaching(values, threshold), 3) << "k = " << k;
  }
  std::vector<float> zeros(100, 0.0f);
  EXPECT_EQ(countReaching(zeros, findThreshold(zeros.data(), 100, 10)), 0);
}

TEST(SelectionTest, WideDynamicRange) {
  std::vector<float> values = wideDynamicRange(11);
  for (int64_t k : {1, 66, 655, 6554, 65536})
    checkGuarantee(values, k);
}

/// The indices of exactly the `k` largest magnitudes, the lower index first
/// among equal ones, in index order: sorted by (magnitude down, index up).
std::vector<int64_t> bruteForceTopk(const std::vector<float> &values,
                                    int64_t k) {
  std::vector<int64_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    uint32_t ka = magnitudeBits(values[a]), kb = magnitudeBits(values[b]);
    return ka > kb || (ka == kb && a < b);
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

/// The indices `cut` selects from `values`, in index order.
std::vector<int64_t> selectedBy(const std::vector<float> &values, Cut cut) {
  std::vector<int64_t> selected;
  for (size_t i = 0; i < values.size(); ++i)
    if (cut.selects(magnitudeBits(values[i]), static_cast<int64_t>(i)))
      selected.push_back(static_cast<int64_t>(i));
  return selected;
}

/// Checks findTopkCut and selectTopk against the brute-force top-k for
/// every k of `ks`.
void checkTopk(const std::vector<float> &values,
               std::initializer_list<int64_t> ks) {
  const auto count = static_cast<int64_t>(values.size());
  for (int64_t k : ks) {
    SCOPED_TRACE("k = " + std::to_string(k));
    Cut cut = findTopkCut(values.data(), count, k);
    std::vector<int64_t> expected = bruteForceTopk(values, k);
    EXPECT_EQ(selectedBy(values, cut), expected);
    EXPECT_EQ(selectTopk(values.data(), count, k), expected);
  }
}

TEST(TopkCutTest, GaussianGradients) {
  checkTopk(gaussian(100000, 5), {1, 2, 100, 1000, 12345, 99999, 100000});
}

TEST(TopkCutTest, TiesAreTakenLowestIndexFirst) {
  // 30000 entries of 8 distinct magnitudes (both signs): every k below
  // splits a run of ties, which TieSearch narrows over several steps.
  std::vector<float> values(30000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>((i * 7919) % 8);
  checkTopk(values,
            {1, 3750, 3751, 5000, 12345, 26249, 26250, 26251, 29999, 30000});
  // Ties with the k-th largest one tile apart, the wanted one last.
  std::vector<float> sparse(5000, 0.0f);
  sparse[7] = sparse[4999] = sparse[2500] = 2.0f;
  checkTopk(sparse, {1, 2, 3, 4, 4000, 5000});
}

TEST(TopkCutTest, StopsWhenABinEdgeHoldsExactlyK) {
  // 100 entries of 4 and 10000 of 1: after the first pass exactly 100
  // reach the lower edge of 4's bin.
  std::vector<float> values(10000, 1.0f);
  values.insert(values.end(), 100, -4.0f);
  Cut cut =
      findTopkCut(values.data(), static_cast<int64_t>(values.size()), 100);
  EXPECT_EQ(cut.key, magnitudeBits(4.0f) & ~((1u << 20) - 1));
  EXPECT_EQ(cut.tiesBelow, static_cast<int64_t>(values.size()));
  checkTopk(values, {100, 101, 10100});
}

TEST(TopkCutTest, ZerosFillUpToK) {
  std::vector<float> values(1000, 0.0f);
  values[10] = -1e-40f;
  values[900] = 3.0f;
  values[500] = -0.0f;
  checkTopk(values, {1, 2, 3, 4, 500, 1000});
}

TEST(TopkCutTest, WideDynamicRange) {
  checkTopk(wideDynamicRange(13), {1, 66, 655, 6554, 65536});
}

TEST(TieSearchTest, NarrowsToTheWantedTie) {
  // 2^23 entries: tiles of 4096, then of 2, then single entries.
  const int64_t count = int64_t(1) << 23;
  TieSearch search(count, 3);
  EXPECT_EQ(search.tileElements(), 4096);
  EXPECT_EQ(search.tiles(), 2048);
  std::vector<int64_t> counts(2048, 0);
  counts[5] = 2;
  counts[7] = 4;
  ASSERT_TRUE(search.advance(counts.data()));
  EXPECT_EQ(search.begin(), 7 * 4096);
  EXPECT_EQ(search.size(), 4096);
  EXPECT_EQ(search.tileElements(), 2);
  counts.assign(2048, 0);
  counts[100] = 2; // The wanted one is the first of these two.
  ASSERT_TRUE(search.advance(counts.data()));
  EXPECT_FALSE(search.done());
  EXPECT_EQ(search.tileElements(), 1);
  EXPECT_EQ(search.tiles(), 2);
  const int64_t ones[2] = {1, 1};
  ASSERT_TRUE(search.advance(ones));
  ASSERT_TRUE(search.done());
  EXPECT_EQ(search.end(), 7 * 4096 + 200 + 1);
  // Fewer ties than wanted: the counts are inconsistent.
  TieSearch tooFew(10, 3);
  const int64_t few[10] = {1, 0, 1};
  EXPECT_FALSE(tooFew.advance(few));
}

} // namespace
