//===- Bucketing.cpp - Optimal contiguous bucketing of gradients ----------===//
//
// With f(j) the earliest end of buckets covering the first j items,
//
//   f(j) = min over valid i of max(f(i-1), ready(j)) + A + B * S(i..j),
//
// where bucket [i..j] is valid when no item but the last has its deadline
// at or before j's position. f is non-decreasing, so the i with
// f(i-1) <= ready(j) form a prefix (its last i is best: the smallest
// bucket), and for the others the term f(i-1) - B * P(i-1) is minimised
// over a window whose bounds only grow: a monotone deque keeps that minimum
// in amortised constant time. Deadlines raise the smallest valid i through
// a heap.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/Bucketing.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <vector>

using namespace mlir::comm;

llvm::SmallVector<BucketRange>
mlir::comm::planOptimalBuckets(llvm::ArrayRef<BucketItem> items,
                               AffineCost cost) {
  const size_t n = items.size();
  const double b = cost.usPerByte;
  // 1-based: item(j) is items[j - 1]; prefix[j] sums the first j items.
  auto item = [&](size_t j) -> const BucketItem & { return items[j - 1]; };
  std::vector<double> prefix(n + 1, 0.0), f(n + 1, 0.0);
  std::vector<size_t> choice(n + 1, 0);
  for (size_t j = 1; j <= n; ++j)
    prefix[j] = prefix[j - 1] + item(j).bytes;
  auto g = [&](size_t i) { return f[i - 1] - b * prefix[i - 1]; };

  using Deadline = std::pair<size_t, size_t>; // (deadline, item)
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>
      deadlines;
  size_t lowest = 1;         // smallest valid i
  size_t prefixEnd = 0;      // largest i with f(i-1) <= ready(j)
  std::deque<size_t> window; // candidate i, increasing g(i)

  for (size_t j = 1; j <= n; ++j) {
    double ready = item(j).readyUs;
    while (!deadlines.empty() && deadlines.top().first <= item(j).position) {
      lowest = std::max(lowest, deadlines.top().second + 1);
      deadlines.pop();
    }
    while (prefixEnd < j && f[prefixEnd] <= ready)
      ++prefixEnd;
    while (!window.empty() && g(window.back()) >= g(j))
      window.pop_back();
    window.push_back(j);
    size_t windowStart = std::max(lowest, prefixEnd + 1);
    while (!window.empty() && window.front() < windowStart)
      window.pop_front();

    // Always valid: j alone.
    f[j] = std::max(f[j - 1], ready) + cost(item(j).bytes);
    choice[j] = j;
    size_t i = std::min(prefixEnd, j);
    if (i >= lowest) {
      double value = ready + cost(prefix[j] - prefix[i - 1]);
      if (value < f[j]) {
        f[j] = value;
        choice[j] = i;
      }
    }
    if (!window.empty()) {
      double value = g(window.front()) + cost.latencyUs + b * prefix[j];
      if (value < f[j]) {
        f[j] = value;
        choice[j] = window.front();
      }
    }
    if (item(j).deadline != std::numeric_limits<size_t>::max())
      deadlines.push({item(j).deadline, j});
  }

  llvm::SmallVector<BucketRange> buckets;
  for (size_t j = n; j > 0; j = choice[j] - 1)
    buckets.push_back({choice[j] - 1, j});
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

llvm::SmallVector<BucketRange>
mlir::comm::planMergedWFBP(llvm::ArrayRef<BucketItem> items, AffineCost cost) {
  llvm::SmallVector<BucketRange> buckets;
  double channelFreeUs = 0.0; // when the issued buckets are done
  size_t first = 0;           // the waiting bucket is [first, k)
  double bytes = 0.0;
  size_t deadline = std::numeric_limits<size_t>::max();
  for (size_t k = 0; k < items.size(); ++k) {
    const BucketItem &item = items[k];
    if (k > first) {
      double startUs = std::max(channelFreeUs, items[k - 1].readyUs);
      if (startUs <= item.readyUs || deadline <= item.position) {
        channelFreeUs = startUs + cost(bytes);
        buckets.push_back({first, k});
        first = k;
        bytes = 0.0;
        deadline = std::numeric_limits<size_t>::max();
      }
    }
    bytes += item.bytes;
    deadline = std::min(deadline, item.deadline);
  }
  if (first < items.size())
    buckets.push_back({first, items.size()});
  return buckets;
}

double mlir::comm::bucketsEndUs(llvm::ArrayRef<BucketItem> items,
                                llvm::ArrayRef<BucketRange> buckets,
                                AffineCost cost) {
  double end = 0.0;
  for (const BucketRange &bucket : buckets) {
    double bytes = 0.0;
    for (size_t k = bucket.first; k < bucket.last; ++k)
      bytes += items[k].bytes;
    end = std::max(end, items[bucket.last - 1].readyUs) + cost(bytes);
  }
  return end;
}
