//===- Estimate.cpp - Simulate training steps and report them -------------===//
//
// Implements `comm-estimate`: reads every function's step with
// buildStepModel, simulates it on a cluster (one step or the steady state),
// attaches the step's figures and each collective's start and end to the IR,
// and prints a text or JSON report.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepMemory.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <numeric>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMESTIMATE
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// One collective as the report shows it, times from the start of the
/// (first measured) step.
struct CollectiveRow {
  size_t index = 0;
  std::string name;
  /// The parameters whose gradients it reduces.
  SmallVector<std::string, 1> members;
  StringRef opName;
  double bytes = 0;
  unsigned channel = 0;
  std::optional<int64_t> priority;
  /// Whether compute stalls from its issue to its end (no comm.start/wait).
  bool blocking = false;
  double issueUs = 0;
  double startUs = 0;
  double endUs = 0;
  /// The part of the collective during which no compute runs.
  double exposedUs = 0;

  double durationUs() const { return endUs - startUs; }
};

/// The estimate of one function, as the report shows it.
struct FunctionEstimate {
  std::string model;
  std::string function;
  double stepUs = 0;
  double computeUs = 0;
  double communicationUs = 0;
  double exposedUs = 0;
  /// The host CPU a rank needs in a step and the step it bounds
  /// (StepModel::cpuUs, cpuBoundUs); 0 without a described host.
  double cpuUs = 0;
  double cpuBoundUs = 0;
  /// The time the host's cores idle while every rank waits on the network,
  /// and the step the host allows (StepTimeline::networkIdleUs,
  /// hostBoundUs).
  double networkIdleUs = 0;
  double hostBoundUs = 0;
  /// The most bytes the step holds at once per rank (computeStepMemory).
  double peakMemoryBytes = 0;
  /// A sharded plan's choice (comm-shard-data-parallel), for the report;
  /// empty otherwise.
  std::string shardPlan;
  /// Collectives in program order.
  std::vector<CollectiveRow> collectives;

  /// Exposed communication as a fraction of the step (0 for an empty step).
  double exposedFraction() const {
    return stepUs > 0 ? exposedUs / stepUs : 0.0;
  }
};

} // namespace

/// "<model> @<function>", or "@<function>" without a model name.
static std::string getTitle(const FunctionEstimate &estimate) {
  std::string title = "@" + estimate.function;
  return estimate.model.empty() ? title : estimate.model + " " + title;
}

/// Attaches the figures of `timeline` to `func` and its collectives, with
/// the cluster they were simulated on (`clusterName`, `ranks` ranks), which
/// the plan export records.
static void attachEstimate(func::FuncOp func, const StepModel &model,
                           const StepTimeline &timeline, StringRef clusterName,
                           int64_t ranks, const StepMemory &memory) {
  Builder builder(func.getContext());
  const TimelineResult &result = timeline.result;
  func->setAttr(
      "comm.estimate",
      builder.getDictionaryAttr({
          builder.getNamedAttr("step_us",
                               builder.getF64FloatAttr(result.stepUs)),
          builder.getNamedAttr("compute_us",
                               builder.getF64FloatAttr(result.computeUs)),
          builder.getNamedAttr("communication_us",
                               builder.getF64FloatAttr(result.communicationUs)),
          builder.getNamedAttr(
              "exposed_us",
              builder.getF64FloatAttr(result.exposedCommunicationUs)),
          builder.getNamedAttr(
              "mode",
              builder.getStringAttr(stringifySimulationMode(timeline.mode))),
          builder.getNamedAttr("cluster", builder.getStringAttr(clusterName)),
          builder.getNamedAttr("ranks", builder.getI64IntegerAttr(ranks)),
          builder.getNamedAttr("peak_memory_bytes",
                               builder.getF64FloatAttr(memory.peakBytes)),
      }));
  // Where the device describes its host: the CPU a rank needs in a step,
  // and the step that bounds.
  if (model.cpuUs > 0) {
    NamedAttrList estimate(
        func->getAttrOfType<DictionaryAttr>("comm.estimate"));
    estimate.set("cpu_us", builder.getF64FloatAttr(model.cpuUs));
    estimate.set("cpu_bound_us", builder.getF64FloatAttr(model.cpuBoundUs));
    estimate.set("network_idle_us",
                 builder.getF64FloatAttr(timeline.networkIdleUs));
    estimate.set("host_bound_us",
                 builder.getF64FloatAttr(timeline.hostBoundUs));
    func->setAttr("comm.estimate", estimate.getDictionary(func.getContext()));
  }
  // One new attribute dictionary per op: steps have up to 10^5 collectives.
  StringAttr startName = builder.getStringAttr("comm.start_us");
  StringAttr endName = builder.getStringAttr("comm.end_us");
  for (auto [index, op] : llvm::enumerate(model.collectiveOps)) {
    const CollectiveEvent &event = timeline.getFirstShownEvent(index);
    NamedAttrList attributes(op->getDiscardableAttrDictionary());
    attributes.set(startName,
                   builder.getF64FloatAttr(event.startUs - timeline.originUs));
    attributes.set(endName,
                   builder.getF64FloatAttr(event.endUs - timeline.originUs));
    op->setDiscardableAttrs(attributes.getDictionary(builder.getContext()));
  }
}

/// The report's view of one simulated function.
static FunctionEstimate summarize(StringRef modelName, func::FuncOp func,
                                  const StepModel &model,
                                  const StepTimeline &timeline,
                                  const StepMemory &memory) {
  FunctionEstimate estimate;
  estimate.peakMemoryBytes = memory.peakBytes;
  if (auto plan = func->getAttrOfType<DictionaryAttr>(kShardPlanAttrName)) {
    auto integer = [&](StringRef name) {
      auto attr = plan.getAs<IntegerAttr>(name);
      return attr ? attr.getInt() : 0;
    };
    auto real = [&](StringRef name) {
      auto attr = plan.getAs<FloatAttr>(name);
      return attr ? attr.getValueAsDouble() : 0.0;
    };
    auto stage = plan.getAs<StringAttr>("stage");
    llvm::raw_string_ostream os(estimate.shardPlan);
    os << (stage && stage.getValue() == "grad" ? "grad (ZeRO-2)"
                                               : "full (ZeRO-3, FSDP)")
       << ", " << integer("shards") << " shards; " << integer("units")
       << " units of up to " << llvm::format("%g", real("unit_cap_mb"))
       << " MiB, prefetch " << integer("prefetch") << ", the fastest of "
       << integer("plans") << " plans";
    if (real("memory_limit_mb") > 0)
      os << " within " << llvm::format("%g", real("memory_limit_mb")) << " MiB";
  }
  estimate.model = modelName.str();
  estimate.function = func.getSymName().str();
  const TimelineResult &result = timeline.result;
  estimate.stepUs = result.stepUs;
  estimate.computeUs = result.computeUs;
  estimate.communicationUs = result.communicationUs;
  estimate.exposedUs = result.exposedCommunicationUs;
  estimate.cpuUs = model.cpuUs;
  estimate.cpuBoundUs = model.cpuBoundUs;
  estimate.networkIdleUs = timeline.networkIdleUs;
  estimate.hostBoundUs = timeline.hostBoundUs;
  estimate.collectives.reserve(model.collectiveOps.size());
  for (auto [index, op] : llvm::enumerate(model.collectiveOps)) {
    const CollectiveTask &task = model.step.collectives[index];
    const CollectiveEvent &event = timeline.getFirstShownEvent(index);
    CollectiveRow row;
    row.index = index;
    row.name = task.label;
    row.members = model.collectiveMembers[index];
    row.opName = op->getName().getStringRef();
    row.bytes = model.collectiveBytes[index];
    row.channel = task.channel;
    row.priority = task.priority;
    row.blocking = task.blocking;
    row.issueUs = event.issueUs - timeline.originUs;
    row.startUs = event.startUs - timeline.originUs;
    row.endUs = event.endUs - timeline.originUs;
    row.exposedUs = timeline.getComputeIdleUs(event.startUs, event.endUs);
    estimate.collectives.push_back(std::move(row));
  }
  return estimate;
}

/// The indices of the `count` collectives that compute hides least: most
/// exposed first, then longest, then in program order.
static std::vector<size_t> getMostExposed(const FunctionEstimate &estimate,
                                          size_t count) {
  const std::vector<CollectiveRow> &rows = estimate.collectives;
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  count = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + count, order.end(),
                    [&](size_t lhs, size_t rhs) {
                      const CollectiveRow &a = rows[lhs], &b = rows[rhs];
                      if (a.exposedUs != b.exposedUs)
                        return a.exposedUs > b.exposedUs;
                      if (a.durationUs() != b.durationUs())
                        return a.durationUs() > b.durationUs();
                      return lhs < rhs;
                    });
  order.resize(count);
  return order;
}

namespace {

struct CommEstimatePass : public WithCheckedOptions<
                              comm::impl::CommEstimateBase<CommEstimatePass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    auto optionError = [&](StringRef option) {
      return emitError(UnknownLoc::get(context))
             << "comm-estimate: option '" << option << "': ";
    };
    llvm::Expected<DeviceModel> loadedDevice = DeviceModel::parse(device);
    if (!loadedDevice)
      return optionError("device") << llvm::toString(loadedDevice.takeError());
    deviceModel = std::move(*loadedDevice);

    // The option's parser rejects none; it comes only from C++.
    if (mode == EstimateMode::None)
      return optionError("mode") << "none is not a simulation; leave the "
                                    "pass out";
    simulationMode = mode == EstimateMode::Step ? SimulationMode::Step
                                                : SimulationMode::SteadyState;
    reportFormat = report;
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    planningCluster = resolvePlanningCluster(module, cluster, "comm-estimate");
    llvm::Expected<std::shared_ptr<const ClusterModel>> loadedCluster =
        loadSharedCluster(planningCluster.spec);
    if (!loadedCluster) {
      module.emitError() << "comm-estimate: option 'cluster': "
                         << llvm::toString(loadedCluster.takeError());
      return signalPassFailure();
    }
    clusterModel = std::move(*loadedCluster);
    std::string modelName = getModelName(module);
    std::vector<FunctionEstimate> estimates;
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      FailureOr<StepModel> model =
          buildStepModel(func, *clusterModel, *deviceModel);
      if (failed(model))
        return signalPassFailure();
      llvm::Expected<StepTimeline> timeline =
          simulateStepModel(*model, *clusterModel, simulationMode, steadyState);
      if (!timeline) {
        func.emitError() << "comm-estimate: cannot simulate @"
                         << func.getSymName() << ": "
                         << llvm::toString(timeline.takeError());
        return signalPassFailure();
      }
      StepMemory memory = computeStepMemory(func);
      attachEstimate(func, *model, *timeline, getClusterName(),
                     clusterModel->ranks, memory);
      if (reportFormat != ReportFormat::None)
        estimates.push_back(
            summarize(modelName, func, *model, *timeline, memory));
    }
    if (failed(writeReport(estimates)))
      signalPassFailure();
  }

private:
  /// Writes the report in the chosen format to stderr or `report-file`.
  LogicalResult writeReport(ArrayRef<FunctionEstimate> estimates) {
    if (reportFormat == ReportFormat::None)
      return success();
    if (reportFile == "-") {
      printReport(estimates, llvm::errs());
      return success();
    }
    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(reportFile, &errorMessage);
    if (!file)
      return emitError(getOperation().getLoc())
             << "comm-estimate: option 'report-file': " << errorMessage;
    printReport(estimates, file->os());
    file->keep();
    // A write that failed (a full disk) is reported here, not as a fatal
    // error when the stream is destroyed.
    file->os().close();
    if (std::error_code error = file->os().error()) {
      file->os().clear_error();
      return emitError(getOperation().getLoc())
             << "comm-estimate: option 'report-file': cannot write '"
             << reportFile << "': " << error.message();
    }
    return success();
  }

  /// Writes the report of every function to `os`.
  void printReport(ArrayRef<FunctionEstimate> estimates, raw_ostream &os) {
    if (reportFormat == ReportFormat::Json) {
      printJsonReport(estimates, os);
      return;
    }
    for (const FunctionEstimate &estimate : estimates)
      printTextReport(estimate, os);
    printTextPlanSearch(os);
  }

  /// The plans comm-optimize compared (kPlanSearchAttrName), if it did.
  SmallVector<DictionaryAttr> getPlanSearch() {
    SmallVector<DictionaryAttr> entries;
    if (auto search =
            getOperation()->getAttrOfType<ArrayAttr>(kPlanSearchAttrName))
      for (Attribute entry : search)
        if (auto fields = dyn_cast<DictionaryAttr>(entry))
          entries.push_back(fields);
    return entries;
  }

  /// Writes what comm-optimize compared: each option set's simulated time
  /// (all functions together) and which plan it kept.
  void printTextPlanSearch(raw_ostream &os) {
    SmallVector<DictionaryAttr> entries = getPlanSearch();
    if (entries.empty())
      return;
    auto anyLabel = [&](StringRef part) {
      return llvm::any_of(entries, [&](DictionaryAttr entry) {
        auto label = entry.getAs<StringAttr>("options");
        return label && label.getValue().contains(part);
      });
    };
    // The search's sparse refinement labels its trials "..., dense: NAMES",
    // and its channel counts "channels=N".
    bool refined = anyLabel(", dense: ");
    bool channels = anyLabel("channels=");
    os << "comm-optimize: " << entries.size()
       << " plans compared, each option turned on and off"
       << (channels ? " on each channel count" : "")
       << (refined ? ", then each sparse gradient tried dense" : "")
       << " (simulated "
       << (simulationMode == SimulationMode::SteadyState ? "iteration" : "step")
       << " of every function):\n";
    size_t width = 0;
    for (DictionaryAttr entry : entries)
      if (auto label = entry.getAs<StringAttr>("options"))
        width = std::max<size_t>(width, label.size());
    for (DictionaryAttr entry : entries) {
      auto label = entry.getAs<StringAttr>("options");
      os << "  " << llvm::left_justify(label ? label.getValue() : "", width);
      if (auto stepUs = entry.getAs<FloatAttr>("step_us"))
        os << llvm::format(" %14.3f us", stepUs.getValueAsDouble());
      else if (auto failure = entry.getAs<StringAttr>("failure"))
        os << "  failed: " << failure.getValue();
      if (entry.get("chosen"))
        os << "  <- chosen";
      if (auto declined = entry.getAs<StringAttr>("declined"))
        os << "  <- declined: " << declined.getValue();
      os << "\n";
    }
  }

  /// The cluster's preset or file name: the name the description gives
  /// itself, else the option or record naming it.
  StringRef getClusterName() const {
    return clusterModel->name.empty() ? StringRef(planningCluster.spec)
                                      : StringRef(clusterModel->name);
  }

  /// The cluster in one line: its name and the figures that shape the
  /// timeline.
  std::string describeCluster() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << getClusterName() << " (" << clusterModel->ranks << " ranks, "
       << clusterModel->ranksPerNode << " per node, "
       << stringifyAllreduceAlgorithm(clusterModel->algorithm) << " allreduce, "
       << clusterModel->channels << " "
       << stringifyChannelSharing(clusterModel->sharing) << " channel"
       << (clusterModel->channels == 1 ? "" : "s");
    if (clusterModel->alternate)
      os << ", " << stringifyCollectiveBackend(clusterModel->backend) << " and "
         << stringifyCollectiveBackend(clusterModel->alternate->backend)
         << " transports";
    os << ")";
    if (StringRef source = planningCluster.describeSource(); !source.empty())
      os << "; " << source;
    return text;
  }

  /// Writes one function's summary and its most exposed collectives.
  void printTextReport(const FunctionEstimate &estimate, raw_ostream &os) {
    bool steady = simulationMode == SimulationMode::SteadyState;
    StringRef period = steady ? "iteration" : "step";
    auto line = [&](StringRef label) -> raw_ostream & {
      return os << "  " << llvm::left_justify(label, 15);
    };
    auto time = [&](double us) { return llvm::format("%14.3f us", us); };

    os << "comm-estimate: " << getTitle(estimate) << "\n";
    line("cluster") << describeCluster() << "\n";
    line("device") << (deviceModel->name.empty() ? device : deviceModel->name)
                   << "\n";
    line("mode") << stringifySimulationMode(simulationMode);
    if (steady)
      os << " (mean of " << steadyState.measuredIterations
         << " iterations after " << steadyState.warmupIterations << " warm-up)";
    os << "\n";
    line(period) << time(estimate.stepUs) << "\n";
    line("compute") << time(estimate.computeUs) << "\n";
    line("communication") << time(estimate.communicationUs) << "\n";
    line("exposed") << time(estimate.exposedUs)
                    << llvm::format("  (%.1f%% of the ",
                                    100.0 * estimate.exposedFraction())
                    << period << ")\n";
    line("memory") << llvm::format("%14.3f MiB",
                                   estimate.peakMemoryBytes / kBytesPerMiB)
                   << " at most a rank (parameters, gradients, shards)\n";
    if (!estimate.shardPlan.empty())
      line("sharded") << estimate.shardPlan << "\n";
    if (estimate.cpuUs > 0) {
      const HostCpu &host = deviceModel->hostCpu;
      line("host CPU") << time(estimate.cpuUs) << " a rank; "
                       << llvm::format("%g", host.ranks) << " ranks on "
                       << llvm::format("%g", host.cores) << " cores bound the "
                       << period << " at "
                       << llvm::format("%.3f us", estimate.hostBoundUs)
                       << llvm::format(" (%.3f us of it idle on the network)",
                                       estimate.networkIdleUs)
                       << (estimate.hostBoundUs >= estimate.stepUs
                               ? ", which sets it"
                               : "")
                       << "\n";
    }

    std::vector<size_t> rows = getMostExposed(estimate, top);
    line("collectives") << estimate.collectives.size();
    if (rows.empty()) {
      os << "\n";
      return;
    }
    os << "; the " << rows.size() << " most exposed:\n";
    constexpr size_t kMaxNameWidth = 60;
    size_t nameWidth = 4;
    for (size_t row : rows)
      nameWidth = std::max(nameWidth, estimate.collectives[row].name.size());
    nameWidth = std::min(nameWidth, kMaxNameWidth);
    os << "    " << llvm::left_justify("name", nameWidth)
       << "           bytes  channel      start (us)        end (us)"
          "    exposed (us)\n";
    for (size_t index : rows) {
      const CollectiveRow &row = estimate.collectives[index];
      std::string name = row.name;
      if (name.size() > nameWidth)
        name = name.substr(0, nameWidth - 3) + "...";
      os << "    " << llvm::left_justify(name, nameWidth)
         << llvm::format(" %15.0f  %7u %15.3f %15.3f %15.3f\n", row.bytes,
                         row.channel, row.startUs, row.endUs, row.exposedUs);
    }
  }

  /// Writes the JSON document: the models, the mode and every function with
  /// every collective (format in docs/Estimate.md).
  void printJsonReport(ArrayRef<FunctionEstimate> estimates, raw_ostream &os) {
    llvm::json::OStream json(os, /*IndentSize=*/2);
    json.object([&] {
      json.attribute("format", "commopt-estimate");
      json.attribute("version", 1);
      json.attribute("cluster", clusterModel->toJSON());
      json.attribute("cluster_source",
                     stringifyClusterSource(planningCluster.source));
      json.attribute("device", deviceModel->toJSON());
      json.attribute("mode", stringifySimulationMode(simulationMode));
      if (simulationMode == SimulationMode::SteadyState) {
        json.attribute("warmup_iterations", steadyState.warmupIterations);
        json.attribute("measured_iterations", steadyState.measuredIterations);
      }
      json.attributeArray("functions", [&] {
        for (const FunctionEstimate &estimate : estimates)
          printJsonFunction(estimate, json);
      });
      if (SmallVector<DictionaryAttr> entries = getPlanSearch();
          !entries.empty())
        json.attributeArray("plan_search", [&] {
          for (DictionaryAttr entry : entries)
            json.object([&] {
              if (auto label = entry.getAs<StringAttr>("options"))
                json.attribute("options", label.getValue());
              if (auto stepUs = entry.getAs<FloatAttr>("step_us"))
                json.attribute("step_us", stepUs.getValueAsDouble());
              if (auto failure = entry.getAs<StringAttr>("failure"))
                json.attribute("failure", failure.getValue());
              if (auto lossy = entry.getAs<ArrayAttr>("lossy"))
                json.attributeArray("lossy", [&] {
                  for (auto kind : lossy.getAsValueRange<StringAttr>())
                    json.value(kind);
                });
              json.attribute("chosen", static_cast<bool>(entry.get("chosen")));
              if (auto declined = entry.getAs<StringAttr>("declined"))
                json.attribute("declined", declined.getValue());
            });
        });
    });
    os << "\n";
  }

  /// Writes one function's entry of the JSON document.
  static void printJsonFunction(const FunctionEstimate &estimate,
                                llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("model", estimate.model);
      json.attribute("function", estimate.function);
      json.attribute("step_us", estimate.stepUs);
      json.attribute("compute_us", estimate.computeUs);
      json.attribute("communication_us", estimate.communicationUs);
      json.attribute("exposed_us", estimate.exposedUs);
      json.attribute("exposed_fraction", estimate.exposedFraction());
      json.attribute("peak_memory_bytes", estimate.peakMemoryBytes);
      if (estimate.cpuUs > 0) {
        json.attribute("cpu_us", estimate.cpuUs);
        json.attribute("cpu_bound_us", estimate.cpuBoundUs);
        json.attribute("network_idle_us", estimate.networkIdleUs);
        json.attribute("host_bound_us", estimate.hostBoundUs);
      }
      json.attributeArray("collectives", [&] {
        for (const CollectiveRow &row : estimate.collectives)
          json.object([&] {
            json.attribute("index", static_cast<int64_t>(row.index));
            json.attribute("name", row.name);
            json.attributeArray("members", [&] {
              for (const std::string &member : row.members)
                json.value(member);
            });
            json.attribute("op", row.opName);
            json.attribute("bytes", row.bytes);
            json.attribute("channel", static_cast<int64_t>(row.channel));
            if (row.priority)
              json.attribute("priority", *row.priority);
            json.attribute("blocking", row.blocking);
            json.attribute("issue_us", row.issueUs);
            json.attribute("start_us", row.startUs);
            json.attribute("end_us", row.endUs);
            json.attribute("duration_us", row.durationUs());
            json.attribute("exposed_us", row.exposedUs);
          });
      });
    });
  }

  /// The cluster simulated on, and where its name came from.
  PlanningCluster planningCluster;
  std::shared_ptr<const ClusterModel> clusterModel;
  std::optional<DeviceModel> deviceModel;
  SimulationMode simulationMode = SimulationMode::Step;
  /// Iterations of a steady-state simulation: the simulator's defaults.
  SteadyStateOptions steadyState;
  ReportFormat reportFormat = ReportFormat::Text;
};

} // namespace
