//===- Selection.cpp - Host histograms of the radix searches --------------===//

#include "Selection.h"

#include <vector>

using namespace commrt;

void commrt::histogramPass(
    const float *acc, int64_t count, int pass, uint32_t prefix,
    std::array<int64_t, RadixSearch::kMaxBins> &histogram) {
  std::fill(histogram.begin(), histogram.end(), 0);
  if (pass == 0) {
    for (int64_t i = 0; i < count; ++i)
      ++histogram[RadixSearch::digit(magnitudeBits(acc[i]), 0)];
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint32_t key = magnitudeBits(acc[i]);
    if (RadixSearch::inPass(key, pass, prefix))
      ++histogram[RadixSearch::digit(key, pass)];
  }
}

void commrt::histogramPass(
    const float *acc, int64_t count, const RadixSearch &search,
    std::array<int64_t, RadixSearch::kMaxBins> &histogram) {
  histogramPass(acc, count, search.pass(), search.prefix(), histogram);
}

uint32_t commrt::findThreshold(const float *acc, int64_t count, int64_t k) {
  RadixSearch search(k);
  std::array<int64_t, RadixSearch::kMaxBins> histogram;
  while (!search.done()) {
    histogramPass(acc, count, search, histogram);
    search.advance(histogram.data());
  }
  return search.threshold();
}

Cut commrt::findTopkCut(const float *acc, int64_t count, int64_t k) {
  TopkSearch search(k);
  std::array<int64_t, RadixSearch::kMaxBins> histogram;
  while (!search.done()) {
    histogramPass(acc, count, search.pass(), search.prefix(), histogram);
    search.advance(histogram.data());
  }
  if (search.takesAllTies())
    return {search.key(), count};
  // The tile counts the device computes, here on the host, so that tests of
  // this function cover TieSearch too.
  TieSearch ties(count, search.tiesWanted());
  std::vector<int64_t> tileCounts;
  while (!ties.done()) {
    const int64_t tile = ties.tileElements(), end = ties.begin() + ties.size();
    tileCounts.assign(ties.tiles(), 0);
    for (int64_t i = ties.begin(); i < end; ++i)
      if (magnitudeBits(acc[i]) == search.key())
        ++tileCounts[(i - ties.begin()) / tile];
    if (!ties.advance(tileCounts.data()))
      break; // Unreachable: the histograms counted these ties.
  }
  return {search.key(), ties.done() ? ties.end() : count};
}
