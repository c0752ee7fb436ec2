//===- ComputeEmulation.h - A skeleton's compute steps on the host -*- C++ -*-//
//
// A training step's skeleton (comm.compute lowered by
// convert-comm-to-runtime) stands for its compute steps on the host: each
// fills its results with synthetic gradient values and, with compute-delay,
// sleeps for the rest of its profiled time.
//
// - Values: zeros made every magnitude tie, and the sparse allreduce's
//   threshold selection took about 3x as long on them as on normally
//   distributed values (1 MiB on the emulated 4 x 1 Gbit/s cluster: 4.5 ms
//   against 1.5 ms), time that real training does not pay.
// - Time: a sleep wakes late (std::this_thread::sleep_for overshot by about
//   0.13 ms on this project's VMs, 44 ms per step for ResNet-50's 352
//   steps), and filling the results takes time of its own. The pacer counts
//   both within the step's profiled time and carries any lateness into the
//   thread's next sleeps, so that the emulated compute ends where the
//   profile says, within one sleep's lateness.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_COMPUTEEMULATION_H
#define COMMRT_COMPUTEEMULATION_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace commrt {

class ComputePacer {
public:
  /// How long to sleep for a compute step of `requestedUs` that has already
  /// spent `spentUs` (filling its results): what is left of it after the
  /// lateness carried from earlier steps (nothing where that covers it).
  double sleepUs(double requestedUs, double spentUs = 0.0) const {
    return std::max(0.0, requestedUs - spentUs - lateUs);
  }

  /// Records that a compute step of `requestedUs` took `elapsedUs` in all
  /// (what it spent, its sleep of sleepUs and the sleep's overshoot).
  void record(double requestedUs, double elapsedUs) {
    lateUs = std::max(0.0, lateUs + elapsedUs - requestedUs);
  }

  /// The time the thread's emulated compute runs behind its profile.
  double lateness() const { return lateUs; }

private:
  double lateUs = 0.0;
};

/// A uniform draw in (0, 1) from a counter-based 32-bit hash (the
/// "lowbias32" mixer) of `seed` and `index`: an odd multiple of 2^-25.
inline double uniformDraw(uint32_t seed, uint32_t index) {
  uint32_t x = index * 0x9e3779b9u + seed * 0x85ebca6bu + 1u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return (static_cast<double>(x >> 8) + 0.5) * 0x1p-24;
}

/// Synthetic gradient value `index` of sequence `seed`: normally
/// distributed (mean 0, standard deviation 1, by Box-Muller from two
/// draws), as gradient entries roughly are; never 0. Selection by
/// magnitude works through the exponent bits first, so the spread of
/// magnitudes matters: on uniform values a sparse allreduce of 1 MiB took
/// 15% longer than on normal ones.
inline float syntheticGradientValue(uint32_t seed, uint32_t index) {
  double radius = std::sqrt(-2.0 * std::log(uniformDraw(seed, 2 * index)));
  double angle = 6.283185307179586 * uniformDraw(seed, 2 * index + 1);
  auto value = static_cast<float>(radius * std::cos(angle));
  return value != 0.0f ? value : 0x1p-30f;
}

/// Synthetic gradients at a copy's speed: a table of kSize values of
/// sequence 0, made once, that a fill copies from `start` on, wrapping
/// around. A value repeats every kSize elements of a fill, which leaves the
/// magnitudes near any selection threshold almost all distinct. (Hashing
/// every element took 2.7 ns each, three times a memset, and the 4 ranks'
/// fills on 2 cores slowed the channels of a skeleton's step.)
class SyntheticGradients {
public:
  static constexpr uint32_t kSize = uint32_t(1) << 16;

  SyntheticGradients() {
    for (uint32_t i = 0; i < kSize; ++i)
      table[i] = syntheticGradientValue(/*seed=*/0, i);
  }

  /// Writes `convert(value)` of `count` values, from table entry `start`
  /// on, to `out`.
  template <typename T, typename Convert>
  void fill(T *out, int64_t count, uint32_t start, Convert convert) const {
    uint32_t at = start % kSize;
    for (int64_t done = 0; done < count;) {
      int64_t run = std::min<int64_t>(count - done, kSize - at);
      for (int64_t i = 0; i < run; ++i)
        out[done + i] = convert(table[at + i]);
      done += run;
      at = 0;
    }
  }

private:
  float table[kSize];
};

} // namespace commrt

#endif // COMMRT_COMPUTEEMULATION_H
