//===- Calibrate.cpp - Measures a cluster's allreduce and writes its model ===//
//
// commopt-calibrate: run under mpirun on the cluster to be described. Times
// commrt_allreduce (the runtime commopt's lowered code calls) of f32 sums
// over a sweep of message sizes, takes the median of several repetitions per
// size (each repetition starts after an MPI_Barrier and counts the slowest
// rank's time), fits T(n) = a + b n by least squares, converts the fit to the
// per-step ring alpha and beta of the cost model, and writes a
// `commopt-cluster` v1 description (docs/CostModel.md). With several nodes
// of more than one rank (--ranks-per-node), a second sweep times the
// allreduce within every node at once and gives the intra-node level; the
// sweep over all ranks gives the inter-node one. Rank 0 prints the measured
// and fitted times per size.
//
//===----------------------------------------------------------------------===//

#include "Calibration.h"

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "commrt/commrt.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

using namespace commopt::calibrate;
using mlir::comm::ClusterModel;

namespace {

/// The collectives of the step that measures the per-collective overhead,
/// and the least number of times it is timed.
constexpr int kStepCollectives = 16;
constexpr int kStepRepetitions = 15;

/// The smallest message of the wire's sweep: below it the per-message terms
/// hide what the wire costs per byte.
constexpr int64_t kWireMinBytes = int64_t(64) << 10;

struct Options {
  std::string output;
  std::string name;
  int64_t minBytes = 4;
  int64_t maxBytes = int64_t(64) << 20;
  int repetitions = 10;
  int64_t ranksPerNode = 1;
  FitError fit = FitError::Absolute;
  int64_t pieces = 4;
  /// The 16-bit wire type whose cost is measured (COMMRT_F16, COMMRT_BF16),
  /// or COMMRT_WIRE_NONE.
  int32_t wire = COMMRT_WIRE_NONE;
  /// Where rank 0 writes the transport's CPU per sent byte; empty: not
  /// measured.
  std::string hostCpuOutput;
};

const char *const usageText =
    "usage: mpirun ... commopt-calibrate --output=FILE [options]\n"
    "  --output=FILE          where rank 0 writes the commopt-cluster JSON\n"
    "  --name=NAME            the cluster's name (default: FILE's stem)\n"
    "  --min-bytes=N          smallest message, a multiple of 4 (default 4)\n"
    "  --max-bytes=N          largest message, a multiple of 4 (default "
    "64 MiB)\n"
    "  --repetitions=N        timed runs per size, median taken (default 10)\n"
    "  --ranks-per-node=N     ranks per node, dividing the rank count "
    "(default 1)\n"
    "  --pieces=N             lines over ranges of sizes, at most N (default\n"
    "                         4): the fewest whose largest relative error is\n"
    "                         at most 5%, each a relative least-squares fit\n"
    "  --fit=absolute|relative  with --pieces=1, minimise absolute residuals\n"
    "                         (MG-WFBP's fit, default) or relative ones\n"
    "  --wire=f16|bf16        also time the allreduce of f32 gradients sent\n"
    "                         in that wire type, from 64 KiB on, and record\n"
    "                         what it adds per gradient byte beyond sending\n"
    "                         the wire bytes (wire_s_per_byte: packing, the\n"
    "                         16-bit reduction, unpacking)\n"
    "  --host-cpu-output=FILE also measure the CPU a rank's process spends\n"
    "                         per byte it sends in the largest allreduce\n"
    "                         (the runtime's ring) and in an allgather of as\n"
    "                         many bytes (MPI's own collective, as the\n"
    "                         sparse exchanges use) beyond what an allgather\n"
    "                         of one element costs, that cost, and the CPU\n"
    "                         per byte of a pass over rows while all ranks\n"
    "                         run it and alone, the means over the ranks (a\n"
    "                         device's host_cpu.ns_per_sent_byte,\n"
    "                         ns_per_gathered_byte,\n"
    "                         us_per_gathered_collective and, the first\n"
    "                         over the second, local_cpu_scale at this rank\n"
    "                         count), and write them to FILE; meaningful\n"
    "                         where the ranks talk over the network (their\n"
    "                         waits sleep)\n";

/// Whether this process is rank 0 (or runs alone), known before MPI starts,
/// so that only one rank reports bad options.
bool isLauncherRankZero() {
  for (const char *variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(variable))
      return llvm::StringRef(value) == "0";
  return true;
}

[[noreturn]] void badUsage(const llvm::Twine &message) {
  if (isLauncherRankZero())
    llvm::errs() << "commopt-calibrate: " << message << "\n" << usageText;
  std::exit(2);
}

int64_t parseInteger(llvm::StringRef option, llvm::StringRef value,
                     int64_t minimum) {
  int64_t result;
  if (value.getAsInteger(10, result) || result < minimum)
    badUsage(llvm::formatv("{0} expects an integer >= {1}, not '{2}'", option,
                           minimum, value));
  return result;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      if (isLauncherRankZero())
        llvm::outs() << usageText;
      std::exit(0);
    }
    auto [option, value] = arg.split('=');
    bool hasValue = arg.contains('=');
    if (!hasValue && option.starts_with("--") && i + 1 < argc)
      value = argv[++i], hasValue = true;
    if (!option.starts_with("--"))
      badUsage(llvm::formatv("unexpected argument '{0}'", arg));
    if (!hasValue)
      badUsage(llvm::formatv("{0} needs a value", option));
    if (option == "--output")
      options.output = value.str();
    else if (option == "--name")
      options.name = value.str();
    else if (option == "--min-bytes")
      options.minBytes = parseInteger(option, value, 4);
    else if (option == "--max-bytes")
      options.maxBytes = parseInteger(option, value, 4);
    else if (option == "--repetitions")
      options.repetitions = parseInteger(option, value, 1);
    else if (option == "--fit" && (value == "absolute" || value == "relative"))
      options.fit =
          value == "absolute" ? FitError::Absolute : FitError::Relative;
    else if (option == "--fit")
      badUsage(llvm::formatv("--fit expects absolute or relative, not '{0}'",
                             value));
    else if (option == "--ranks-per-node")
      options.ranksPerNode = parseInteger(option, value, 1);
    else if (option == "--pieces")
      options.pieces = parseInteger(option, value, 1);
    else if (option == "--wire" && (value == "f16" || value == "bf16"))
      options.wire = value == "f16" ? COMMRT_F16 : COMMRT_BF16;
    else if (option == "--wire")
      badUsage(llvm::formatv("--wire expects f16 or bf16, not '{0}'", value));
    else if (option == "--host-cpu-output" && !value.empty())
      options.hostCpuOutput = value.str();
    else if (option == "--host-cpu-output")
      badUsage("--host-cpu-output expects a file name");
    else
      badUsage(llvm::formatv("unknown option '{0}'", option));
  }
  if (options.output.empty())
    badUsage("--output is required");
  if (options.minBytes % 4 || options.maxBytes % 4)
    badUsage("--min-bytes and --max-bytes must be multiples of 4 (f32)");
  if (options.maxBytes < options.minBytes)
    badUsage("--max-bytes is smaller than --min-bytes");
  if (options.name.empty())
    options.name = llvm::sys::path::stem(options.output).str();
  return options;
}

/// Aborts every rank when a runtime call fails, so that none waits forever.
void check(int32_t status) { commrt_abort_on_error(status); }

/// The slowest rank's time of one allreduce of `count` floats among the
/// ranks of `group` (0: all ranks, commrt_allreduce; else every node's group
/// at once, as the hierarchical allreduce runs them), sent in `wire`
/// (COMMRT_WIRE_NONE: as f32), in us.
double timeOnce(std::vector<float> &buffer, int64_t count, int32_t group,
                int32_t wire) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  if (group == 0 && wire == COMMRT_WIRE_NONE) {
    check(commrt_allreduce(buffer.data(), count, COMMRT_F32, COMMRT_SUM));
  } else {
    // Ones summed in f16 stay exact up to 2048 ranks: the prescale is 1.
    void *buffers[] = {buffer.data()};
    check(commrt_group_fused_allreduce(group, buffers, &count, 1, COMMRT_F32,
                                       COMMRT_SUM, wire, 1.0f,
                                       COMMRT_ALGORITHM_DEFAULT));
  }
  double local = (MPI_Wtime() - start) * 1e6, slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// The CPU time this process has used (all its threads), in microseconds.
double processCpuUs() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 +
         static_cast<double>(now.tv_nsec) * 1e-3;
}

/// The CPU time the calling thread has used, in microseconds.
double threadCpuUs() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 +
         static_cast<double>(now.tv_nsec) * 1e-3;
}

/// The mean over the ranks of `localUs`, each rank's. Collective.
double meanOverRanks(double localUs) {
  double sum = 0;
  MPI_Allreduce(&localUs, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int ranks;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return sum / ranks;
}

/// The CPU a rank spends in the collective `run`, in us: each rank's median
/// process CPU over `repetitions` runs, each after `prepare` (not counted)
/// and after `untimed` runs that are not timed, the mean over the ranks.
/// Collective.
template <typename Prepare, typename Run>
double collectiveCpuUs(Prepare prepare, Run run, int untimed, int repetitions) {
  std::vector<double> cpuUs;
  for (int r = 0; r < untimed + repetitions; ++r) {
    prepare();
    MPI_Barrier(MPI_COMM_WORLD);
    const double before = processCpuUs();
    run();
    if (r >= untimed)
      cpuUs.push_back(processCpuUs() - before);
  }
  return meanOverRanks(median(cpuUs));
}

/// The CPU a rank spends per byte it sends in an allreduce of `bytes` (f32)
/// over all `ranks` (see cpuNsPerSentByte): a ring sends 2 (p - 1) / p
/// bytes per rank. Collective.
double transportNsPerSentByte(std::vector<float> &buffer, int64_t bytes,
                              int repetitions, int ranks) {
  const int64_t count = bytes / 4;
  const double cpuUs = collectiveCpuUs(
      [&] { std::fill(buffer.begin(), buffer.begin() + count, 1.0f); },
      [&] {
        check(commrt_allreduce(buffer.data(), count, COMMRT_F32, COMMRT_SUM));
      },
      /*untimed=*/0, repetitions);
  return cpuUs * 1e3 / (2.0 * (ranks - 1) / ranks * static_cast<double>(bytes));
}

/// What commrt_allgather (MPI's own nonblocking allgather, whose waits test
/// at short sleeps, as the sparse exchanges' collectives do) costs a rank's
/// CPU: `perCollectiveUs`, that of an allgather of one element a rank,
/// whatever its bytes; and `nsPerSentByte`, what one of `bytes` f32
/// gathered from all `ranks` in equal blocks costs beyond that, per byte a
/// rank sends (its block, at least one element, to each of the p - 1
/// others). See collectiveCpuUs, after one untimed allgather; the small one
/// repeated at least kSmallRepetitions times. Collective.
struct GatherCpu {
  double perCollectiveUs = 0;
  double nsPerSentByte = 0;
};
constexpr int kSmallRepetitions = 15;
GatherCpu measureGatherCpu(int64_t bytes, int repetitions, int ranks) {
  auto allgatherCpuUs = [&](int64_t block, int times) {
    const std::vector<int64_t> counts(ranks, block);
    std::vector<float> send(block, 1.0f), buffer(block * ranks);
    return collectiveCpuUs([] {},
                           [&] {
                             check(commrt_allgather(send.data(), buffer.data(),
                                                    counts.data(), COMMRT_F32));
                           },
                           /*untimed=*/1, times);
  };
  GatherCpu cpu;
  cpu.perCollectiveUs =
      allgatherCpuUs(1, std::max(repetitions, kSmallRepetitions));
  const int64_t block = std::max<int64_t>(1, bytes / 4 / ranks);
  cpu.nsPerSentByte =
      std::max(0.0, allgatherCpuUs(block, repetitions) - cpu.perCollectiveUs) *
      1e3 / (static_cast<double>(ranks - 1) * block * 4);
  return cpu;
}

/// Waits for every rank without holding a core: a barrier tested between
/// sleeps of a millisecond, so that the ranks that wait leave the cores to
/// those that work. Collective.
void sleepingBarrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  int done = 0;
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&request, &done, MPI_STATUS_IGNORE)) {
    timespec millisecond = {0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
}

/// The CPU a byte of a pass like the rows exchanges' (addRowsByIndex, its
/// bytes as the cost model counts them) takes: `sharedNsPerByte` while all
/// ranks run it at once, sharing the cores, their caches and the memory's
/// bandwidth (each rank's median thread CPU over at least
/// kSmallRepetitions passes, the mean over the ranks), and
/// `aloneNsPerByte` while rank 0 runs it and the others sleep (its
/// median); each the median of kLocalScaleRounds rounds, the two
/// alternated. The pass: 24,576 rows of 64 f32 (6 MiB) whose indices
/// repeat, drawn from 12,288 (the size of what the embedding benchmark's
/// allgather of rows brings a rank at 16 ranks), from memory the caches do
/// not hold. Collective.
struct LocalWorkCpu {
  double aloneNsPerByte = 0;
  double sharedNsPerByte = 0;
  /// How many times its CPU alone the pass takes while all ranks run it:
  /// a device's host_cpu.local_cpu_scale.
  double getScale() const {
    return aloneNsPerByte > 0 ? sharedNsPerByte / aloneNsPerByte : 1.0;
  }
};
constexpr int kLocalScaleRounds = 3;
LocalWorkCpu measureLocalWorkCpu(int repetitions, int rank) {
  constexpr int64_t kRows = 24576, kIndices = 12288, kWidth = 64;
  // Passes take the sets in turn: what a pass reads has left the caches
  // since, as a message's rows have (kSets x 6 MiB: more than a 32 MiB
  // last-level cache).
  constexpr int kSets = 8;
  std::vector<std::vector<int64_t>> indices(kSets, std::vector<int64_t>(kRows));
  std::vector<std::vector<float>> values(
      kSets, std::vector<float>(kRows * kWidth, 1.0f));
  std::vector<int64_t> slots(kIndices, -1), order;
  std::vector<float> sums;
  // A fixed spread of repeats, different on each rank.
  uint64_t state = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(rank + 1);
  for (std::vector<int64_t> &set : indices)
    for (int64_t &index : set) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      index = static_cast<int64_t>((state >> 33) % kIndices);
    }
  const int passes = std::max(repetitions, kSmallRepetitions);
  auto medianNsPerByte = [&] {
    std::vector<double> nsPerByte;
    for (int r = 0; r <= passes; ++r) {
      const int set = r % kSets;
      const double before = threadCpuUs();
      addRowsByIndex(indices[set], values[set], kWidth, slots, sums, order);
      const double us = threadCpuUs() - before;
      // The first pass is not timed: the pages of the sums.
      if (r > 0)
        nsPerByte.push_back(
            us * 1e3 /
            addRowsByIndexBytes(kRows, static_cast<int64_t>(order.size()),
                                kWidth));
    }
    return median(nsPerByte);
  };
  // Rounds that alternate the two, so that whatever else the machine runs
  // meanwhile weighs on both alike.
  std::vector<double> alone, shared;
  for (int round = 0; round < kLocalScaleRounds; ++round) {
    sleepingBarrier();
    if (rank == 0)
      alone.push_back(medianNsPerByte());
    sleepingBarrier();
    shared.push_back(meanOverRanks(medianNsPerByte()));
  }
  sleepingBarrier();
  LocalWorkCpu cpu;
  cpu.aloneNsPerByte = rank == 0 ? median(alone) : 0.0;
  MPI_Bcast(&cpu.aloneNsPerByte, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  cpu.sharedNsPerByte = median(shared);
  return cpu;
}

/// The median time of the allreduce among `group` in `wire` (see timeOnce)
/// at each of `sizes` (bytes of f32).
std::vector<Sample> sweep(const std::vector<int64_t> &sizes, int repetitions,
                          std::vector<float> &buffer, int32_t group,
                          int32_t wire = COMMRT_WIRE_NONE) {
  std::vector<Sample> samples;
  for (int64_t bytes : sizes) {
    int64_t count = bytes / 4;
    // One untimed run: connections, the runtime's buffers and page faults
    // belong to no repetition.
    timeOnce(buffer, count, group, wire);
    std::vector<double> times;
    for (int r = 0; r < repetitions; ++r) {
      std::fill(buffer.begin(), buffer.begin() + count, 1.0f);
      times.push_back(timeOnce(buffer, count, group, wire));
    }
    samples.push_back({double(bytes), median(times)});
  }
  return samples;
}

/// The slowest rank's time of `count` allreduces of `elements` floats each,
/// as a training step runs them: each started on channel 0 after `gapUs` of
/// compute (commrt_sleep_us, as a skeleton lowered with compute-delay
/// sleeps), all waited at the end, in us.
double timeInStep(std::vector<float> &buffers, int64_t elements, int count,
                  double gapUs) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  std::vector<int64_t> handles(count);
  for (int i = 0; i < count; ++i) {
    commrt_sleep_us(gapUs);
    void *buffer[] = {buffers.data() + i * elements};
    check(commrt_fused_allreduce_start(buffer, &elements, 1, COMMRT_F32,
                                       COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                       /*channel=*/0, &handles[i]));
  }
  for (int64_t handle : handles)
    check(commrt_wait(handle));
  double local = (MPI_Wtime() - start) * 1e6, slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t(1) << 20) && bytes % (int64_t(1) << 20) == 0)
    return llvm::formatv("{0} MiB", bytes >> 20);
  if (bytes >= 1024 && bytes % 1024 == 0)
    return llvm::formatv("{0} KiB", bytes >> 10);
  return llvm::formatv("{0} B", bytes);
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);

  check(commrt_init());
  int rank = commrt_rank(), ranks = commrt_size();
  auto fail = [&](const llvm::Twine &message) {
    if (rank == 0)
      llvm::errs() << "commopt-calibrate: " << message << "\n";
    commrt_finalize();
    return 1;
  };
  if (ranks < 2)
    return fail("needs at least 2 ranks (run it under mpirun -np P)");
  if (ranks % options.ranksPerNode)
    return fail(llvm::formatv("--ranks-per-node={0} does not divide the {1} "
                              "ranks",
                              options.ranksPerNode, ranks));

  std::vector<int64_t> sizes = sweepSizes(options.minBytes, options.maxBytes);
  std::vector<float> buffer(options.maxBytes / 4, 1.0f);
  std::vector<Sample> samples =
      sweep(sizes, options.repetitions, buffer, /*group=*/0);
  // Several nodes of more than one rank: the ring within each node measures
  // the intra-node level, which the ring over all ranks, bounded by the
  // links between nodes, does not.
  const int64_t q = options.ranksPerNode;
  const bool twoLevels = q > 1 && q < ranks;
  std::vector<Sample> nodeSamples;
  if (twoLevels) {
    int32_t node = 0;
    check(commrt_group_split(/*id=*/0x63616c6962,
                             static_cast<int32_t>(rank / q), rank, &node));
    nodeSamples = sweep(sizes, options.repetitions, buffer, node);
  }

  // The overhead of a collective within a step: kStepCollectives of the
  // largest swept size up to 1 MiB, each started after as long a sleep as it
  // took alone, so that the channel is never idle; what they take beyond
  // the first sleep and their times alone, per collective. The median of
  // at least kStepRepetitions: single runs of this step vary by more than
  // the overhead.
  auto aboveMiB = std::upper_bound(
      samples.begin(), samples.end(), double(int64_t(1) << 20),
      [](double bytes, const Sample &sample) { return bytes < sample.bytes; });
  const Sample &stepSize =
      aboveMiB == samples.begin() ? samples.front() : *std::prev(aboveMiB);
  const int64_t stepElements = static_cast<int64_t>(stepSize.bytes) / 4;
  std::vector<float> stepBuffers(stepElements * kStepCollectives, 1.0f);
  timeInStep(stepBuffers, stepElements, kStepCollectives, stepSize.timeUs);
  std::vector<double> stepTimes;
  for (int r = 0; r < std::max(options.repetitions, kStepRepetitions); ++r) {
    std::fill(stepBuffers.begin(), stepBuffers.end(), 1.0f);
    stepTimes.push_back(timeInStep(stepBuffers, stepElements, kStepCollectives,
                                   stepSize.timeUs));
  }
  const double stepUs = median(stepTimes);
  const double overheadUs =
      std::max(0.0, (stepUs - stepSize.timeUs * (kStepCollectives + 1)) /
                        kStepCollectives);

  // The wire's sweep: f32 gradients of 64 KiB and more sent in 16 bits.
  std::vector<Sample> wireSamples;
  if (options.wire != COMMRT_WIRE_NONE) {
    std::vector<int64_t> wireSizes;
    for (int64_t bytes : sizes)
      if (bytes >= kWireMinBytes)
        wireSizes.push_back(bytes);
    wireSamples = sweep(wireSizes, options.repetitions, buffer, /*group=*/0,
                        options.wire);
  }

  std::optional<double> nsPerSentByte;
  GatherCpu gatherCpu;
  LocalWorkCpu localWork;
  if (!options.hostCpuOutput.empty()) {
    nsPerSentByte = transportNsPerSentByte(buffer, sizes.back(),
                                           options.repetitions, ranks);
    gatherCpu = measureGatherCpu(sizes.back(), options.repetitions, ranks);
    localWork = measureLocalWorkCpu(options.repetitions, rank);
  }

  if (rank != 0) {
    check(commrt_finalize());
    return 0;
  }
  if (nsPerSentByte) {
    llvm::json::Object hostCpu{
        {"ranks", ranks},
        {"ns_per_sent_byte", *nsPerSentByte},
        {"ns_per_gathered_byte", gatherCpu.nsPerSentByte},
        {"us_per_gathered_collective", gatherCpu.perCollectiveUs},
        {"local_cpu_scale", localWork.getScale()},
        {"local_ns_per_byte", localWork.sharedNsPerByte},
        {"local_ns_per_byte_alone", localWork.aloneNsPerByte},
        {"source",
         llvm::formatv(
             "commopt-calibrate on {0}: process CPU per byte sent of "
             "commrt_allreduce of {1} f32 on {2} ranks, and of "
             "commrt_allgather of {1} beyond one of an element a rank (that "
             "one's CPU: us_per_gathered_collective), each rank's median of "
             "{3} ({4} for the small one), the mean over the ranks; "
             "local_ns_per_byte: a pass adding up rows by index from memory "
             "the caches do not hold, each rank's median thread CPU of {4} "
             "while all ranks run them, the mean over the ranks, per byte "
             "as the cost model counts the pass; _alone: rank 0's while the "
             "others sleep (the medians of {5} alternated rounds); "
             "local_cpu_scale: the first over the second",
             today(), formatBytes(sizes.back()), ranks, options.repetitions,
             std::max(options.repetitions, kSmallRepetitions),
             kLocalScaleRounds)
             .str()}};
    std::error_code error;
    llvm::raw_fd_ostream out(options.hostCpuOutput, error);
    if (error)
      return fail("cannot write " + options.hostCpuOutput + ": " +
                  error.message());
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(hostCpu)))
        << "\n";
    llvm::outs() << llvm::formatv(
        "transport CPU: {0:f3} ns per byte sent (allreduce of {2}), {1:f3} "
        "(allgather of {2}) beyond {3:f1} us per allgather; local work: "
        "{4:f3} ns per byte while all ranks run it, {5:f3} alone (x {6:f3})\n",
        *nsPerSentByte, gatherCpu.nsPerSentByte, formatBytes(sizes.back()),
        gatherCpu.perCollectiveUs, localWork.sharedNsPerByte,
        localWork.aloneNsPerByte, localWork.getScale());
  }

  // One line (--pieces=1, by --fit) or lines over ranges of sizes.
  auto fitSweep =
      [&](llvm::ArrayRef<Sample> sweepSamples) -> llvm::Expected<PiecewiseFit> {
    if (options.pieces > 1)
      return fitPiecewise(sweepSamples, static_cast<unsigned>(options.pieces));
    llvm::Expected<LinearFit> line = fitLinear(sweepSamples, options.fit);
    if (!line)
      return line.takeError();
    return PiecewiseFit::single(*line);
  };
  // A failed fit names its sweep; where the times do not grow with the
  // size, larger messages or more repetitions outweigh the noise.
  auto fitFailed = [&](llvm::StringRef sweepName, llvm::Error error) {
    return fail(llvm::formatv(
        "the allreduce sweep {0}: {1} (a wider --max-bytes or more "
        "--repetitions gives the transfer more weight against the noise)",
        sweepName, llvm::toString(std::move(error))));
  };
  llvm::Expected<PiecewiseFit> fit = fitSweep(samples);
  if (!fit)
    return fitFailed(llvm::formatv("over all {0} ranks", ranks).str(),
                     fit.takeError());
  std::optional<PiecewiseFit> nodeFit;
  if (twoLevels) {
    llvm::Expected<PiecewiseFit> fitted = fitSweep(nodeSamples);
    if (!fitted)
      return fitFailed(llvm::formatv("within each node of {0} ranks", q).str(),
                       fitted.takeError());
    nodeFit = std::move(*fitted);
  }
  // T(n) = a + b n for each piece, with the sizes it prices.
  auto describe = [&](const PiecewiseFit &piecewise) {
    std::string text;
    double from = 0;
    for (const PiecewiseFit::Piece &piece : piecewise.pieces) {
      const LinearFit &line = piece.line;
      text += llvm::formatv(
          "{0}{1}a = {2:f3} us, b = {3:e4} s/B{4}", text.empty() ? "" : "; ",
          piecewise.pieces.size() == 1 ? std::string()
          : std::isinf(piece.upToBytes)
              ? llvm::formatv("above {0:f0} B: ", from).str()
              : llvm::formatv("up to {0:f0} B: ", piece.upToBytes).str(),
          line.interceptUs, line.slopeUsPerByte * 1e-6,
          line.interceptClamped ? " (intercept clamped to 0)" : "");
      from = piece.upToBytes;
    }
    return text + llvm::formatv(", max relative error {0:f1}%",
                                piecewise.maxRelativeError * 100)
                      .str();
  };
  std::string source = llvm::formatv(
      "calibrated with commopt-calibrate on {0}: commrt_allreduce of f32 sums "
      "on {1} ranks, {2}..{3} ({4} sizes, median of {5} repetitions), "
      "least-squares T(n) = a + b n ({6}): {7}",
      today(), ranks, formatBytes(options.minBytes),
      formatBytes(options.maxBytes), sizes.size(), options.repetitions,
      options.pieces > 1
          ? llvm::formatv("at most {0} pieces, relative residuals",
                          options.pieces)
                .str()
          : std::string(options.fit == FitError::Absolute
                            ? "absolute residuals"
                            : "relative residuals"),
      describe(*fit));
  if (nodeFit)
    source += llvm::formatv(
        "; intra-node level from the allreduce within each node of {0} "
        "ranks, all nodes at once: {1}",
        q, describe(*nodeFit));
  source += llvm::formatv(
      "; per collective within a step {0:f1} us: {1} allreduces of {2} "
      "started on a channel, each after {3:f1} us of sleep (its time alone), "
      "took {4:f1} us (median of {5})",
      overheadUs, kStepCollectives, formatBytes(int64_t(stepSize.bytes)),
      stepSize.timeUs, stepUs, stepTimes.size());
  llvm::Expected<ClusterModel> cluster =
      makeCalibratedCluster(*fit, ranks, options.ranksPerNode, options.name,
                            source, nodeFit ? &*nodeFit : nullptr);
  if (!cluster)
    return fail(llvm::toString(cluster.takeError()));
  // The sparse exchanges run on the measured backend's own collectives,
  // whose schedules the model prices apart (CollectiveBackend).
  cluster->backend = commrt_backend_in_use() == COMMRT_BACKEND_NCCL
                         ? mlir::comm::CollectiveBackend::Nccl
                         : mlir::comm::CollectiveBackend::Mpi;
  if (!wireSamples.empty()) {
    // What the wire adds beyond the allreduce of its bytes, which the f32
    // sweep's model prices; a line through the origin in gradient bytes.
    std::vector<Sample> extra;
    for (const Sample &sample : wireSamples)
      extra.push_back(
          {sample.bytes,
           sample.timeUs - mlir::comm::allreduceCost(*cluster, sample.bytes / 2)
                               .totalUs()});
    cluster->wireUsPerByte = fitThroughOrigin(extra);
    cluster->source += llvm::formatv(
        "; {0} wire: commrt_fused_allreduce of f32 sums in {0}, {1}..{2}, "
        "adds {3:e4} s per gradient byte beyond the allreduce of the wire "
        "bytes (least squares through the origin)",
        options.wire == COMMRT_F16 ? "f16" : "bf16", formatBytes(kWireMinBytes),
        formatBytes(options.maxBytes), cluster->wireUsPerByte * 1e-6);
  }

  // Measured against fitted, and the cost model's ring prediction from the
  // written alpha and beta (equal to the fit, which checks the conversion).
  llvm::outs() << llvm::formatv("| {0,10} | {1,14} | {2,14} | {3,14} | {4,7} "
                                "|\n",
                                "size", "measured (us)", "fitted (us)",
                                "model (us)", "error");
  llvm::outs() << "|-----------:|---------------:|---------------:|"
                  "---------------:|--------:|\n";
  for (const Sample &sample : samples) {
    double fitted = fit->predictUs(sample.bytes);
    double model = mlir::comm::allreduceCost(*cluster, sample.bytes).totalUs();
    llvm::outs() << llvm::formatv(
        "| {0,10} | {1,14:f1} | {2,14:f1} | {3,14:f1} | {4,6:f1}% |\n",
        formatBytes(int64_t(sample.bytes)), sample.timeUs, fitted, model,
        (fitted - sample.timeUs) / sample.timeUs * 100);
  }
  const mlir::comm::LinkLevel &level = cluster->flatLevel();
  llvm::outs() << llvm::formatv(
      "fit: {0}; ring per step over {1} ranks: alpha = {2:f3} us, beta = "
      "{3:e4} s/B ({4:f2} Gbit/s) above the last regime, {5} regime(s) "
      "below\n",
      describe(*fit), ranks, level.alphaUs, level.betaUsPerByte * 1e-6,
      level.bandwidthGbps(), level.regimes.size());
  if (nodeFit) {
    // The same check within a node: measured, fitted, and the model's ring
    // over one node's ranks on the intra-node level.
    ClusterModel oneNode = *cluster;
    oneNode.ranks = q;
    llvm::outs() << "within each node of " << q << " ranks:\n";
    for (const Sample &sample : nodeSamples)
      llvm::outs() << llvm::formatv(
          "| {0,10} | {1,14:f1} | {2,14:f1} | {3,14:f1} |\n",
          formatBytes(int64_t(sample.bytes)), sample.timeUs,
          nodeFit->predictUs(sample.bytes),
          mlir::comm::allreduceCost(oneNode, sample.bytes).totalUs());
    llvm::outs() << llvm::formatv(
        "intra-node ring per step over {0} ranks: alpha = {1:f3} us, beta = "
        "{2:e4} s/B ({3:f2} Gbit/s)\n",
        q, cluster->intra.alphaUs, cluster->intra.betaUsPerByte * 1e-6,
        cluster->intra.bandwidthGbps());
  }

  if (!wireSamples.empty()) {
    llvm::outs() << llvm::formatv("{0} wire, f32 gradients sent in 16 bits:\n"
                                  "| {1,10} | {2,14} | {3,14} | {4,7} |\n",
                                  options.wire == COMMRT_F16 ? "f16" : "bf16",
                                  "size", "measured (us)", "model (us)",
                                  "error");
    for (const Sample &sample : wireSamples) {
      double model =
          mlir::comm::allreduceCost(*cluster, sample.bytes / 2).totalUs() +
          mlir::comm::getWireCostUs(*cluster, sample.bytes);
      llvm::outs() << llvm::formatv(
          "| {0,10} | {1,14:f1} | {2,14:f1} | {3,6:f1}% |\n",
          formatBytes(int64_t(sample.bytes)), sample.timeUs, model,
          (model - sample.timeUs) / sample.timeUs * 100);
    }
    llvm::outs() << llvm::formatv("wire: {0:e4} s per gradient byte\n",
                                  cluster->wireUsPerByte * 1e-6);
  }

  llvm::outs() << llvm::formatv(
      "per collective within a step: {0:f1} us ({1} allreduces of {2} "
      "started on a channel, each after {3:f1} us of sleep: {4:f1} us)\n",
      overheadUs, kStepCollectives, formatBytes(int64_t(stepSize.bytes)),
      stepSize.timeUs, stepUs);
  // Set last: the tables above compare collectives measured alone.
  cluster->collectiveOverheadUs = overheadUs;

  std::error_code error;
  llvm::raw_fd_ostream file(options.output, error, llvm::sys::fs::OF_Text);
  if (error)
    return fail(llvm::formatv("cannot write {0}: {1}", options.output,
                              error.message()));
  // toJSON writes every field, the format and version included.
  file << llvm::formatv("{0:2}", cluster->toJSON()) << "\n";
  file.close();
  if (file.has_error())
    return fail(llvm::formatv("cannot write {0}", options.output));

  // What was written must load as the planner loads it.
  llvm::Expected<ClusterModel> reloaded =
      ClusterModel::loadFile(options.output);
  if (!reloaded)
    return fail(llvm::formatv("{0} does not load back: {1}", options.output,
                              llvm::toString(reloaded.takeError())));
  llvm::outs() << "wrote " << options.output << "\n";
  check(commrt_finalize());
  return 0;
}
