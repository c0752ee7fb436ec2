//===- MpiDeviceBench.cpp - The MPI backend's device path against its host's //
//
// commrt-mpi-device-bench: run under mpirun, every rank on the one GPU it
// sees (or several). Times commrt_allreduce (f32 sum, in place) under the
// MPI backend over the same data in host memory and in device memory, at
// small, medium and large sizes, in one run, so that the device path
// (DeviceStaging.h: staged through pinned memory, the staged ring for large
// buffers) is measured against the host path it wraps. Each repetition
// starts after an MPI_Barrier and counts the slowest rank's time; the
// median over the repetitions after the warm-up is reported, as latency and
// as bus bandwidth (2 (p - 1) / p of the bytes per second, what each rank
// sends and receives; the bytes per second on one rank). The first
// repetition of each case is checked: the values are small integers, so
// the sums are exact and must be equal on every rank.
//
// It prints a RESULT line per case (bench/runtime's key=value form) and, on
// rank 0, a markdown table with the device path's bus bandwidth as a ratio
// to the host path's; on one rank also the copy's rate and fixed cost that
// a cluster's `staging` section takes (docs/Cluster.md), fitted from the
// difference. Without a visible GPU it times the host path alone and says
// so. No LLVM dependency: the prepared GPU script carries this
// program to a machine without one.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::vector<int64_t> sizes = {int64_t(4) << 10, int64_t(256) << 10,
                                int64_t(4) << 20, int64_t(64) << 20,
                                int64_t(256) << 20};
  int repetitions = 20;
  int warmup = 3;
  std::string label = "gpu";
};

[[noreturn]] void usage(const char *problem) {
  std::fprintf(stderr,
               "commrt-mpi-device-bench: %s\n"
               "usage: commrt-mpi-device-bench [--sizes=BYTES,...] "
               "[--repetitions=N] [--warmup=N] [--label=TEXT]\n",
               problem);
  std::exit(2);
}

/// An integer of at least `least` from `text`, or a usage error naming
/// `what`.
int64_t integer(const char *text, const char *what, int64_t least) {
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < least)
    usage((std::string(what) + " must be an integer of at least " +
           std::to_string(least) + ", not '" + text + "'")
              .c_str());
  return value;
}

Options parse(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    auto valueOf = [&](const char *name) -> const char * {
      std::string prefix = std::string(name) + "=";
      return argument.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char *value = valueOf("--sizes")) {
      options.sizes.clear();
      std::string list = value;
      for (size_t begin = 0; begin <= list.size();) {
        size_t end = list.find(',', begin);
        if (end == std::string::npos)
          end = list.size();
        std::string item = list.substr(begin, end - begin);
        int64_t bytes = integer(item.c_str(), "a size", 4);
        if (bytes % 4 != 0)
          usage("a size must be a multiple of 4 bytes (f32 elements)");
        options.sizes.push_back(bytes);
        begin = end + 1;
      }
    } else if (const char *value = valueOf("--repetitions")) {
      options.repetitions =
          static_cast<int>(integer(value, "--repetitions", 1));
    } else if (const char *value = valueOf("--warmup")) {
      options.warmup = static_cast<int>(integer(value, "--warmup", 0));
    } else if (const char *value = valueOf("--label")) {
      options.label = value;
    } else {
      usage(("unknown argument '" + argument + "'").c_str());
    }
  }
  return options;
}

bool gpuVisible() {
  int devices = 0;
  bool visible = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  return visible;
}

/// Rank `rank`'s value at `i`: small integers, whose sums over any number
/// of ranks a test would run are exact in f32.
float valueAt(int rank, int64_t i) {
  return static_cast<float>((i % 13) - 6 + rank);
}

/// What the sum over `ranks` ranks must be at `i`.
float sumAt(int ranks, int64_t i) {
  return static_cast<float>(ranks * ((i % 13) - 6) + ranks * (ranks - 1) / 2);
}

struct Timing {
  double median = 0, min = 0, max = 0;
  bool checked = true;
};

/// Times commrt_allreduce over `count` floats at `data` (host or device
/// memory), refilled from `fill` (host memory) before every repetition.
Timing timeAllreduce(float *data, bool onDevice, const std::vector<float> &fill,
                     const Options &options, int rank, int ranks) {
  const int64_t count = static_cast<int64_t>(fill.size());
  std::vector<double> seconds;
  Timing timing;
  for (int repetition = 0; repetition < options.warmup + options.repetitions;
       ++repetition) {
    if (onDevice) {
      cudaMemcpy(data, fill.data(), count * sizeof(float),
                 cudaMemcpyHostToDevice);
    } else {
      std::memcpy(data, fill.data(), count * sizeof(float));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double begin = MPI_Wtime();
    if (commrt_allreduce(data, count, COMMRT_F32, COMMRT_SUM) !=
        COMMRT_SUCCESS) {
      std::fprintf(stderr, "[rank %d] commrt_allreduce: %s\n", rank,
                   commrt_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double elapsed = MPI_Wtime() - begin;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    if (repetition == 0) {
      std::vector<float> result(count);
      if (onDevice)
        cudaMemcpy(result.data(), data, count * sizeof(float),
                   cudaMemcpyDeviceToHost);
      else
        std::memcpy(result.data(), data, count * sizeof(float));
      int wrong = 0;
      for (int64_t i = 0; i < count; ++i)
        wrong += result[i] != sumAt(ranks, i);
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      timing.checked = wrong == 0;
    }
    if (repetition >= options.warmup)
      seconds.push_back(elapsed);
  }
  std::sort(seconds.begin(), seconds.end());
  timing.median = seconds[seconds.size() / 2];
  timing.min = seconds.front();
  timing.max = seconds.back();
  return timing;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse(argc, argv);
  if (commrt_init_backend(COMMRT_BACKEND_MPI) != COMMRT_SUCCESS) {
    std::fprintf(stderr, "commrt-mpi-device-bench: %s\n", commrt_last_error());
    return 1;
  }
  const int rank = commrt_rank(), ranks = commrt_size();
  const bool device = gpuVisible();
  if (rank == 0)
    std::printf("commrt-mpi-device-bench: %d ranks, MPI backend, %s\n", ranks,
                device ? "host and device buffers"
                       : "no CUDA device visible: host buffers only");

  struct Row {
    int64_t bytes;
    Timing host, device;
  };
  std::vector<Row> rows;
  bool allChecked = true;
  for (int64_t bytes : options.sizes) {
    const int64_t count = bytes / 4;
    std::vector<float> fill(count);
    for (int64_t i = 0; i < count; ++i)
      fill[i] = valueAt(rank, i);
    Row row{bytes, {}, {}};
    std::vector<float> host(count);
    row.host = timeAllreduce(host.data(), false, fill, options, rank, ranks);
    if (device) {
      float *memory = nullptr;
      if (cudaMalloc(&memory, bytes) != cudaSuccess) {
        std::fprintf(stderr, "[rank %d] cudaMalloc of %lld bytes failed\n",
                     rank, static_cast<long long>(bytes));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      row.device = timeAllreduce(memory, true, fill, options, rank, ranks);
      cudaFree(memory);
    }
    allChecked =
        allChecked && row.host.checked && (!device || row.device.checked);
    rows.push_back(row);
  }

  if (rank == 0) {
    // Each rank sends and receives 2 (p - 1) / p of the buffer.
    const double busFactor =
        ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0; // one rank: a copy
    auto busGBps = [&](int64_t bytes, double seconds) {
      return busFactor * static_cast<double>(bytes) / seconds / 1e9;
    };
    for (const Row &row : rows)
      for (int placement = 0; placement < (device ? 2 : 1); ++placement) {
        const Timing &timing = placement ? row.device : row.host;
        std::printf("RESULT label=%s part=mpi-device placement=%s ranks=%d "
                    "bytes=%lld median_s=%.6f min_s=%.6f max_s=%.6f reps=%d "
                    "bus_gbps=%.3f check=%s\n",
                    options.label.c_str(), placement ? "device" : "host", ranks,
                    static_cast<long long>(row.bytes), timing.median,
                    timing.min, timing.max, options.repetitions,
                    busGBps(row.bytes, timing.median),
                    timing.checked ? "ok" : "FAILED");
      }
    std::printf(
        "\n| bytes | host latency (us) | host bus GB/s | device latency "
        "(us) | device bus GB/s | device / host bandwidth |\n"
        "|---|---|---|---|---|---|\n");
    for (const Row &row : rows) {
      const double hostGBps = busGBps(row.bytes, row.host.median);
      if (!device) {
        std::printf("| %lld | %.1f | %.3f | - | - | - |\n",
                    static_cast<long long>(row.bytes), row.host.median * 1e6,
                    hostGBps);
        continue;
      }
      const double deviceGBps = busGBps(row.bytes, row.device.median);
      std::printf("| %lld | %.1f | %.3f | %.1f | %.3f | %.2f |\n",
                  static_cast<long long>(row.bytes), row.host.median * 1e6,
                  hostGBps, row.device.median * 1e6, deviceGBps,
                  deviceGBps / hostGBps);
    }
    if (device && ranks == 1 && rows.size() >= 2) {
      // On one rank the device path is the host path and a copy each way:
      // half the difference, fitted over the sizes, is what
      // docs/CostModel.md's `staging` prices a copy at, launch + n / rate.
      double sumX = 0, sumY = 0, sumXX = 0, sumXY = 0;
      for (const Row &row : rows) {
        const double x = static_cast<double>(row.bytes);
        const double y = (row.device.median - row.host.median) / 2 * 1e6;
        sumX += x;
        sumY += y;
        sumXX += x * x;
        sumXY += x * y;
      }
      const double n = static_cast<double>(rows.size());
      const double slope =
          (n * sumXY - sumX * sumY) / (n * sumXX - sumX * sumX);
      const double intercept = (sumY - slope * sumX) / n;
      std::printf("\nA copy between device and pinned host memory, fitted: "
                  "\"staging\": {\"copy_gbps\": %.3f, \"launch_us\": %.3f}\n",
                  slope > 0 ? 1e-3 / slope : 0.0, std::max(0.0, intercept));
    }
    if (!allChecked)
      std::printf("\n**A result was wrong (check=FAILED above).**\n");
  }
  commrt_finalize();
  return allChecked ? 0 : 1;
}
