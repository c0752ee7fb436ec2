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
// With --cluster=FILE --base=FILE --output=FILE, rank 0 also writes the
// device description `base` with the rate and slowdown measured here: each
// call's local steps take what it took within the step beyond its exchange
// as the cluster description prices it (sparseAllreduceCost);
// memory_gbps is the local bytes the cost model counts (sparseLocalBytes)
// over those times, blocking, summed over the gradients, and
// channel_slowdown the median of started over blocking local times (at
// least 1). bench/loop/run.sh with MEASURE_DEVICE=1 plans with a device
// measured so in the same run.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/DeviceModel.h"
#include "commrt/commrt.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

using mlir::comm::ClusterModel;
using mlir::comm::DeviceModel;
using mlir::comm::SparseExchangeScheme;
using mlir::comm::SparseGradient;
using mlir::comm::SparseSelectScheme;

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

struct Options {
  std::string cluster, base, output;
};

const char *const usageText =
    "usage: mpirun ... commrt-in-step-bench [--cluster=FILE --base=FILE "
    "--output=FILE]\n"
    "  --cluster=FILE  the ranks' cluster description (prices the exchanges)\n"
    "  --base=FILE     the device description to update\n"
    "  --output=FILE   where rank 0 writes it with the measured memory_gbps\n"
    "                  and channel_slowdown\n";

/// Parses the options; false (after printing why) on a bad one.
bool parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef argument = argv[i];
    if (argument.consume_front("--cluster="))
      options.cluster = argument.str();
    else if (argument.consume_front("--base="))
      options.base = argument.str();
    else if (argument.consume_front("--output="))
      options.output = argument.str();
    else {
      std::fprintf(stderr, "commrt-in-step-bench: unknown argument '%s'\n%s",
                   argv[i], usageText);
      return false;
    }
  }
  const bool any = !options.cluster.empty() || !options.base.empty() ||
                   !options.output.empty();
  if (any && (options.cluster.empty() || options.base.empty() ||
              options.output.empty())) {
    std::fprintf(stderr,
                 "commrt-in-step-bench: --cluster, --base and --output go "
                 "together\n%s",
                 usageText);
    return false;
  }
  return true;
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

SparseSelectScheme selectScheme(commrt_select select) {
  switch (select) {
  case COMMRT_SELECT_TOPK:
    return SparseSelectScheme::Topk;
  case COMMRT_SELECT_THRESHOLD:
    return SparseSelectScheme::Threshold;
  case COMMRT_SELECT_ROWS:
    return SparseSelectScheme::Rows;
  case COMMRT_SELECT_CHUNK:
    break;
  }
  return SparseSelectScheme::Chunk;
}

SparseExchangeScheme exchangeScheme(commrt_exchange exchange) {
  switch (exchange) {
  case COMMRT_EXCHANGE_ALLGATHER:
    return SparseExchangeScheme::Allgather;
  case COMMRT_EXCHANGE_HASH:
    return SparseExchangeScheme::Hash;
  case COMMRT_EXCHANGE_CHUNK:
    break;
  }
  return SparseExchangeScheme::Chunk;
}

/// Writes options.base with the memory rate and channel slowdown of the
/// measured calls (see the top of the file); prints why and returns false
/// when it cannot.
bool writeDevice(const Options &options, llvm::ArrayRef<Gradient> gradients,
                 llvm::ArrayRef<double> blockingUs,
                 llvm::ArrayRef<double> startedUs, int ranks) {
  auto failWith = [](const llvm::Twine &message) {
    llvm::errs() << "commrt-in-step-bench: " << message << "\n";
    return false;
  };
  llvm::Expected<ClusterModel> cluster = ClusterModel::parse(options.cluster);
  if (!cluster)
    return failWith(llvm::toString(cluster.takeError()));
  if (cluster->ranks != ranks)
    return failWith(llvm::formatv("{0} describes {1} ranks, not the {2} "
                                  "that ran",
                                  options.cluster, cluster->ranks, ranks));
  llvm::Expected<DeviceModel> device = DeviceModel::parse(options.base);
  if (!device)
    return failWith(llvm::toString(device.takeError()));
  double localBytes = 0, localUs = 0;
  std::vector<double> slowdowns;
  for (size_t i = 0; i < gradients.size(); ++i) {
    SparseGradient gradient;
    gradient.denseElements = gradients[i].elements;
    gradient.density = kDensity;
    if (gradients[i].chunkElements > 0)
      gradient.chunkElements = gradients[i].chunkElements;
    SparseSelectScheme select = selectScheme(gradients[i].select);
    SparseExchangeScheme exchange = exchangeScheme(gradients[i].exchange);
    double exchangeUs =
        mlir::comm::sparseAllreduceCost(*cluster, exchange, gradient).totalUs();
    double blockingLocalUs = blockingUs[i] - exchangeUs;
    if (blockingLocalUs <= 0)
      return failWith(llvm::formatv(
          "{0}: the exchange's modelled {1:f1} us is not below the measured "
          "{2:f1} us of the whole call; check the cluster description",
          gradients[i].name, exchangeUs, blockingUs[i]));
    localBytes += mlir::comm::sparseLocalBytes(select, exchange, gradient,
                                               ranks, /*average=*/true);
    localUs += blockingLocalUs;
    slowdowns.push_back((startedUs[i] - exchangeUs) / blockingLocalUs);
  }
  // Bytes per microsecond are 10^-3 GB/s.
  device->memoryGBps = localBytes / localUs / 1e3;
  device->channelSlowdown = std::max(1.0, median(slowdowns));
  device->source += llvm::formatv(
      "; memory_gbps and channel_slowdown measured by commrt-in-step-bench "
      "on {0} ranks with the exchanges priced on {1}: {2:f3} GB/s blocking, "
      "{3:f3} times as long started",
      ranks, options.cluster, device->memoryGBps, device->channelSlowdown);
  if (llvm::Error error = device->verify())
    return failWith(llvm::toString(std::move(error)));
  std::error_code error;
  llvm::raw_fd_ostream file(options.output, error, llvm::sys::fs::OF_Text);
  if (error)
    return failWith(llvm::formatv("cannot write {0}: {1}", options.output,
                                  error.message()));
  file << llvm::formatv("{0:2}", device->toJSON()) << "\n";
  file.close();
  if (file.has_error())
    return failWith(llvm::formatv("cannot write {0}", options.output));
  std::printf("wrote %s: memory_gbps %.3f, channel_slowdown %.3f\n",
              options.output.c_str(), device->memoryGBps,
              device->channelSlowdown);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (!parseOptions(argc, argv, options))
    return 2;
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
  std::vector<double> ratios, blockingMedians, startedMedians;
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
    blockingMedians.push_back(median(blocking));
    startedMedians.push_back(median(started));
    if (rank == 0)
      std::printf("| %s | %lld | %.1f | %.1f | %.1f | %.3f |\n", gradient.name,
                  static_cast<long long>(n), median(alone), median(blocking),
                  median(started), ratio);
  }
  if (rank == 0)
    std::printf("channel slowdown (median over the gradients): %.3f\n",
                median(ratios));
  timeBesideChannel(gradients[std::size(gradients) - 1], rank);
  bool written = true;
  if (rank == 0 && !options.output.empty())
    written = writeDevice(options, gradients, blockingMedians, startedMedians,
                          commrt_size());
  commrt_abort_on_error(commrt_finalize());
  return written ? 0 : 1;
}
