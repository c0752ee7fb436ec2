//===- CommrtBench.cpp - Times commrt's allreduce plans on real gradients -===//
//
// commrt-bench: run under mpirun. Reads the gradient sizes of a real model
// (bench/runtime/model_sizes.py writes them, in backward order), allocates
// one f32 buffer per gradient with rank-dependent values and times plans
// that reduce the same buffers with commrt:
//
//   per-tensor        one commrt_allreduce per gradient (f32 sum)
//   per-tensor-mpi    one plain MPI_Allreduce per gradient: the baseline
//                     without commrt, with the MPI library's own algorithm
//   fused-f32         one commrt_fused_allreduce of all gradients
//   fused-f16         the same with COMMRT_F16 on the wire, prescale 1/p
//   fused-f32-ring    fused-f32 with the algorithm named per call
//   fused-f32-tree    (commrt_group_fused_allreduce over all ranks):
//   fused-f32-hierarchical  the ring, MPI_Allreduce, or the two-level
//                     algorithm over the nodes (the default plans leave
//                     these out: fused-f32 is one of them)
//   sparse-allgather  commrt_sparse_allreduce (threshold select, allgather
//   sparse-hash       exchange / threshold, hash / chunk, chunk) at the
//   sparse-chunk      given density for every gradient of at least
//                     --sparse-min-elements elements; the smaller ones go in
//                     one fused f32 allreduce after them
//
// Every repetition refills the buffers (untimed), starts after an
// MPI_Barrier and counts the slowest rank's time; the median over the
// repetitions after the warm-up is reported. The first run of every plan is
// checked: the values are integers in [-32768, 32767], so dense f32 sums are
// exact; f16 sums must be within a relative 2^-8; sparse results must equal
// the sum of what the ranks sent (sent = acc - residual), by a weighted
// checksum over the ranks. A plan that fails its check is reported as FAILED
// and the program exits with 1.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

/// The plans, in the order they run by default.
enum class Plan {
  PerTensor,
  PerTensorMpi,
  FusedF32,
  FusedF16,
  FusedF32Ring,
  FusedF32Tree,
  FusedF32Hierarchical,
  SparseAllgather,
  SparseHash,
  SparseChunk
};

/// The options of commrt-bench; --help shows only these, not those of libLLVM.
static llvm::cl::OptionCategory benchCategory("commrt-bench options");

static llvm::cl::opt<std::string>
    sizesPath("sizes", llvm::cl::cat(benchCategory), llvm::cl::Required,
              llvm::cl::value_desc("file"),
              llvm::cl::desc("Gradient sizes, one '<elements> [shape]' a "
                             "line"));
static llvm::cl::opt<std::string>
    runLabel("label", llvm::cl::cat(benchCategory),
             llvm::cl::desc("Names the run in the RESULT lines "
                            "(default: the sizes file)"));
static llvm::cl::list<Plan> planList(
    "plans", llvm::cl::cat(benchCategory), llvm::cl::CommaSeparated,
    llvm::cl::desc("Plans to time (default: all)"),
    llvm::cl::values(clEnumValN(Plan::PerTensor, "per-tensor",
                                "one commrt_allreduce per gradient"),
                     clEnumValN(Plan::PerTensorMpi, "per-tensor-mpi",
                                "one plain MPI_Allreduce per gradient"),
                     clEnumValN(Plan::FusedF32, "fused-f32",
                                "one commrt_fused_allreduce of all gradients"),
                     clEnumValN(Plan::FusedF16, "fused-f16",
                                "the same with f16 on the wire"),
                     clEnumValN(Plan::FusedF32Ring, "fused-f32-ring",
                                "fused-f32 by the ring, asked per call"),
                     clEnumValN(Plan::FusedF32Tree, "fused-f32-tree",
                                "fused-f32 by MPI_Allreduce, asked per call"),
                     clEnumValN(Plan::FusedF32Hierarchical,
                                "fused-f32-hierarchical",
                                "fused-f32 by the two-level algorithm over "
                                "the nodes, asked per call"),
                     clEnumValN(Plan::SparseAllgather, "sparse-allgather",
                                "threshold selection, allgather exchange"),
                     clEnumValN(Plan::SparseHash, "sparse-hash",
                                "threshold selection, hash exchange"),
                     clEnumValN(Plan::SparseChunk, "sparse-chunk",
                                "chunk selection, chunk exchange")));
static llvm::cl::opt<unsigned> repetitions(
    "repetitions", llvm::cl::cat(benchCategory), llvm::cl::init(3),
    llvm::cl::desc("Timed runs per plan, median taken (default: 3)"));
static llvm::cl::opt<unsigned>
    warmup("warmup", llvm::cl::cat(benchCategory), llvm::cl::init(1),
           llvm::cl::desc("Untimed runs per plan first (default: 1)"));
static llvm::cl::opt<double>
    density("density", llvm::cl::cat(benchCategory), llvm::cl::init(0.001),
            llvm::cl::desc("Sparse density, in (0, 1] (default: 0.001)"));
static llvm::cl::opt<int64_t>
    sparseMinElements("sparse-min-elements", llvm::cl::cat(benchCategory),
                      llvm::cl::init(65536),
                      llvm::cl::desc("Smaller gradients go dense, in one fused "
                                     "allreduce (default: 65536)"));
static llvm::cl::opt<int64_t>
    chunkElements("chunk-elements", llvm::cl::cat(benchCategory),
                  llvm::cl::init(4096),
                  llvm::cl::desc("Chunk size of sparse-chunk (default: 4096)"));

namespace {

/// Exits with `message`, an error in the options' values.
[[noreturn]] void optionError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "commrt-bench") << message << "\n";
  std::exit(2);
}

/// Checks what llvm::cl does not: the ranges of the numbers.
void checkOptions() {
  if (repetitions < 1)
    optionError("--repetitions must be at least 1");
  if (!(density > 0 && density <= 1))
    optionError("--density expects a number in (0, 1]");
  if (sparseMinElements < 1)
    optionError("--sparse-min-elements expects an integer >= 1");
  if (chunkElements < 1)
    optionError("--chunk-elements expects an integer >= 1");
}

std::vector<int64_t> readSizes(const std::string &path) {
  std::vector<int64_t> sizes;
  FILE *file = std::fopen(path.c_str(), "r");
  if (!file) {
    std::fprintf(stderr, "commrt-bench: cannot open '%s'\n", path.c_str());
    std::exit(2);
  }
  char line[4096];
  while (std::fgets(line, sizeof(line), file)) {
    if (line[0] == '#' || line[0] == '\n')
      continue;
    long long n = std::strtoll(line, nullptr, 10);
    if (n < 1) {
      std::fprintf(stderr, "commrt-bench: bad line in '%s': %s", path.c_str(),
                   line);
      std::exit(2);
    }
    sizes.push_back(n);
  }
  std::fclose(file);
  if (sizes.empty()) {
    std::fprintf(stderr, "commrt-bench: no sizes in '%s'\n", path.c_str());
    std::exit(2);
  }
  return sizes;
}

/// The value of element `global` (index over all gradients) on `rank`: an
/// integer in [-32768, 32767] from a cheap hash, so that magnitudes rarely
/// tie (sparse selection) and f32 sums over a few ranks stay exact.
inline float value(uint64_t global, int rank) {
  uint32_t x = uint32_t(global * 2654435761u) ^ (uint32_t(rank) * 0x9E3779B9u);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  x *= 0x297a2d39u;
  x ^= x >> 15;
  return float(int32_t(x & 0xffffu) - 32768);
}

void check(int32_t status, const char *what) {
  if (status != COMMRT_SUCCESS) {
    std::fprintf(stderr, "commrt-bench: %s: %s: %s\n", what,
                 commrt_status_string(status), commrt_last_error());
    commrt_abort_on_error(status);
  }
}

struct Gradients {
  std::vector<int64_t> counts;
  std::vector<int64_t> offsets; // global index of each buffer's first element
  std::vector<std::vector<float>> grads;
  std::vector<std::vector<float>> residuals; // allocated for sparse plans
  std::vector<void *> pointers;

  void fill(int rank) {
    for (size_t t = 0; t < grads.size(); ++t) {
      float *g = grads[t].data();
      uint64_t base = offsets[t];
      for (int64_t i = 0; i < counts[t]; ++i)
        g[i] = value(base + i, rank);
      if (!residuals.empty())
        std::fill(residuals[t].begin(), residuals[t].end(), 0.0f);
    }
  }
};

bool isSparse(Plan plan) {
  return plan == Plan::SparseAllgather || plan == Plan::SparseHash ||
         plan == Plan::SparseChunk;
}

/// The spelling of `plan` in --plans and in the RESULT lines.
llvm::StringRef planName(Plan plan) {
  switch (plan) {
  case Plan::PerTensor:
    return "per-tensor";
  case Plan::PerTensorMpi:
    return "per-tensor-mpi";
  case Plan::FusedF32:
    return "fused-f32";
  case Plan::FusedF16:
    return "fused-f16";
  case Plan::FusedF32Ring:
    return "fused-f32-ring";
  case Plan::FusedF32Tree:
    return "fused-f32-tree";
  case Plan::FusedF32Hierarchical:
    return "fused-f32-hierarchical";
  case Plan::SparseAllgather:
    return "sparse-allgather";
  case Plan::SparseHash:
    return "sparse-hash";
  case Plan::SparseChunk:
    return "sparse-chunk";
  }
  llvm_unreachable("unknown plan");
}

/// Runs one plan over all gradients.
void runPlan(Plan plan, Gradients &g, int size) {
  int32_t n = int32_t(g.counts.size());
  switch (plan) {
  case Plan::PerTensor:
    for (int32_t t = 0; t < n; ++t)
      check(
          commrt_allreduce(g.pointers[t], g.counts[t], COMMRT_F32, COMMRT_SUM),
          "commrt_allreduce");
    return;
  case Plan::PerTensorMpi:
    for (int32_t t = 0; t < n; ++t)
      if (MPI_Allreduce(MPI_IN_PLACE, g.pointers[t], int(g.counts[t]),
                        MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
        std::fprintf(stderr, "commrt-bench: MPI_Allreduce failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    return;
  case Plan::FusedF32:
    check(commrt_fused_allreduce(g.pointers.data(), g.counts.data(), n,
                                 COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE,
                                 1.0f),
          "commrt_fused_allreduce");
    return;
  case Plan::FusedF16:
    check(commrt_fused_allreduce(g.pointers.data(), g.counts.data(), n,
                                 COMMRT_F32, COMMRT_SUM, COMMRT_F16,
                                 1.0f / float(size)),
          "commrt_fused_allreduce(f16)");
    return;
  case Plan::FusedF32Ring:
  case Plan::FusedF32Tree:
  case Plan::FusedF32Hierarchical: {
    int32_t algorithm = plan == Plan::FusedF32Ring ? COMMRT_ALGORITHM_RING
                        : plan == Plan::FusedF32Tree
                            ? COMMRT_ALGORITHM_TREE
                            : COMMRT_ALGORITHM_HIERARCHICAL;
    check(commrt_group_fused_allreduce(0, g.pointers.data(), g.counts.data(), n,
                                       COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE,
                                       1.0f, algorithm),
          "commrt_group_fused_allreduce");
    return;
  }
  default:
    break;
  }
  int32_t select =
      plan == Plan::SparseChunk ? COMMRT_SELECT_CHUNK : COMMRT_SELECT_THRESHOLD;
  int32_t exchange = plan == Plan::SparseAllgather ? COMMRT_EXCHANGE_ALLGATHER
                     : plan == Plan::SparseHash    ? COMMRT_EXCHANGE_HASH
                                                   : COMMRT_EXCHANGE_CHUNK;
  std::vector<void *> densePointers;
  std::vector<int64_t> denseCounts;
  for (int32_t t = 0; t < n; ++t) {
    if (g.counts[t] < sparseMinElements) {
      densePointers.push_back(g.pointers[t]);
      denseCounts.push_back(g.counts[t]);
      continue;
    }
    check(commrt_sparse_allreduce(g.grads[t].data(), g.residuals[t].data(),
                                  g.counts[t], density, select, exchange,
                                  COMMRT_SUM, chunkElements),
          "commrt_sparse_allreduce");
  }
  if (!densePointers.empty())
    check(commrt_fused_allreduce(densePointers.data(), denseCounts.data(),
                                 int32_t(densePointers.size()), COMMRT_F32,
                                 COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
          "commrt_fused_allreduce(dense rest)");
}

struct CheckResult {
  bool ok = true;
  double maxError = 0;    // dense plans: largest |result - expected|
  double sentDensity = 0; // sparse plans: entries sent / sparse elements
};

/// Checks the results of the first run of `plan` (see the file comment).
CheckResult checkPlan(Plan plan, const Gradients &g, int rank, int size) {
  CheckResult result;
  // Sparse part: weighted checksums of what was sent and what came back.
  // sum(sent * w), entries sent, sparse elements: summed over the ranks.
  double local[3] = {0, 0, 0};
  double resultSum = 0;
  int64_t resultNonzeros = 0;
  for (size_t t = 0; t < g.counts.size(); ++t) {
    const float *out = g.grads[t].data();
    uint64_t base = g.offsets[t];
    bool sparse = isSparse(plan) && g.counts[t] >= sparseMinElements;
    if (sparse) {
      const float *residual = g.residuals[t].data();
      for (int64_t i = 0; i < g.counts[t]; ++i) {
        double w = double((base + i) % 251 + 1);
        float sent = value(base + i, rank) - residual[i];
        if (sent != 0) {
          local[0] += double(sent) * w;
          local[1] += 1;
        }
        if (out[i] != 0) {
          resultSum += double(out[i]) * w;
          ++resultNonzeros;
        }
      }
      local[2] += double(g.counts[t]);
      continue;
    }
    for (int64_t i = 0; i < g.counts[t]; ++i) {
      double expected = 0, magnitude = 0;
      for (int r = 0; r < size; ++r) {
        double v = value(base + i, r);
        expected += v;
        magnitude += std::fabs(v);
      }
      double error = std::fabs(double(out[i]) - expected);
      result.maxError = std::max(result.maxError, error);
      bool good = plan == Plan::FusedF16 ? error <= magnitude / 256.0 + 1e-3
                                         : error == 0;
      if (!good)
        result.ok = false;
    }
  }
  if (isSparse(plan)) {
    double total[3];
    MPI_Allreduce(local, total, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (total[0] != resultSum || double(resultNonzeros) > total[1])
      result.ok = false;
    result.sentDensity = total[2] > 0 ? total[1] / total[2] : 0;
  }
  int ok = result.ok, allOk = 0;
  MPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  result.ok = allOk;
  double maxError = 0;
  MPI_Allreduce(&result.maxError, &maxError, 1, MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  result.maxError = maxError;
  return result;
}

/// CPU seconds, user and system, of every thread of this process so far.
double processCpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(benchCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "Times commrt's allreduce plans on a model's gradients; run it under "
      "mpirun\n");
  checkOptions();
  std::string label = runLabel.empty() ? sizesPath : runLabel;
  std::vector<int64_t> counts = readSizes(sizesPath);
  std::vector<Plan> plans(planList.begin(), planList.end());
  if (plans.empty())
    plans = {Plan::PerTensor,  Plan::PerTensorMpi,    Plan::FusedF32,
             Plan::FusedF16,   Plan::SparseAllgather, Plan::SparseHash,
             Plan::SparseChunk};

  check(commrt_init_backend(COMMRT_BACKEND_MPI), "commrt_init_backend");
  int rank = commrt_rank(), size = commrt_size();

  Gradients g;
  g.counts = counts;
  int64_t total = 0;
  for (int64_t n : counts) {
    g.offsets.push_back(total);
    total += n;
    g.grads.emplace_back(size_t(n));
  }
  bool anySparse = false;
  for (Plan plan : plans)
    anySparse |= isSparse(plan);
  if (anySparse)
    for (int64_t n : counts)
      g.residuals.emplace_back(size_t(n));
  for (auto &buffer : g.grads)
    g.pointers.push_back(buffer.data());

  if (rank == 0)
    std::printf("commrt-bench: %s: %zu gradients, %lld elements (%.1f MB "
                "f32), %d ranks, %u warm-up + %u timed runs per plan\n",
                label.c_str(), counts.size(), (long long)total, total * 4e-6,
                size, unsigned(warmup), unsigned(repetitions));

  struct Row {
    Plan plan;
    double median, min, max;
    /// CPU seconds (all threads) per timed run, the mean over the ranks.
    double cpu;
    CheckResult check;
  };
  std::vector<Row> rows;
  bool allOk = true;
  for (Plan plan : plans) {
    std::vector<double> times;
    CheckResult checked;
    double cpu = 0;
    for (unsigned run = 0; run < warmup + repetitions; ++run) {
      g.fill(rank);
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime(), cpuStart = processCpuSeconds();
      runPlan(plan, g, size);
      double elapsed = MPI_Wtime() - start, slowest = 0;
      double cpuUsed = processCpuSeconds() - cpuStart;
      MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (run == 0)
        checked = checkPlan(plan, g, rank, size);
      if (run >= warmup) {
        times.push_back(slowest);
        cpu += cpuUsed;
      }
    }
    double cpuSum = 0;
    MPI_Allreduce(&cpu, &cpuSum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    Row row{plan,
            median(times),
            *std::min_element(times.begin(), times.end()),
            *std::max_element(times.begin(), times.end()),
            cpuSum / size / repetitions,
            checked};
    allOk &= checked.ok;
    if (rank == 0) {
      std::printf("RESULT label=%s plan=%s median_s=%.6f min_s=%.6f "
                  "max_s=%.6f cpu_s=%.6f reps=%u tensors=%zu elements=%lld "
                  "ranks=%d check=%s max_error=%g sent_density=%.6f\n",
                  label.c_str(), planName(plan).str().c_str(), row.median,
                  row.min, row.max, row.cpu, unsigned(repetitions),
                  counts.size(), (long long)total, size,
                  checked.ok ? "ok" : "FAILED", checked.maxError,
                  checked.sentDensity);
      std::fflush(stdout);
    }
    rows.push_back(row);
  }

  if (rank == 0) {
    double fused = 0;
    for (auto &row : rows)
      if (row.plan == Plan::FusedF32)
        fused = row.median;
    std::printf("\n%-18s %12s %12s %12s %12s  %s\n", "plan", "median (s)",
                "min (s)", "max (s)", "vs fused-f32", "check");
    for (auto &row : rows) {
      char ratio[32] = "-";
      if (fused > 0)
        std::snprintf(ratio, sizeof(ratio), "%.2fx", row.median / fused);
      char note[64] = "";
      if (isSparse(row.plan))
        std::snprintf(note, sizeof(note), " (sent density %.5f)",
                      row.check.sentDensity);
      std::printf("%-18s %12.4f %12.4f %12.4f %12s  %s%s\n",
                  planName(row.plan).str().c_str(), row.median, row.min,
                  row.max, ratio, row.check.ok ? "ok" : "FAILED", note);
    }
  }
  check(commrt_finalize(), "commrt_finalize");
  return allOk ? 0 : 1;
}
