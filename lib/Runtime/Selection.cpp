//===- Selection.cpp - Host histograms of the threshold search -----------===//

#include "Selection.h"

using namespace commrt;

void commrt::histogramPass(
    const float *acc, int64_t count, const RadixSearch &search,
    std::array<int64_t, RadixSearch::kMaxBins> &histogram) {
  const int pass = search.pass();
  const uint32_t prefix = search.prefix();
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

uint32_t commrt::findThreshold(const float *acc, int64_t count, int64_t k) {
  RadixSearch search(k);
  std::array<int64_t, RadixSearch::kMaxBins> histogram;
  while (!search.done()) {
    histogramPass(acc, count, search, histogram);
    search.advance(histogram.data());
  }
  return search.threshold();
}
