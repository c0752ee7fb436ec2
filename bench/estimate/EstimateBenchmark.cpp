//===- EstimateBenchmark.cpp - Times the import and estimate of big steps -===//
//
// bench-estimate: generates synthetic profiles of 10,000 and 100,000
// gradients whose layers are ResNet-50's (torchvision's, repeated), in both
// import formats: commopt's JSON gradient profile (one gradient per
// parameter tensor) and pipedream's graph.txt (one per layer). Then, several
// times, imports each (Import.h), builds its step model (buildStepModel),
// simulates it as one step and in steady state (simulateStepModel), and runs
// the whole comm-estimate pass. Prints the median times and the 100k/10k
// ratios as a Markdown table (see BENCHMARKS.md).
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommDialect/Target/Import.h"
#include "CommOpt/Analysis/StepModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::comm;

/// The benchmark's own options, the only ones --help lists.
static llvm::cl::OptionCategory benchCategory("bench-estimate options");

static llvm::cl::list<unsigned>
    gradientCounts("gradients", llvm::cl::CommaSeparated,
                   llvm::cl::cat(benchCategory),
                   llvm::cl::desc("Gradients per synthetic profile "
                                  "(default: 10000,100000)"));
static llvm::cl::opt<unsigned>
    repetitions("repetitions", llvm::cl::init(5), llvm::cl::cat(benchCategory),
                llvm::cl::desc("Runs of each measurement; medians reported"));
static llvm::cl::opt<std::string>
    clusterName("cluster", llvm::cl::init(kDefaultClusterName.str()),
                llvm::cl::cat(benchCategory),
                llvm::cl::desc("Cluster preset or description file"));
static llvm::cl::opt<std::string>
    deviceName("device", llvm::cl::init("v100"), llvm::cl::cat(benchCategory),
               llvm::cl::desc("Device preset or description file"));

static llvm::cl::opt<bool> threads(
    "context-threads", llvm::cl::init(false), llvm::cl::cat(benchCategory),
    llvm::cl::desc("Give each MLIRContext its thread pool, as commopt-opt and "
                   "commopt-translate do (default: false, one thread)"));

static llvm::cl::opt<std::string> writeProfiles(
    "write-profiles", llvm::cl::cat(benchCategory),
    llvm::cl::value_desc("directory"),
    llvm::cl::desc("Also write each synthetic profile to this directory "
                   "(synthetic-N.json, synthetic-N.graph.txt), to profile the "
                   "tools on it, e.g. with commopt-opt --mlir-timing"));

/// What the times measure.
enum class Clock { Wall, Cpu };
static llvm::cl::opt<Clock> timeClock(
    "clock", llvm::cl::init(Clock::Wall), llvm::cl::cat(benchCategory),
    llvm::cl::desc("What the times measure"),
    llvm::cl::values(
        clEnumValN(Clock::Wall, "wall", "elapsed time"),
        clEnumValN(Clock::Cpu, "cpu",
                   "CPU time of the process (steadier on a shared machine)")));

namespace {

/// One parameter tensor of a layer.
struct Param {
  std::string name;
  std::vector<int64_t> shape;
};

/// One layer (a conv, a batch norm or the classifier) and its parameters.
struct Layer {
  std::string name;
  std::vector<Param> params;
};

/// The import formats.
enum class ProfileFormat {
  GradProfile,
  /// The same profiles read as before the direct layer reader: every layer
  /// through llvm::json values (GradProfileImportOptions::jsonValuesOnly),
  /// the baseline of the import's speed-up in the same run.
  GradProfileJsonValues,
  Pipedream
};

/// Times of one run, in milliseconds.
struct Sample {
  double importMs = 0;
  double buildMs = 0;
  double simulateMs = 0;
  double passMs = 0;
  /// The whole comm-optimize pipeline (cost fusion, overlap scheduling).
  double optimizeMs = 0;
};

} // namespace

/// torchvision's ResNet-50 in forward order: conv1/bn1, four stages of
/// bottlenecks (3, 4, 6 and 3 blocks; the first of each with a projection),
/// and the classifier: 161 parameter tensors.
static std::vector<Layer> getResNet50Layers() {
  std::vector<Layer> layers;
  auto conv = [&](std::string name, int64_t out, int64_t in, int64_t k) {
    layers.push_back({name, {{name + ".weight", {out, in, k, k}}}});
  };
  auto norm = [&](std::string name, int64_t channels) {
    layers.push_back(
        {name, {{name + ".weight", {channels}}, {name + ".bias", {channels}}}});
  };
  conv("conv1", 64, 3, 7);
  norm("bn1", 64);
  const int64_t blocks[] = {3, 4, 6, 3};
  int64_t inplanes = 64;
  for (int stage = 0; stage < 4; ++stage) {
    int64_t planes = int64_t{64} << stage;
    for (int64_t block = 0; block < blocks[stage]; ++block) {
      std::string prefix = "layer" + std::to_string(stage + 1) + "." +
                           std::to_string(block) + ".";
      conv(prefix + "conv1", planes, inplanes, 1);
      norm(prefix + "bn1", planes);
      conv(prefix + "conv2", planes, planes, 3);
      norm(prefix + "bn2", planes);
      conv(prefix + "conv3", planes * 4, planes, 1);
      norm(prefix + "bn3", planes * 4);
      if (block == 0) {
        conv(prefix + "downsample.0", planes * 4, inplanes, 1);
        norm(prefix + "downsample.1", planes * 4);
      }
      inplanes = planes * 4;
    }
  }
  layers.push_back({"fc", {{"fc.weight", {1000, 2048}}, {"fc.bias", {1000}}}});
  return layers;
}

/// Elements of a parameter tensor.
static double getNumElements(const Param &param) {
  double count = 1;
  for (int64_t dim : param.shape)
    count *= static_cast<double>(dim);
  return count;
}

/// The forward time of a layer with `elements` parameters, in us: 5 us plus
/// 1 ns per element (twice that backward).
static double getForwardUs(double elements) { return 5.0 + elements * 1e-3; }

/// A gradient profile of `numGradients` f32 gradients: ResNet-50's layers
/// repeated (the last copy cut short), each with its own forward time so
/// that the steady state waits per layer.
static std::string makeGradProfile(unsigned numGradients) {
  std::vector<Layer> resnet = getResNet50Layers();
  std::vector<std::pair<Layer, double>> layers; // With element counts.
  unsigned gradients = 0;
  for (unsigned copy = 0; gradients < numGradients; ++copy) {
    for (const Layer &layer : resnet) {
      if (gradients == numGradients)
        break;
      std::string prefix = "r" + std::to_string(copy) + ".";
      Layer copied{prefix + layer.name, {}};
      double elements = 0;
      for (const Param &param : layer.params) {
        if (gradients == numGradients)
          break;
        copied.params.push_back({prefix + param.name, param.shape});
        elements += getNumElements(param);
        ++gradients;
      }
      layers.push_back({std::move(copied), elements});
    }
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("format", "commopt-grad-profile");
    json.attribute("version", 1);
    json.attribute("model", "synthetic");
    // Layers in the order their backward runs: reverse forward order.
    json.attributeArray("layers", [&] {
      for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
        const Layer &layer = it->first;
        double forwardUs = getForwardUs(it->second);
        json.object([&] {
          json.attribute("name", layer.name);
          json.attribute("forward_us", forwardUs);
          json.attribute("backward_us", 2.0 * forwardUs);
          json.attributeArray("params", [&] {
            for (const Param &param : layer.params)
              json.object([&] {
                json.attribute("name", param.name);
                json.attributeArray("shape", [&] {
                  for (int64_t dim : param.shape)
                    json.value(dim);
                });
                json.attribute("dtype", "f32");
              });
          });
        });
      }
    });
  });
  return text;
}

/// A pipedream graph.txt of `numGradients` layers in a chain after the
/// input: ResNet-50's layers repeated, each with one gradient (all its
/// parameters), times in ms as pipedream writes them.
static std::string makePipedreamProfile(unsigned numGradients) {
  std::vector<Layer> resnet = getResNet50Layers();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "node0 -- Input0 -- forward_compute_time=0.000, "
        "backward_compute_time=0.000, activation_size=0.0, "
        "parameter_size=0.000\n";
  for (unsigned node = 1; node <= numGradients; ++node) {
    const Layer &layer = resnet[(node - 1) % resnet.size()];
    double elements = 0;
    for (const Param &param : layer.params)
      elements += getNumElements(param);
    double forwardMs = getForwardUs(elements) / 1000.0;
    os << "node" << node << " -- " << layer.name
       << llvm::format(" -- forward_compute_time=%.6f, "
                       "backward_compute_time=%.6f, activation_size=0.0, "
                       "parameter_size=%.3f\n",
                       forwardMs, 2.0 * forwardMs, 4.0 * elements);
  }
  for (unsigned node = 0; node < numGradients; ++node)
    os << "\tnode" << node << " -- node" << node + 1 << "\n";
  return text;
}

/// A synthetic profile of `numGradients` gradients in `format`.
static std::string makeProfile(ProfileFormat format, unsigned numGradients) {
  return format == ProfileFormat::Pipedream ? makePipedreamProfile(numGradients)
                                            : makeGradProfile(numGradients);
}

/// The format's name in the table.
static StringRef getFormatName(ProfileFormat format) {
  switch (format) {
  case ProfileFormat::GradProfile:
    return "grad-profile JSON";
  case ProfileFormat::GradProfileJsonValues:
    return "grad-profile JSON, llvm::json values";
  case ProfileFormat::Pipedream:
    break;
  }
  return "pipedream graph.txt";
}

/// The current time on the chosen clock, in milliseconds.
static double nowMs() {
  if (timeClock == Clock::Cpu)
    return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The median of `values` (not empty).
static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle]
                           : (values[middle - 1] + values[middle]) / 2.0;
}

/// Imports `profile` and returns the module, or null after printing why.
static OwningOpRef<ModuleOp> importProfile(ProfileFormat format,
                                           const std::string &profile,
                                           MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  bool json = format != ProfileFormat::Pipedream;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(
          profile, json ? "synthetic.json" : "synthetic.graph.txt",
          /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  if (!json)
    return importPipedream(sourceMgr, &context);
  GradProfileImportOptions options;
  options.jsonValuesOnly = format == ProfileFormat::GradProfileJsonValues;
  return importGradProfile(sourceMgr, &context, options);
}

/// One run of every stage on a fresh import; fails with a message.
static llvm::Expected<Sample>
measure(ProfileFormat format, const std::string &profile, SimulationMode mode,
        const ClusterModel &cluster, const DeviceModel &device) {
  MLIRContext context;
  if (!threads)
    context.disableMultithreading();
  context.loadDialect<CommDialect, func::FuncDialect>();
  Sample sample;

  double start = nowMs();
  OwningOpRef<ModuleOp> module = importProfile(format, profile, context);
  sample.importMs = nowMs() - start;
  if (!module)
    return llvm::createStringError("the synthetic profile did not import");
  func::FuncOp func = *module->getOps<func::FuncOp>().begin();

  start = nowMs();
  FailureOr<StepModel> model = buildStepModel(func, cluster, device);
  sample.buildMs = nowMs() - start;
  if (failed(model))
    return llvm::createStringError("buildStepModel failed");

  start = nowMs();
  llvm::Expected<StepTimeline> timeline =
      simulateStepModel(*model, cluster, mode);
  sample.simulateMs = nowMs() - start;
  if (!timeline)
    return timeline.takeError();

  CommEstimateOptions options;
  options.cluster = clusterName;
  options.device = deviceName;
  options.mode =
      mode == SimulationMode::Step ? EstimateMode::Step : EstimateMode::Steady;
  options.report = ReportFormat::None;
  PassManager pm(&context);
  pm.enableVerifier(false);
  pm.addPass(createCommEstimate(options));
  start = nowMs();
  LogicalResult result = pm.run(*module);
  sample.passMs = nowMs() - start;
  if (failed(result))
    return llvm::createStringError("comm-estimate failed");

  OptimizeOptions optimize;
  optimize.cluster = clusterName;
  optimize.device = deviceName;
  PassManager optimizePm(&context);
  optimizePm.enableVerifier(false);
  buildOptimizePipeline(optimizePm, optimize);
  start = nowMs();
  result = optimizePm.run(*module);
  sample.optimizeMs = nowMs() - start;
  if (failed(result))
    return llvm::createStringError("comm-optimize failed");
  return sample;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(benchCategory);
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "Times the import and estimate of synthetic gradient profiles\n");
  std::vector<unsigned> counts(gradientCounts.begin(), gradientCounts.end());
  if (counts.empty())
    counts = {10000, 100000};
  if (repetitions < 1) {
    llvm::errs() << "bench-estimate: --repetitions must be at least 1\n";
    return 1;
  }
  llvm::Expected<ClusterModel> cluster = ClusterModel::parse(clusterName);
  llvm::Expected<DeviceModel> device = DeviceModel::parse(deviceName);
  if (!cluster || !device) {
    llvm::logAllUnhandledErrors(cluster.takeError(), llvm::errs(),
                                "bench-estimate: ");
    llvm::logAllUnhandledErrors(device.takeError(), llvm::errs(),
                                "bench-estimate: ");
    return 1;
  }

  llvm::outs() << "Cluster " << cluster->name << ", device " << device->name
               << ", median of " << repetitions << " runs; "
               << (timeClock == Clock::Cpu ? "CPU" : "wall-clock")
               << " times in ms. \"import + estimate\" is the import "
                  "and the whole comm-estimate pass (report=none); "
                  "\"comm-optimize\" is the planning pipeline with its "
                  "defaults (cost fusion, overlap scheduling).\n\n"
               << "| format | gradients | profile (MB) | mode | import "
                  "| build step model | simulate | comm-estimate pass "
                  "| import + estimate | comm-optimize |\n"
               << "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|\n";
  // Medians of import, build, simulate, pass and their total, by format
  // and mode, for each gradient count.
  using Row = std::array<double, 6>;
  std::map<std::pair<ProfileFormat, SimulationMode>, std::vector<Row>> rows;
  const ProfileFormat formats[] = {ProfileFormat::GradProfile,
                                   ProfileFormat::GradProfileJsonValues,
                                   ProfileFormat::Pipedream};
  const SimulationMode modes[] = {SimulationMode::Step,
                                  SimulationMode::SteadyState};
  // One untimed run first: the first import of a process pays for loading
  // dialects and faulting in code.
  for (ProfileFormat format : formats)
    if (llvm::Error error = measure(format, makeProfile(format, 100),
                                    SimulationMode::Step, *cluster, *device)
                                .takeError()) {
      llvm::logAllUnhandledErrors(std::move(error), llvm::errs(),
                                  "bench-estimate: ");
      return 1;
    }
  for (ProfileFormat format : formats) {
    for (unsigned count : counts) {
      std::string profile = makeProfile(format, count);
      if (!writeProfiles.empty() &&
          format != ProfileFormat::GradProfileJsonValues) {
        std::string path =
            (writeProfiles + "/synthetic-" + llvm::Twine(count) +
             (format == ProfileFormat::Pipedream ? ".graph.txt" : ".json"))
                .str();
        std::error_code error;
        llvm::raw_fd_ostream file(path, error);
        if (error) {
          llvm::errs() << "bench-estimate: cannot write " << path << ": "
                       << error.message() << "\n";
          return 1;
        }
        file << profile;
      }
      for (SimulationMode mode : modes) {
        std::vector<double> imports, builds, simulations, passes, totals,
            optimizations;
        for (unsigned run = 0; run < repetitions; ++run) {
          llvm::Expected<Sample> sample =
              measure(format, profile, mode, *cluster, *device);
          if (!sample) {
            llvm::logAllUnhandledErrors(sample.takeError(), llvm::errs(),
                                        "bench-estimate: ");
            return 1;
          }
          imports.push_back(sample->importMs);
          builds.push_back(sample->buildMs);
          simulations.push_back(sample->simulateMs);
          passes.push_back(sample->passMs);
          totals.push_back(sample->importMs + sample->passMs);
          optimizations.push_back(sample->optimizeMs);
        }
        Row row = {median(imports), median(builds), median(simulations),
                   median(passes),  median(totals), median(optimizations)};
        rows[{format, mode}].push_back(row);
        llvm::outs() << "| " << getFormatName(format) << " | " << count
                     << llvm::format(" | %.1f | ", profile.size() / 1e6)
                     << stringifySimulationMode(mode);
        for (double value : row)
          llvm::outs() << llvm::format(" | %.1f", value);
        llvm::outs() << " |\n";
      }
    }
  }
  // The direct layer reader against llvm::json values, in this run.
  for (auto [index, count] : llvm::enumerate(counts)) {
    double direct =
        rows[{ProfileFormat::GradProfile, SimulationMode::Step}][index][0];
    double values = rows[{ProfileFormat::GradProfileJsonValues,
                          SimulationMode::Step}][index][0];
    llvm::outs() << llvm::format(
        "JSON import of %u gradients: %.2fx faster with the direct layer "
        "reader (%.1f ms against %.1f ms through llvm::json values)\n",
        count, values / direct, direct, values);
  }
  // Growth from the first size to the last: about the size ratio when the
  // work is linear.
  if (counts.size() < 2)
    return 0;
  for (ProfileFormat format : formats) {
    for (SimulationMode mode : modes) {
      const std::vector<Row> &measured = rows[{format, mode}];
      llvm::outs() << "| " << getFormatName(format) << " | " << counts.back()
                   << " / " << counts.front() << " | | "
                   << stringifySimulationMode(mode);
      for (size_t column = 0; column < measured.front().size(); ++column)
        llvm::outs() << llvm::format(" | %.1fx", measured.back()[column] /
                                                     measured.front()[column]);
      llvm::outs() << " |\n";
    }
  }
  return 0;
}
