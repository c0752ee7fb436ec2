//===- Bucketing.h - Optimal contiguous bucketing of gradients ------------===//
//
// Chooses fusion buckets of consecutive gradients so that communication,
// overlapped with compute on one channel, ends as early as possible under an
// affine collective cost. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_BUCKETING_H
#define COMMOPT_ANALYSIS_BUCKETING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstddef>
#include <limits>

namespace mlir::comm {

/// One gradient, in the order gradients become ready.
struct BucketItem {
  /// Bytes on the wire.
  double bytes = 0;
  /// When it is ready (its producer ended), in microseconds; non-decreasing
  /// along the sequence.
  double readyUs = 0;
  /// Its position in program order, and the position before which its
  /// bucket must be issued (the first use of its reduced value).
  size_t position = 0;
  size_t deadline = std::numeric_limits<size_t>::max();
};

/// A collective's time: latencyUs + usPerByte * bytes.
struct AffineCost {
  double latencyUs = 0;
  double usPerByte = 0;
  double operator()(double bytes) const {
    return latencyUs + usPerByte * bytes;
  }
};

/// A bucketing: each bucket is a half-open range [first, last) of items.
struct BucketRange {
  size_t first;
  size_t last;
};

/// The bucketing of `items` whose last collective ends earliest when each
/// bucket is issued as its last item is ready and buckets run one after
/// another, never spanning a deadline. Exact, in O(n log n).
llvm::SmallVector<BucketRange>
planOptimalBuckets(llvm::ArrayRef<BucketItem> items, AffineCost cost);

/// MG-WFBP's merge rule (Shi et al., "MG-WFBP: Efficient Data Communication
/// for Distributed Synchronous SGD Algorithms", 2019): walking the gradients
/// in ready order, a gradient joins the bucket still waiting for the
/// channel when that bucket could not have started before the gradient is
/// ready, which saves one start-up latency at no delay; otherwise the
/// waiting bucket is issued. Deadlines close a bucket as in
/// planOptimalBuckets.
llvm::SmallVector<BucketRange> planMergedWFBP(llvm::ArrayRef<BucketItem> items,
                                              AffineCost cost);

/// When the last collective of `buckets` ends under the same model.
double bucketsEndUs(llvm::ArrayRef<BucketItem> items,
                    llvm::ArrayRef<BucketRange> buckets, AffineCost cost);

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_BUCKETING_H
