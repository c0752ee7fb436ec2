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

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string sizes;
  std::string label;
  std::string plans =
      "per-tensor,per-tensor-mpi,fused-f32,fused-f16,sparse-allgather,"
      "sparse-hash,"
      "sparse-chunk";
  int repetitions = 3;
  int warmup = 1;
  double density = 0.001;
  int64_t sparseMinElements = 65536;
  int64_t chunkElements = 4096;
};

const char *const usageText =
    "usage: mpirun ... commrt-bench --sizes=FILE [options]\n"
    "  --sizes=FILE               gradient sizes, one '<elements> [shape]' a "
    "line\n"
    "  --label=TEXT               names the run in the RESULT lines\n"
    "  --plans=P,P,...            per-tensor, per-tensor-mpi, fused-f32,\n"
    "                             fused-f16,\n"
    "                             sparse-allgather, sparse-hash, sparse-chunk\n"
    "                             (default: all)\n"
    "  --repetitions=N            timed runs per plan, median taken (default "
    "3)\n"
    "  --warmup=N                 untimed runs first (default 1)\n"
    "  --density=D                sparse density in (0, 1] (default 0.001)\n"
    "  --sparse-min-elements=N    smaller gradients go dense (default 65536)\n"
    "  --chunk-elements=N         chunk size of sparse-chunk (default 4096)\n";

[[noreturn]] void usage(const char *message) {
  if (message)
    std::fprintf(stderr, "commrt-bench: %s\n", message);
  std::fputs(usageText, stderr);
  std::exit(2);
}

bool parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    char *end = nullptr;
    if (name == "--help" || name == "-h")
      usage(nullptr);
    if (eq == std::string::npos)
      usage(("option '" + arg + "' expects a value").c_str());
    if (name == "--sizes") {
      options.sizes = value;
    } else if (name == "--label") {
      options.label = value;
    } else if (name == "--plans") {
      options.plans = value;
    } else if (name == "--repetitions" || name == "--warmup") {
      long n = std::strtol(value.c_str(), &end, 10);
      if (*end || n < (name == "--warmup" ? 0 : 1))
        usage((name + " expects a non-negative integer").c_str());
      (name == "--warmup" ? options.warmup : options.repetitions) = int(n);
    } else if (name == "--density") {
      options.density = std::strtod(value.c_str(), &end);
      if (*end || !(options.density > 0 && options.density <= 1))
        usage("--density expects a number in (0, 1]");
    } else if (name == "--sparse-min-elements" || name == "--chunk-elements") {
      long long n = std::strtoll(value.c_str(), &end, 10);
      if (*end || n < 1)
        usage((name + " expects an integer >= 1").c_str());
      (name == "--chunk-elements" ? options.chunkElements
                                  : options.sparseMinElements) = n;
    } else {
      usage(("unknown option '" + name + "'").c_str());
    }
  }
  if (options.sizes.empty())
    usage("--sizes is required");
  if (options.label.empty())
    options.label = options.sizes;
  return true;
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

enum class Plan {
  PerTensor,
  PerTensorMpi,
  FusedF32,
  FusedF16,
  SparseAllgather,
  SparseHash,
  SparseChunk
};

bool isSparse(Plan plan) {
  return plan == Plan::SparseAllgather || plan == Plan::SparseHash ||
         plan == Plan::SparseChunk;
}

bool parsePlan(const std::string &name, Plan &plan) {
  static const struct {
    const char *name;
    Plan plan;
  } table[] = {{"per-tensor", Plan::PerTensor},
               {"per-tensor-mpi", Plan::PerTensorMpi},
               {"fused-f32", Plan::FusedF32},
               {"fused-f16", Plan::FusedF16},
               {"sparse-allgather", Plan::SparseAllgather},
               {"sparse-hash", Plan::SparseHash},
               {"sparse-chunk", Plan::SparseChunk}};
  for (const auto &entry : table)
    if (name == entry.name) {
      plan = entry.plan;
      return true;
    }
  return false;
}

/// Runs one plan over all gradients.
void runPlan(Plan plan, Gradients &g, const Options &options, int size) {
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
    if (g.counts[t] < options.sparseMinElements) {
      densePointers.push_back(g.pointers[t]);
      denseCounts.push_back(g.counts[t]);
      continue;
    }
    check(commrt_sparse_allreduce(g.grads[t].data(), g.residuals[t].data(),
                                  g.counts[t], options.density, select,
                                  exchange, COMMRT_SUM, options.chunkElements),
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
CheckResult checkPlan(Plan plan, const Gradients &g, const Options &options,
                      int rank, int size) {
  CheckResult result;
  // Sparse part: weighted checksums of what was sent and what came back.
  // sum(sent * w), entries sent, sparse elements: summed over the ranks.
  double local[3] = {0, 0, 0};
  double resultSum = 0;
  int64_t resultNonzeros = 0;
  for (size_t t = 0; t < g.counts.size(); ++t) {
    const float *out = g.grads[t].data();
    uint64_t base = g.offsets[t];
    bool sparse = isSparse(plan) && g.counts[t] >= options.sparseMinElements;
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

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  parseOptions(argc, argv, options);
  std::vector<int64_t> counts = readSizes(options.sizes);

  std::vector<std::pair<std::string, Plan>> plans;
  {
    std::string list = options.plans + ",";
    size_t start = 0, comma;
    while ((comma = list.find(',', start)) != std::string::npos) {
      std::string name = list.substr(start, comma - start);
      start = comma + 1;
      if (name.empty())
        continue;
      Plan plan;
      if (!parsePlan(name, plan))
        usage(("unknown plan '" + name + "'").c_str());
      plans.emplace_back(name, plan);
    }
  }

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
  for (auto &entry : plans)
    anySparse |= isSparse(entry.second);
  if (anySparse)
    for (int64_t n : counts)
      g.residuals.emplace_back(size_t(n));
  for (auto &buffer : g.grads)
    g.pointers.push_back(buffer.data());

  if (rank == 0)
    std::printf("commrt-bench: %s: %zu gradients, %lld elements (%.1f MB "
                "f32), %d ranks, %d warm-up + %d timed runs per plan\n",
                options.label.c_str(), counts.size(), (long long)total,
                total * 4e-6, size, options.warmup, options.repetitions);

  struct Row {
    std::string name;
    double median, min, max;
    CheckResult check;
  };
  std::vector<Row> rows;
  bool allOk = true;
  for (auto &[name, plan] : plans) {
    std::vector<double> times;
    CheckResult checked;
    for (int run = 0; run < options.warmup + options.repetitions; ++run) {
      g.fill(rank);
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      runPlan(plan, g, options, size);
      double elapsed = MPI_Wtime() - start, slowest = 0;
      MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (run == 0)
        checked = checkPlan(plan, g, options, rank, size);
      if (run >= options.warmup)
        times.push_back(slowest);
    }
    Row row{name, median(times), *std::min_element(times.begin(), times.end()),
            *std::max_element(times.begin(), times.end()), checked};
    allOk &= checked.ok;
    if (rank == 0) {
      std::printf("RESULT label=%s plan=%s median_s=%.6f min_s=%.6f "
                  "max_s=%.6f reps=%d tensors=%zu elements=%lld ranks=%d "
                  "check=%s max_error=%g sent_density=%.6f\n",
                  options.label.c_str(), name.c_str(), row.median, row.min,
                  row.max, options.repetitions, counts.size(), (long long)total,
                  size, checked.ok ? "ok" : "FAILED", checked.maxError,
                  checked.sentDensity);
      std::fflush(stdout);
    }
    rows.push_back(row);
  }

  if (rank == 0) {
    double fused = 0;
    for (auto &row : rows)
      if (row.name == "fused-f32")
        fused = row.median;
    std::printf("\n%-18s %12s %12s %12s %12s  %s\n", "plan", "median (s)",
                "min (s)", "max (s)", "vs fused-f32", "check");
    for (auto &row : rows) {
      char ratio[32] = "-";
      if (fused > 0)
        std::snprintf(ratio, sizeof(ratio), "%.2fx", row.median / fused);
      char note[64] = "";
      if (isSparse(plans[&row - rows.data()].second))
        std::snprintf(note, sizeof(note), " (sent density %.5f)",
                      row.check.sentDensity);
      std::printf("%-18s %12.4f %12.4f %12.4f %12s  %s%s\n", row.name.c_str(),
                  row.median, row.min, row.max, ratio,
                  row.check.ok ? "ok" : "FAILED", note);
    }
  }
  check(commrt_finalize(), "commrt_finalize");
  return allOk ? 0 : 1;
}
