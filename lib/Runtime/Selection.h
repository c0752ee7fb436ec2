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

/// The rank owning index `index` among `size` ranks in the hash exchange: a
/// multiplicative hash, which spreads clustered indices over the ranks.
COMMRT_HOST_DEVICE inline int hashOwner(int64_t index, int size) {
  uint64_t hash = static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  return static_cast<int>((hash >> 32) % static_cast<uint64_t>(size));
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

  // Digits of the passes, most significant first. Host and device: inPass
  // and digit call these in kernels.

  /// The width in bits of the digit of pass `pass`.
  COMMRT_HOST_DEVICE static constexpr int width(int pass) {
    return pass == 0 ? 11 : 10;
  }
  /// The position of the lowest bit of the digit of pass `pass`.
  COMMRT_HOST_DEVICE static constexpr int shift(int pass) {
    return pass == 0 ? 20 : pass == 1 ? 10 : 0;
  }
  /// The number of bins of pass `pass`.
  COMMRT_HOST_DEVICE static constexpr int bins(int pass) {
    return 1 << width(pass);
  }

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

  /// The bin of pass `pass` that holds the `k`-th largest key, walking
  /// `histogram` from the top; `reaching` comes in as the number of keys
  /// above the pass's bins and goes out as that plus the keys in the bins
  /// above the one returned (0 when fewer than k keys are counted).
  static int kthBin(const int64_t *histogram, int pass, int64_t k,
                    int64_t &reaching) {
    int bin = bins(pass) - 1;
    for (; bin > 0; --bin) {
      if (reaching + histogram[bin] >= k)
        break;
      reaching += histogram[bin];
    }
    return bin;
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
    int bin = kthBin(histogram, pass, k, reaching);
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

/// The entries a selection takes, by key and index: those whose key exceeds
/// `key`, and those whose key equals it at an index below `tiesBelow`.
/// Threshold selection takes every entry whose key reaches its threshold t:
/// Cut{t, count}. Top-k takes some of the entries tied with the k-th largest
/// key, the lowest indices first.
struct Cut {
  uint32_t key;
  int64_t tiesBelow;

  /// Whether the entry at `index`, whose key is `entryKey`, is selected.
  COMMRT_HOST_DEVICE bool selects(uint32_t entryKey, int64_t index) const {
    return entryKey > key || (entryKey == key && index < tiesBelow);
  }
};

/// The radix search for exactly the `k` largest keys (top-k), the lower
/// index first among equal keys: the passes and histograms of RadixSearch
/// without its slack. It stops once exactly k keys reach the lower edge of
/// the bin holding the k-th largest (then every entry reaching that edge is
/// taken), or after the last pass, which leaves the k-th largest key itself:
/// every entry above it is taken, and tiesWanted() of the entries equal to
/// it, the lowest indices first; TieSearch finds where those end.
class TopkSearch {
public:
  /// A search for the `k` (>= 1) largest keys of at least k entries.
  explicit TopkSearch(int64_t k) : k(k) {}

  /// The pass to run next.
  int pass() const { return current; }
  /// The digits chosen by the passes so far, with zeros below.
  uint32_t prefix() const { return prefixBits; }
  /// Whether the search has finished.
  bool done() const { return finished; }
  /// Once done(): the key of the cut.
  uint32_t key() const { return prefixBits; }
  /// Once done(): whether every entry whose key is key() is taken.
  bool takesAllTies() const { return wanted == 0; }
  /// Once done(), unless takesAllTies(): how many of the entries whose key
  /// is key() are taken, the lowest indices first.
  int64_t tiesWanted() const { return wanted; }

  /// Consumes the histogram of pass() (RadixSearch::bins(pass()) counts, of
  /// the entries RadixSearch::inPass selects) and either finishes or moves
  /// to the next pass.
  void advance(const int64_t *histogram) {
    const int pass = current;
    int64_t reaching = above;
    int bin = RadixSearch::kthBin(histogram, pass, k, reaching);
    int64_t atEdge = reaching + histogram[bin];
    prefixBits |= static_cast<uint32_t>(bin) << RadixSearch::shift(pass);
    // atEdge < k cannot happen with the histograms of k or more entries;
    // taking every entry at the edge then keeps the search finite.
    if (atEdge <= k) {
      finished = true;
      return;
    }
    if (pass + 1 == RadixSearch::kPasses) {
      finished = true;
      wanted = k - reaching;
      return;
    }
    above = reaching;
    ++current;
  }

private:
  int64_t k;
  /// Entries with keys above the bin being refined.
  int64_t above = 0;
  uint32_t prefixBits = 0;
  /// The entries tied with key() to take, 0 for all of them.
  int64_t wanted = 0;
  int current = 0;
  bool finished = false;
};

/// The search for the end of the `wanted` (>= 1) lowest-index entries whose
/// key equals a given key, among `count` entries: each step counts those
/// entries in at most RadixSearch::kMaxBins tiles of equal size covering the
/// range still searched, and narrows the range to the tile where the
/// wanted-th one lies, until tiles are single entries. Three steps cover
/// 2^33 entries.
class TieSearch {
public:
  /// A search over `count` (>= 1) entries, for the `wanted`-th tie.
  TieSearch(int64_t count, int64_t wanted) : length(count), wanted(wanted) {}

  /// The first entry of the range searched.
  int64_t begin() const { return first; }
  /// The number of entries of the range searched.
  int64_t size() const { return length; }
  /// The number of entries of a tile (the last one may be shorter).
  int64_t tileElements() const {
    return (length + RadixSearch::kMaxBins - 1) / RadixSearch::kMaxBins;
  }
  /// The number of tiles, at most RadixSearch::kMaxBins.
  int64_t tiles() const {
    return (length + tileElements() - 1) / tileElements();
  }
  /// Whether end() is found.
  bool done() const { return finished; }
  /// Once done(): the index just after the wanted-th tie.
  int64_t end() const { return first + 1; }

  /// Consumes the number of ties in each of tiles() tiles and narrows the
  /// range. Returns false when the counts hold fewer ties than wanted.
  bool advance(const int64_t *tileCounts) {
    const int64_t tile = tileElements(), n = tiles();
    for (int64_t t = 0; t < n; ++t) {
      if (tileCounts[t] >= wanted) {
        first += t * tile;
        length = std::min(tile, length - t * tile);
        finished = tile == 1;
        return true;
      }
      wanted -= tileCounts[t];
    }
    return false;
  }

private:
  int64_t first = 0;
  int64_t length;
  /// The rank of the tie sought within the range, from 1.
  int64_t wanted;
  bool finished = false;
};

/// The histogram of pass `pass` with prefix `prefix` (see RadixSearch) over
/// `count` entries at `acc`, into `histogram` (RadixSearch::kMaxBins
/// entries, the first bins(pass) used).
void histogramPass(const float *acc, int64_t count, int pass, uint32_t prefix,
                   std::array<int64_t, RadixSearch::kMaxBins> &histogram);

/// The histogram of pass `search.pass()` over `count` entries at `acc`, into
/// `histogram` (RadixSearch::kMaxBins entries, the first bins(pass) used).
void histogramPass(const float *acc, int64_t count, const RadixSearch &search,
                   std::array<int64_t, RadixSearch::kMaxBins> &histogram);

/// The threshold of the `k` largest magnitudes of `count` entries at `acc`,
/// found by RadixSearch on the host.
uint32_t findThreshold(const float *acc, int64_t count, int64_t k);

/// The cut of exactly the `k` (1..count) largest magnitudes of `count`
/// entries at `acc`, the lower index first among equal ones, found by
/// TopkSearch and TieSearch on the host: the reference of the device's.
Cut findTopkCut(const float *acc, int64_t count, int64_t k);

} // namespace commrt

#endif // COMMRT_SELECTION_H
