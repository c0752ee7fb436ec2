//===- GpuBench.cu - Times commrt's CUDA kernels on one GPU ---------------===//
//
// commrt-gpu-bench: one process, one GPU. Parts (--parts):
//
//   convert     commrt::cuda::convert over --convert-mb MB of f32 (f32 copy,
//               f32 scaled, f32 <-> f16 and f32 <-> bf16 with a scale), as
//               GB/s of bytes moved (read + written) and as a ratio to
//               cudaMemcpyAsync device to device moving as many bytes in
//               the same run.
//   fused-pack  the NCCL backend's packing of ResNet-50's 161 gradients
//               (25.6M f32) into one fusion buffer and back, f32 -> f16
//               with a prescale and f16 -> f32 with a scale, and the f32
//               copies of a plan without a wire type: as the backend does it
//               (convertSegments, a few launches) and, as the baseline
//               (`-each`), one convert per buffer.
//   select      selection of density --density from --select-elements
//               gaussian floats: threshold (the radix search's histogram
//               passes, the count and the compaction, with the host
//               bookkeeping and its synchronisations), the exact radix top-k
//               of the sparse path, and an exact top-k baseline
//               (cub::DeviceRadixSort of the magnitude keys with their
//               indices, the first k taken and put in index order). The
//               first run checks that both top-k agree index for index.
//   sparse      commrt_sparse_allreduce on device buffers under the NCCL
//               backend on one rank, for threshold/allgather, topk/hash and
//               chunk/chunk, over --select-elements elements.
//
// Times are CUDA events around each repetition on one stream (host work in
// between counts: the stream waits for it), or the host's clock around the
// blocking commrt calls of `sparse`; medians over --repetitions after
// --warmup untimed runs. Every result is a line
//   RESULT label=L part=P plan=N median_s=.. min_s=.. max_s=.. reps=.. ...
// as commrt-bench prints them, followed by part-specific fields; run.sh
// turns them into a markdown table.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"
#include "cuda/SparseKernels.h"
#include "cuda/WireKernels.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace commrt;

/// The parts, in the order they run.
enum class Part { Convert, FusedPack, Select, Sparse };

/// The options of commrt-gpu-bench; --help shows only these, not those of
/// libLLVM.
static llvm::cl::OptionCategory benchCategory("commrt-gpu-bench options");

static llvm::cl::opt<std::string> runLabel(
    "label", llvm::cl::cat(benchCategory), llvm::cl::init("gpu"),
    llvm::cl::desc("Names the run in the RESULT lines (default: gpu)"));
static llvm::cl::list<Part> partList(
    "parts", llvm::cl::cat(benchCategory), llvm::cl::CommaSeparated,
    llvm::cl::desc("Parts to run (default: all)"),
    llvm::cl::values(
        clEnumValN(Part::Convert, "convert", "wire type conversion"),
        clEnumValN(Part::FusedPack, "fused-pack",
                   "ResNet-50's fusion buffer pack and unpack"),
        clEnumValN(Part::Select, "select", "threshold and top-k selection"),
        clEnumValN(Part::Sparse, "sparse",
                   "commrt_sparse_allreduce on one rank")));
static llvm::cl::opt<unsigned>
    repetitions("repetitions", llvm::cl::cat(benchCategory), llvm::cl::init(20),
                llvm::cl::desc("Timed runs, median taken (default: 20)"));
static llvm::cl::opt<unsigned>
    warmup("warmup", llvm::cl::cat(benchCategory), llvm::cl::init(3),
           llvm::cl::desc("Untimed runs first (default: 3)"));
static llvm::cl::opt<int64_t>
    convertMegabytes("convert-mb", llvm::cl::cat(benchCategory),
                     llvm::cl::init(256),
                     llvm::cl::desc("F32 megabytes converted (default: 256)"));
static llvm::cl::opt<int64_t> selectElements(
    "select-elements", llvm::cl::cat(benchCategory), llvm::cl::init(100000000),
    llvm::cl::desc("Elements selected from (default: 100000000)"));
static llvm::cl::opt<double>
    density("density", llvm::cl::cat(benchCategory), llvm::cl::init(0.001),
            llvm::cl::desc("Selection density, in (0, 1] (default: 0.001)"));

namespace {

/// Exits with `message`, an error in the options' values.
[[noreturn]] void optionError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "commrt-gpu-bench") << message << "\n";
  std::exit(2);
}

/// Whether `part` is to run.
bool wanted(Part part) {
  return partList.empty() || llvm::is_contained(partList, part);
}

/// Checks what llvm::cl does not: the ranges of the numbers.
void checkOptions() {
  if (repetitions < 1)
    optionError("--repetitions must be at least 1");
  if (convertMegabytes < 1)
    optionError("--convert-mb expects an integer >= 1");
  if (selectElements < 1)
    optionError("--select-elements expects an integer >= 1");
  if (wanted(Part::Select) && selectElements > INT32_MAX)
    optionError("--select-elements above 2^31 - 1: the sort baseline indexes "
                "with 32 bits");
  if (!(density > 0 && density <= 1))
    optionError("--density expects a number in (0, 1]");
}

/// Exits with a message naming `what` unless `error` is cudaSuccess.
void check(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return;
  std::fprintf(stderr, "commrt-gpu-bench: %s: %s (%s)\n", what,
               cudaGetErrorName(error), cudaGetErrorString(error));
  std::exit(1);
}

/// Exits with commrt's last error unless `status` is COMMRT_SUCCESS.
void checkCommrt(int32_t status, const char *what) {
  if (status == COMMRT_SUCCESS)
    return;
  std::fprintf(stderr, "commrt-gpu-bench: %s: %s: %s\n", what,
               commrt_status_string(status), commrt_last_error());
  std::exit(1);
}

/// Device memory, freed on destruction.
template <typename T> class DeviceArray {
public:
  explicit DeviceArray(size_t count) : count(count) {
    check(cudaMalloc(&data, std::max<size_t>(count, 1) * sizeof(T)),
          "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  /// The device pointer.
  T *get() const { return data; }
  /// The number of elements.
  size_t size() const { return count; }

private:
  T *data = nullptr;
  size_t count;
};

/// A counter-based hash of `x` (splitmix64's finaliser).
__device__ uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Fills `values` with gaussian floats of deviation `sigma` (Box-Muller on
/// hashed counters), reproducibly from `seed`.
__global__ void gaussianKernel(float *values, int64_t count, uint64_t seed,
                               float sigma) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t bits = mix(seed ^ mix(uint64_t(i)));
    // Two uniforms in (0, 1] and [0, 1).
    float u1 = (float(uint32_t(bits >> 40)) + 1.0f) * 0x1p-24f;
    float u2 = float(uint32_t(bits & 0xffffffu)) * 0x1p-24f;
    values[i] = sigma * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

/// Fills `count` floats at `values` with gaussian values.
void fillGaussian(float *values, int64_t count, uint64_t seed, float sigma,
                  cudaStream_t stream) {
  gaussianKernel<<<4096, 256, 0, stream>>>(values, count, seed, sigma);
  check(cudaGetLastError(), "gaussianKernel");
}

/// The magnitude keys of `acc` and the indices 0..count-1, the input of the
/// sort-based top-k baseline.
__global__ void keysKernel(const float *acc, int64_t count, uint32_t *keys,
                           uint32_t *indices) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    keys[i] = magnitudeBits(acc[i]);
    indices[i] = uint32_t(i);
  }
}

/// Median, minimum and maximum of some timings.
struct Summary {
  double median, min, max;
};

/// Summarises `seconds` (not empty).
Summary summarise(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  size_t n = seconds.size();
  double median =
      n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2.0;
  return {median, seconds.front(), seconds.back()};
}

/// Times `run` (which enqueues work on `stream`) with CUDA events, after
/// `warmup` untimed runs.
Summary timeRuns(cudaStream_t stream, const std::function<void()> &run) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (unsigned i = 0; i < warmup; ++i)
    run();
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> seconds;
  for (unsigned i = 0; i < repetitions; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float milliseconds = 0;
    check(cudaEventElapsedTime(&milliseconds, start, stop),
          "cudaEventElapsedTime");
    seconds.push_back(milliseconds * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return summarise(seconds);
}

/// Times `run`, a blocking call, by the host's clock, after
/// `warmup` untimed runs; `prepare` runs untimed before each.
Summary timeCalls(const std::function<void()> &prepare,
                  const std::function<void()> &run) {
  for (unsigned i = 0; i < warmup; ++i) {
    prepare();
    run();
  }
  std::vector<double> seconds;
  for (unsigned i = 0; i < repetitions; ++i) {
    prepare();
    auto start = std::chrono::steady_clock::now();
    run();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return summarise(seconds);
}

/// Prints the common head of a RESULT line, without its newline.
void printResult(const char *part, const std::string &plan,
                 const Summary &time) {
  std::printf("RESULT label=%s part=%s plan=%s median_s=%.6f min_s=%.6f "
              "max_s=%.6f reps=%u",
              runLabel.c_str(), part, plan.c_str(), time.median, time.min,
              time.max, unsigned(repetitions));
}

/// The time of a device-to-device cudaMemcpyAsync moving `bytesMoved`
/// bytes (half read, half written), the reference of a conversion.
Summary timeMemcpy(cudaStream_t stream, const void *from, void *to,
                   size_t bytesMoved) {
  return timeRuns(stream, [&] {
    check(cudaMemcpyAsync(to, from, bytesMoved / 2, cudaMemcpyDeviceToDevice,
                          stream),
          "cudaMemcpyAsync");
  });
}

/// Prints a conversion's RESULT line: its rate and its ratio to a memcpy
/// moving as many bytes.
void reportRate(const char *part, const std::string &plan, const Summary &time,
                const Summary &memcpyTime, size_t bytesMoved, int64_t buffers) {
  double rate = bytesMoved / time.median * 1e-9;
  double memcpyRate = bytesMoved / memcpyTime.median * 1e-9;
  printResult(part, plan, time);
  std::printf(" buffers=%lld bytes_moved=%zu gbps=%.1f memcpy_gbps=%.1f "
              "ratio=%.3f\n",
              (long long)buffers, bytesMoved, rate, memcpyRate,
              rate / memcpyRate);
  std::fflush(stdout);
}

/// Part `convert`: every conversion over one large buffer.
void benchConvert(cudaStream_t stream) {
  const int64_t count = convertMegabytes * (1 << 20) / 4;
  DeviceArray<float> f32(count), f32Out(count);
  DeviceArray<uint16_t> f16(count), bf16(count), narrowOut(count);
  fillGaussian(f32.get(), count, 1, 1.0f, stream);
  // 16-bit inputs, converted once, untimed.
  check(commrt::cuda::convert(f32.get(), COMMRT_F32, f16.get(), COMMRT_F16,
                              count, 1.0, stream),
        "convert");
  check(commrt::cuda::convert(f32.get(), COMMRT_F32, bf16.get(), COMMRT_BF16,
                              count, 1.0, stream),
        "convert");
  struct Case {
    const char *name;
    commrt_dtype from, to;
    double scale;
  } cases[] = {
      {"f32-copy", COMMRT_F32, COMMRT_F32, 1.0},
      {"f32-scale", COMMRT_F32, COMMRT_F32, 0.125},
      {"f32-to-f16", COMMRT_F32, COMMRT_F16, 0.125},
      {"f16-to-f32", COMMRT_F16, COMMRT_F32, 8.0},
      {"f32-to-bf16", COMMRT_F32, COMMRT_BF16, 0.125},
      {"bf16-to-f32", COMMRT_BF16, COMMRT_F32, 8.0},
  };
  for (const Case &c : cases) {
    const void *input = c.from == COMMRT_F32 ? static_cast<void *>(f32.get())
                        : c.from == COMMRT_F16
                            ? static_cast<void *>(f16.get())
                            : static_cast<void *>(bf16.get());
    void *output = c.to == COMMRT_F32 ? static_cast<void *>(f32Out.get())
                                      : static_cast<void *>(narrowOut.get());
    size_t bytesMoved = size_t(count) * (c.from == COMMRT_F32 ? 4 : 2) +
                        size_t(count) * (c.to == COMMRT_F32 ? 4 : 2);
    Summary time = timeRuns(stream, [&] {
      check(commrt::cuda::convert(input, c.from, output, c.to, count, c.scale,
                                  stream),
            "convert");
    });
    Summary memcpyTime =
        timeMemcpy(stream, f32.get(), f32Out.get(), bytesMoved);
    reportRate("convert", c.name, time, memcpyTime, bytesMoved, 1);
  }
}

/// The gradient sizes of torchvision's ResNet-50, in parameter order: 161
/// tensors, 25557032 elements.
std::vector<int64_t> resnet50Sizes() {
  std::vector<int64_t> sizes;
  auto conv = [&](int64_t out, int64_t in, int64_t kernel) {
    sizes.push_back(out * in * kernel * kernel);
  };
  auto batchNorm = [&](int64_t channels) {
    sizes.push_back(channels); // weight
    sizes.push_back(channels); // bias
  };
  conv(64, 3, 7);
  batchNorm(64);
  const int blocks[4] = {3, 4, 6, 3};
  const int64_t widths[4] = {64, 128, 256, 512};
  int64_t in = 64;
  for (int layer = 0; layer < 4; ++layer)
    for (int block = 0; block < blocks[layer]; ++block) {
      const int64_t width = widths[layer], out = 4 * width;
      conv(width, in, 1);
      batchNorm(width);
      conv(width, width, 3);
      batchNorm(width);
      conv(out, width, 1);
      batchNorm(out);
      if (block == 0) {
        conv(out, in, 1);
        batchNorm(out);
      }
      in = out;
    }
  sizes.push_back(1000 * 2048);
  sizes.push_back(1000);
  return sizes;
}

/// Part `fused-pack`: the NCCL backend's pack and unpack of ResNet-50.
void benchFusedPack(cudaStream_t stream) {
  const std::vector<int64_t> sizes = resnet50Sizes();
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  DeviceArray<float> gradients(total), fusion(total);
  DeviceArray<uint16_t> wire(total);
  fillGaussian(gradients.get(), total, 2, 1e-3f, stream);
  // One buffer per gradient, as a model's parameters are; they are views of
  // one allocation here, which the kernels do not know.
  std::vector<float *> buffers;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    buffers.push_back(gradients.get() + offset);
    offset += n;
  }
  const int64_t tensors = int64_t(sizes.size());
  // One convert() per gradient, as the NCCL backend packed before
  // convertSegments(), or the backend's batched launches.
  auto runAll = [&](commrt_dtype from, commrt_dtype to, double scale, bool pack,
                    bool batched) {
    std::vector<commrt::cuda::ConvertSegment> segments;
    int64_t at = 0;
    for (size_t t = 0; t < sizes.size(); ++t) {
      void *fused = to == COMMRT_F32 && from == COMMRT_F32
                        ? static_cast<void *>(fusion.get() + at)
                        : static_cast<void *>(wire.get() + at);
      const void *input = pack ? static_cast<const void *>(buffers[t]) : fused;
      void *output = pack ? fused : static_cast<void *>(buffers[t]);
      if (batched)
        segments.push_back({input, output, sizes[t]});
      else
        check(commrt::cuda::convert(input, from, output, to, sizes[t], scale,
                                    stream),
              "convert");
      at += sizes[t];
    }
    if (batched)
      check(commrt::cuda::convertSegments(segments.data(), segments.size(),
                                          from, to, scale, stream),
            "convertSegments");
  };
  struct Case {
    const char *name;
    commrt_dtype from, to;
    double scale;
    bool pack, batched;
  } cases[] = {
      {"resnet50-pack-f32-each", COMMRT_F32, COMMRT_F32, 1.0, true, false},
      {"resnet50-pack-f32", COMMRT_F32, COMMRT_F32, 1.0, true, true},
      {"resnet50-unpack-f32-each", COMMRT_F32, COMMRT_F32, 1.0, false, false},
      {"resnet50-unpack-f32", COMMRT_F32, COMMRT_F32, 1.0, false, true},
      {"resnet50-pack-f16-each", COMMRT_F32, COMMRT_F16, 0.125, true, false},
      {"resnet50-pack-f16", COMMRT_F32, COMMRT_F16, 0.125, true, true},
      {"resnet50-unpack-f16-each", COMMRT_F16, COMMRT_F32, 8.0, false, false},
      {"resnet50-unpack-f16", COMMRT_F16, COMMRT_F32, 8.0, false, true},
  };
  for (const Case &c : cases) {
    size_t bytesMoved = size_t(total) * (c.from == COMMRT_F32 ? 4 : 2) +
                        size_t(total) * (c.to == COMMRT_F32 ? 4 : 2);
    Summary time = timeRuns(
        stream, [&] { runAll(c.from, c.to, c.scale, c.pack, c.batched); });
    Summary memcpyTime =
        timeMemcpy(stream, gradients.get(), fusion.get(), bytesMoved);
    reportRate("fused-pack", c.name, time, memcpyTime, bytesMoved, tensors);
  }
}

/// Part `select`: threshold and top-k selection, and the sort baseline.
void benchSelect(cudaStream_t stream) {
  const int64_t count = selectElements;
  const int64_t k = selectionSize(density, count);
  DeviceArray<float> acc(count);
  fillGaussian(acc.get(), count, 3, 1e-3f, stream);

  DeviceArray<unsigned long long> bins(RadixSearch::kMaxBins), counter(1);
  // The bins of the searches, then the count of the threshold selection.
  unsigned long long *pinned = nullptr;
  check(cudaMallocHost(&pinned, (RadixSearch::kMaxBins + 1) *
                                    sizeof(unsigned long long)),
        "cudaMallocHost");
  unsigned long long *pinnedCount = pinned + RadixSearch::kMaxBins;
  const commrt::cuda::SearchBuffers search{bins.get(), pinned};
  // Room for k + k / 8 pairs, what threshold selection takes unless
  // magnitudes tie (gaussian floats hardly do), and for k.
  const int64_t capacity = k + k / 8 + 1;
  DeviceArray<int64_t> indices(capacity), selectedCount(1);
  DeviceArray<float> values(capacity);
  size_t tempBytes = 0;
  check(commrt::cuda::select(acc.get(), count, Cut{0, count}, nullptr, nullptr,
                             nullptr, nullptr, tempBytes, stream),
        "select");
  DeviceArray<char> temp(tempBytes);

  int64_t thresholdSelected = 0;
  Summary threshold = timeRuns(stream, [&] {
    uint32_t t = 0;
    check(commrt::cuda::findThreshold(acc.get(), count, k, search, stream, t),
          "findThreshold");
    const Cut cut{t, count};
    check(commrt::cuda::countSelected(acc.get(), count, cut, counter.get(),
                                      stream),
          "countSelected");
    check(cudaMemcpyAsync(pinnedCount, counter.get(), sizeof *pinnedCount,
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const unsigned long long selected = *pinnedCount;
    if (int64_t(selected) > capacity) {
      std::fprintf(stderr,
                   "commrt-gpu-bench: the threshold selects %llu > "
                   "%lld entries (ties?)\n",
                   selected, (long long)capacity);
      std::exit(1);
    }
    thresholdSelected = int64_t(selected);
    size_t bytes = tempBytes;
    check(commrt::cuda::select(acc.get(), count, cut, indices.get(),
                               values.get(), selectedCount.get(), temp.get(),
                               bytes, stream),
          "select");
  });
  printResult("select", "threshold", threshold);
  std::printf(" elements=%lld k=%lld selected=%lld check=%s\n",
              (long long)count, (long long)k, (long long)thresholdSelected,
              thresholdSelected >= k && thresholdSelected <= k + k / 8
                  ? "ok"
                  : "FAILED");

  Summary topk = timeRuns(stream, [&] {
    Cut cut{};
    check(commrt::cuda::findTopkCut(acc.get(), count, k, search, stream, cut),
          "findTopkCut");
    size_t bytes = tempBytes;
    check(commrt::cuda::select(acc.get(), count, cut, indices.get(),
                               values.get(), selectedCount.get(), temp.get(),
                               bytes, stream),
          "select");
  });
  std::vector<int64_t> radixTopk(k);
  check(cudaMemcpy(radixTopk.data(), indices.get(), k * sizeof(int64_t),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy");

  // The baseline: a stable descending sort of (key, index) pairs, whose
  // first k are the top-k with lower indices first among ties, then those
  // k indices in index order.
  DeviceArray<uint32_t> keys(count), sortedKeys(count), order(count),
      sortedOrder(count), topIndices(k);
  size_t sortBytes = 0, indexSortBytes = 0;
  check(cub::DeviceRadixSort::SortPairsDescending(
            nullptr, sortBytes, keys.get(), sortedKeys.get(), order.get(),
            sortedOrder.get(), count, 0, 31, stream),
        "SortPairsDescending");
  check(cub::DeviceRadixSort::SortKeys(nullptr, indexSortBytes,
                                       sortedOrder.get(), topIndices.get(), k,
                                       0, 32, stream),
        "SortKeys");
  DeviceArray<char> sortTemp(std::max(sortBytes, indexSortBytes));
  Summary sorted = timeRuns(stream, [&] {
    keysKernel<<<4096, 256, 0, stream>>>(acc.get(), count, keys.get(),
                                         order.get());
    check(cudaGetLastError(), "keysKernel");
    size_t bytes = sortBytes;
    check(cub::DeviceRadixSort::SortPairsDescending(
              sortTemp.get(), bytes, keys.get(), sortedKeys.get(), order.get(),
              sortedOrder.get(), count, 0, 31, stream),
          "SortPairsDescending");
    bytes = indexSortBytes;
    check(cub::DeviceRadixSort::SortKeys(sortTemp.get(), bytes,
                                         sortedOrder.get(), topIndices.get(), k,
                                         0, 32, stream),
          "SortKeys");
  });
  std::vector<uint32_t> sortTopk(k);
  check(cudaMemcpy(sortTopk.data(), topIndices.get(), k * sizeof(uint32_t),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  bool same = std::equal(radixTopk.begin(), radixTopk.end(), sortTopk.begin(),
                         [](int64_t a, uint32_t b) { return a == int64_t(b); });
  printResult("select", "topk-radix", topk);
  std::printf(" elements=%lld k=%lld selected=%lld check=%s\n",
              (long long)count, (long long)k, (long long)k,
              same ? "ok" : "FAILED");
  printResult("select", "topk-sort", sorted);
  std::printf(" elements=%lld k=%lld selected=%lld check=ok\n",
              (long long)count, (long long)k, (long long)k);
  std::fflush(stdout);
  cudaFreeHost(pinned);
  if (!same) {
    std::fprintf(stderr, "commrt-gpu-bench: the radix top-k and the sorted "
                         "top-k differ\n");
    std::exit(1);
  }
}

/// Part `sparse`: commrt_sparse_allreduce on device buffers, one rank.
void benchSparse(cudaStream_t stream) {
  int32_t status = commrt_init_backend(COMMRT_BACKEND_NCCL);
  if (status != COMMRT_SUCCESS) {
    std::printf("commrt-gpu-bench: sparse: skipped, no NCCL backend: %s\n",
                commrt_last_error());
    return;
  }
  const int64_t count = selectElements;
  DeviceArray<float> grad(count), residual(count);
  struct Case {
    const char *name;
    commrt_select select;
    commrt_exchange exchange;
  } cases[] = {
      {"threshold-allgather", COMMRT_SELECT_THRESHOLD,
       COMMRT_EXCHANGE_ALLGATHER},
      {"topk-hash", COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_HASH},
      {"chunk-chunk", COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK},
  };
  for (const Case &c : cases) {
    check(cudaMemsetAsync(residual.get(), 0, count * sizeof(float), stream),
          "cudaMemsetAsync");
    // The call blocks until its work on the backend's stream is done: the
    // host's clock times it. The gradient is refilled, untimed, before
    // every call; the residual carries over, as in training.
    Summary time = timeCalls(
        [&] {
          fillGaussian(grad.get(), count, 4, 1e-3f, stream);
          check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        },
        [&] {
          checkCommrt(commrt_sparse_allreduce(grad.get(), residual.get(), count,
                                              density, c.select, c.exchange,
                                              COMMRT_SUM,
                                              COMMRT_DEFAULT_CHUNK_ELEMENTS),
                      "commrt_sparse_allreduce");
        });
    printResult("sparse", c.name, time);
    std::printf(" elements=%lld density=%g ranks=1\n", (long long)count,
                double(density));
    std::fflush(stdout);
  }
  checkCommrt(commrt_finalize(), "commrt_finalize");
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(benchCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "Times commrt's CUDA kernels and sparse allreduce on one GPU\n");
  checkOptions();
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties;
  check(cudaGetDeviceProperties(&properties, device),
        "cudaGetDeviceProperties");
  std::printf("commrt-gpu-bench: %s: %s, %d SMs, %.1f GB; %u warm-up + %u "
              "timed runs\n",
              runLabel.c_str(), properties.name, properties.multiProcessorCount,
              properties.totalGlobalMem * 1e-9, unsigned(warmup),
              unsigned(repetitions));
  std::fflush(stdout);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  if (wanted(Part::Convert))
    benchConvert(stream);
  if (wanted(Part::FusedPack))
    benchFusedPack(stream);
  if (wanted(Part::Select))
    benchSelect(stream);
  if (wanted(Part::Sparse))
    benchSparse(stream);
  cudaStreamDestroy(stream);
  return 0;
}
