//===- Selection.h - Magnitude selection shared by host and device -*- C++ -*-//
//
// Threshold selection finds a magnitude threshold by a radix search over the
// bit patterns of |x| (which order non-negative floats as integers): one
// histogram of the next digit per pass, over the entries whose higher digits
// equal the bin chosen so far, and at most three passes (digits of 11, 10 and
// 10 bits). RadixSearch is the bookkeeping between passes; the host
// (Sparse.cpp) and the CUDA backend (cuda/SparseKernels.cu) compute the
// histograms, so the two select exactly the same entries.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_SELECTION_H
#define COMMRT_SELECTION_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define COMMRT_HOST_DEVICE __host__ __device__
#else
#define COMMRT_HOST_DEVICE
#endif

namespace commrt {

/// The bit pattern of |x|, which orders non-negative floats as integers.
COMMRT_HOST_DEVICE inline uint32_t magnitudeBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x) & 0x7fffffffu;
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7fffffffu;
#endif
}

/// The number of entries of `count` to select at `density`,
/// ceil(density * count), at least 1 and at most `count`.
inline int64_t selectionSize(double density, int64_t count) {
  auto k =
      static_cast<int64_t>(std::ceil(density * static_cast<double>(count)));
  return std::clamp<int64_t>(k, 1, count);
}

/// The radix search for a selection threshold over 31-bit magnitude keys.
///
/// Pass p histograms digit p (the bits [shift(p), shift(p) + width(p)) of the
/// key) of the entries whose key agrees with prefix() above shift(p) +
/// width(p). advance() then walks the bins from the top to the bin holding the
/// k-th largest key. When the entries at or above that bin's lower edge are at
/// most k + k / 8, that edge is the threshold (the search stops early, as
/// RedSync's threshold search does once the count is close enough); otherwise
/// the next pass refines within the bin. After the last pass the threshold is
/// the k-th largest key itself. The threshold is at least 1, so zeros are never
/// selected.
///
/// Guarantee: the entries whose key reaches threshold() number at least
/// min(k, nonzeros) and at most max(k + k / 8, the number of entries at least
/// as large as the k-th largest), which exceeds k + k / 8 only through ties.
class RadixSearch {
public:
  static constexpr int kPasses = 3;
  /// The most bins of one pass (the first pass's 11-bit digit).
  static constexpr int kMaxBins = 1 << 11;

  /// Digit widths and shifts of the passes, most significant first.
  static constexpr int width(int pass) { return pass == 0 ? 11 : 10; }
  static constexpr int shift(int pass) {
    return pass == 0 ? 20 : pass == 1 ? 10 : 0;
  }
  static constexpr int bins(int pass) { return 1 << width(pass); }

  /// Whether `key` takes part in pass `pass` whose prefix is `prefix`: its
  /// digits above the pass's digit equal the prefix's.
  COMMRT_HOST_DEVICE static bool inPass(uint32_t key, int pass,
                                        uint32_t prefix) {
    int above = shift(pass) + width(pass);
    return above >= 31 || (key >> above) == (prefix >> above);
  }

  /// The bin of `key` in pass `pass`.
  COMMRT_HOST_DEVICE static uint32_t digit(uint32_t key, int pass) {
    return (key >> shift(pass)) & ((1u << width(pass)) - 1);
  }

  /// A search for the `k` (>= 1) largest keys.
  explicit RadixSearch(int64_t k) : k(k), slack(k + k / 8) {}

  /// The pass to run next.
  int pass() const { return current; }
  /// The digits chosen by the passes so far, with zeros below.
  uint32_t prefix() const { return prefixBits; }
  /// Whether threshold() is final.
  bool done() const { return finished; }
  /// The threshold once done(): select the entries whose key reaches it.
  uint32_t threshold() const { return std::max<uint32_t>(thresholdBits, 1); }

  /// Consumes the histogram of pass() (bins(pass()) counts, of the entries
  /// inPass() selects) and either finishes or moves to the next pass.
  void advance(const int64_t *histogram) {
    const int pass = current;
    int64_t reaching = above;
    int bin = bins(pass) - 1;
    for (; bin > 0; --bin) {
      if (reaching + histogram[bin] >= k)
        break;
      reaching += histogram[bin];
    }
    // Entries with keys >= the lower edge of `bin`.
    int64_t atEdge = reaching + histogram[bin];
    prefixBits |= static_cast<uint32_t>(bin) << shift(pass);
    // atEdge < k cannot happen with the histograms of k or more entries;
    // stopping there keeps a bad histogram from refining an empty bin.
    if (atEdge <= slack || pass + 1 == kPasses || atEdge < k) {
      thresholdBits = prefixBits;
      finished = true;
      return;
    }
    above = reaching;
    ++current;
  }

private:
  int64_t k;
  int64_t slack;
  /// Entries with keys above the bin being refined.
  int64_t above = 0;
  uint32_t prefixBits = 0;
  uint32_t thresholdBits = 0;
  int current = 0;
  bool finished = false;
};

/// The histogram of pass `search.pass()` over `count` entries at `acc`, into
/// `histogram` (RadixSearch::kMaxBins entries, the first bins(pass) used).
void histogramPass(const float *acc, int64_t count, const RadixSearch &search,
                   std::array<int64_t, RadixSearch::kMaxBins> &histogram);

/// The threshold of the `k` largest magnitudes of `count` entries at `acc`,
/// found by RadixSearch on the host.
uint32_t findThreshold(const float *acc, int64_t count, int64_t k);

} // namespace commrt

#endif // COMMRT_SELECTION_H
