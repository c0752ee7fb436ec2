//===- SparseInStep.cpp - A sparse allreduce's time within a step ---------===//
//
// commrt-in-step-bench: how long a sparse allreduce takes within a step,
// blocking (run by the calling thread) and started (run by a channel), for
// the channel_slowdown of a device description (docs/Cluster.md). Run under
// mpirun on the cluster to describe, e.g. 4 ranks of bench/cluster/emulate.sh:
//
//   bench/cluster/emulate.sh run 4 1gbit -- build/bin/commrt-in-step-bench
//
// For each of four gradients of ResNet-50 that comm-sparsify makes sparse on
// that cluster (bench/loop), 16 sparse allreduces are timed three ways, each
// after a barrier, the slowest rank's time taken:
//   - alone: back to back;
//   - blocking: each after a sleep as long as one alone, in the calling
//     thread;
//   - started: each started on channel 0 after such a sleep, all waited at
//     the end (the channel is never idle).
// A blocking call's time within the step is (blocking - 16 sleeps) / 16; a
// started one's is (started - 1 sleep) / 16. It prints the medians of 7 runs
// and, per gradient, started / blocking: the slowdown.
//
// Then whether a blocking sparse allreduce waits for a dense allreduce in
// flight on a channel (the simulator runs a blocking collective after the
// one in flight on its channel): the largest gradient above, blocking, right
// after starting a dense allreduce of 4 MiB on channel 0, against each alone.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <vector>

namespace {

constexpr int kCalls = 16;
constexpr int kRuns = 7;
constexpr double kDensity = 0.001;

struct Gradient {
  const char *name;
  int64_t elements;
  commrt_select select;
  commrt_exchange exchange;
  int64_t chunkElements;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// The slowest rank's `us`.
double slowest(double us) {
  commrt_abort_on_error(commrt_allreduce(&us, 1, COMMRT_F64, COMMRT_MAX));
  return us;
}

/// Distinct magnitudes (ties slow the threshold selection down).
void fillGradient(std::vector<float> &grad, int rank) {
  for (size_t i = 0; i < grad.size(); ++i)
    grad[i] =
        static_cast<float>((i * 2654435761u + rank) % 1000) / 1000.0f - 0.5f;
}

/// A blocking sparse allreduce of `gradient` right after a dense allreduce
/// of 4 MiB is started on channel 0, against each alone.
void timeBesideChannel(const Gradient &gradient, int rank) {
  constexpr int64_t kDenseElements = int64_t(1) << 20;
  std::vector<float> dense(kDenseElements, 1.0f);
  std::vector<float> grad(gradient.elements), residual(gradient.elements, 0.0f);
  auto startDense = [&](int64_t *handle) {
    commrt_abort_on_error(commrt_allreduce_start(dense.data(), kDenseElements,
                                                 COMMRT_F32, COMMRT_SUM,
                                                 /*channel=*/0, handle));
  };
  auto sparse = [&] {
    commrt_abort_on_error(
        commrt_sparse_allreduce(grad.data(), residual.data(), gradient.elements,
                                kDensity, gradient.select, gradient.exchange,
                                COMMRT_AVG, gradient.chunkElements));
  };
  std::vector<double> denseAlone, sparseAlone, sparseReturned, bothDone;
  for (int run = 0; run <= kRuns; ++run) {
    int64_t handle = 0;
    commrt_abort_on_error(commrt_barrier());
    double begin = commrt_time_us();
    startDense(&handle);
    commrt_abort_on_error(commrt_wait(handle));
    const double denseUs = slowest(commrt_time_us() - begin);

    fillGradient(grad, rank);
    commrt_abort_on_error(commrt_barrier());
    begin = commrt_time_us();
    sparse();
    const double sparseUs = slowest(commrt_time_us() - begin);

    fillGradient(grad, rank);
    commrt_abort_on_error(commrt_barrier());
    begin = commrt_time_us();
    startDense(&handle);
    sparse();
    const double returnedUs = commrt_time_us() - begin;
    commrt_abort_on_error(commrt_wait(handle));
    const double doneUs = commrt_time_us() - begin;
    if (run == 0)
      continue;
    denseAlone.push_back(denseUs);
    sparseAlone.push_back(sparseUs);
    sparseReturned.push_back(slowest(returnedUs));
    bothDone.push_back(slowest(doneUs));
  }
  if (rank == 0)
    std::printf(
        "%s, blocking, right after a dense allreduce of 4 MiB started on a "
        "channel: returned after %.1f us, both done after %.1f us; alone "
        "%.1f us and %.1f us (sum %.1f us)\n",
        gradient.name, median(sparseReturned), median(bothDone),
        median(sparseAlone), median(denseAlone),
        median(sparseAlone) + median(denseAlone));
}

} // namespace

int main() {
  commrt_abort_on_error(commrt_init());
  const int rank = commrt_rank();
  // ResNet-50's sparse gradients of bench/loop: 3x3 and 1x1 convolutions
  // (threshold selection, allgather of pairs) and larger ones (chunks).
  const Gradient gradients[] = {
      {"conv 1024x256x1x1", 262144, COMMRT_SELECT_THRESHOLD,
       COMMRT_EXCHANGE_ALLGATHER, 0},
      {"conv 256x256x3x3", 589824, COMMRT_SELECT_THRESHOLD,
       COMMRT_EXCHANGE_ALLGATHER, 0},
      {"conv 2048x512x1x1", 1048576, COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK,
       32768},
      {"conv 512x512x3x3", 2359296, COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK,
       32768}};
  if (rank == 0)
    std::printf("| gradient | elements | alone (us) | blocking in a step (us) "
                "| started in a step (us) | started / blocking |\n"
                "|---|---:|---:|---:|---:|---:|\n");
  std::vector<double> ratios;
  for (const Gradient &gradient : gradients) {
    const int64_t n = gradient.elements;
    std::vector<std::vector<float>> grads(kCalls, std::vector<float>(n));
    std::vector<std::vector<float>> residuals(kCalls,
                                              std::vector<float>(n, 0.0f));
    auto fill = [&] {
      for (std::vector<float> &grad : grads)
        fillGradient(grad, rank);
    };
    auto call = [&](int i) {
      commrt_abort_on_error(commrt_sparse_allreduce(
          grads[i].data(), residuals[i].data(), n, kDensity, gradient.select,
          gradient.exchange, COMMRT_AVG, gradient.chunkElements));
    };
    auto start = [&](int i, int64_t *handle) {
      commrt_abort_on_error(commrt_sparse_allreduce_start(
          grads[i].data(), residuals[i].data(), n, kDensity, gradient.select,
          gradient.exchange, COMMRT_AVG, gradient.chunkElements,
          /*channel=*/0, handle));
    };
    std::vector<double> alone, blocking, started;
    // One run more than kept: the first warms up.
    for (int run = 0; run <= kRuns; ++run) {
      fill();
      commrt_abort_on_error(commrt_barrier());
      double begin = commrt_time_us();
      for (int i = 0; i < kCalls; ++i)
        call(i);
      const double aloneUs = slowest(commrt_time_us() - begin) / kCalls;

      fill();
      commrt_abort_on_error(commrt_barrier());
      begin = commrt_time_us();
      for (int i = 0; i < kCalls; ++i) {
        commrt_sleep_us(aloneUs);
        call(i);
      }
      const double blockingUs = slowest(commrt_time_us() - begin);

      fill();
      commrt_abort_on_error(commrt_barrier());
      begin = commrt_time_us();
      std::vector<int64_t> handles(kCalls);
      for (int i = 0; i < kCalls; ++i) {
        commrt_sleep_us(aloneUs);
        start(i, &handles[i]);
      }
      for (int64_t handle : handles)
        commrt_abort_on_error(commrt_wait(handle));
      const double startedUs = slowest(commrt_time_us() - begin);
      if (run == 0)
        continue;
      alone.push_back(aloneUs);
      blocking.push_back((blockingUs - kCalls * aloneUs) / kCalls);
      started.push_back((startedUs - aloneUs) / kCalls);
    }
    const double ratio = median(started) / median(blocking);
    ratios.push_back(ratio);
    if (rank == 0)
      std::printf("| %s | %lld | %.1f | %.1f | %.1f | %.3f |\n", gradient.name,
                  static_cast<long long>(n), median(alone), median(blocking),
                  median(started), ratio);
  }
  if (rank == 0)
    std::printf("channel slowdown (median over the gradients): %.3f\n",
                median(ratios));
  timeBesideChannel(gradients[std::size(gradients) - 1], rank);
  commrt_abort_on_error(commrt_finalize());
  return 0;
}
