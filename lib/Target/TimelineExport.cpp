//===- TimelineExport.cpp - Simulated steps as Chrome trace JSON ----------===//
//
// Implements `--export-timeline`: simulates every function's step as
// comm-estimate does and writes the events in the Chrome trace event format
// (JSON Object Format: a "traceEvents" array of complete events, ph "X", with
// `ts` and `dur` in microseconds, and metadata events, ph "M", naming
// processes and threads), which Perfetto and chrome://tracing open. Each
// function is a process; its compute is thread 1 and communication channel
// `c` thread `c + 2`. Events are written one per line.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Export.h"

#include "CommOpt/Analysis/PlanningCluster.h"
#include "ExportNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::comm;

namespace {

/// One function with its simulated step.
struct SimulatedFunction {
  func::FuncOp func;
  StepModel model;
  StepTimeline timeline;
  /// The device's host, which bounds a collective run alone.
  HostCpu host;
};

/// Writes trace events one per line inside the "traceEvents" array.
class TraceWriter {
public:
  explicit TraceWriter(raw_ostream &os) : os(os) {}

  /// Writes one event object; `fields` writes its attributes.
  void event(llvm::function_ref<void(llvm::json::OStream &)> fields) {
    os << (first ? "\n" : ",\n");
    first = false;
    llvm::json::OStream json(os);
    json.object([&] { fields(json); });
  }

  /// A complete event ("ph": "X") of category `category` that starts at
  /// `startUs` and lasts `durationUs`, on thread `tid` of process `pid`;
  /// `args` writes its arguments.
  void span(StringRef name, StringRef category, double startUs,
            double durationUs, int64_t pid, int64_t tid,
            llvm::function_ref<void(llvm::json::OStream &)> args) {
    event([&](llvm::json::OStream &json) {
      json.attribute("name", name);
      json.attribute("cat", category);
      json.attribute("ph", "X");
      json.attribute("ts", startUs);
      json.attribute("dur", durationUs);
      json.attribute("pid", pid);
      json.attribute("tid", tid);
      json.attributeObject("args", [&] { args(json); });
    });
  }

  /// A metadata event `name` with `args = {key: value}`.
  void metadata(StringRef name, int64_t pid, std::optional<int64_t> tid,
                StringRef key, const llvm::json::Value &value) {
    event([&](llvm::json::OStream &json) {
      json.attribute("name", name);
      json.attribute("ph", "M");
      json.attribute("pid", pid);
      if (tid)
        json.attribute("tid", *tid);
      json.attributeObject("args", [&] { json.attribute(key, value); });
    });
  }

private:
  raw_ostream &os;
  bool first = true;
};

} // namespace

/// The thread of compute events.
static constexpr int64_t kComputeTid = 1;

/// The thread of communication channel `channel`.
static int64_t getChannelTid(unsigned channel) {
  return kComputeTid + 1 + static_cast<int64_t>(channel);
}

static StringRef stringifyTaskPhase(TaskPhase phase) {
  switch (phase) {
  case TaskPhase::Forward:
    return "forward";
  case TaskPhase::Backward:
    return "backward";
  case TaskPhase::Other:
    return "other";
  }
  llvm_unreachable("unknown task phase");
}

/// Writes the process and thread names of function `pid` and its events.
static void writeFunction(TraceWriter &writer, int64_t pid,
                          const SimulatedFunction &simulated,
                          StringRef modelName, const ClusterModel &cluster) {
  const StepModel &model = simulated.model;
  const StepTimeline &timeline = simulated.timeline;
  bool steady = timeline.mode == SimulationMode::SteadyState;

  func::FuncOp func = simulated.func;
  std::string processName = "@" + func.getSymName().str();
  if (!modelName.empty())
    processName = modelName.str() + " " + processName;
  writer.metadata("process_name", pid, std::nullopt, "name", processName);
  writer.metadata("thread_name", pid, kComputeTid, "name", "compute");
  writer.metadata("thread_sort_index", pid, kComputeTid, "sort_index",
                  kComputeTid);
  for (unsigned channel = 0; channel < cluster.channels; ++channel) {
    int64_t tid = getChannelTid(channel);
    writer.metadata("thread_name", pid, tid, "name",
                    "channel " + std::to_string(channel));
    writer.metadata("thread_sort_index", pid, tid, "sort_index", tid);
  }

  auto iterationOf = [&](unsigned iteration) {
    return static_cast<int64_t>(iteration - timeline.firstIteration);
  };
  for (const ComputeEvent &event : timeline.getShownComputeEvents()) {
    const ComputeTask &task = model.step.computeTasks[event.task];
    writer.span(task.label, "compute", event.startUs - timeline.originUs,
                event.endUs - event.startUs, pid, kComputeTid,
                [&](llvm::json::OStream &json) {
                  json.attribute(
                      "op",
                      model.computeOps[event.task]->getName().getStringRef());
                  json.attribute("phase", stringifyTaskPhase(task.phase));
                  if (task.layer >= 0)
                    json.attribute("layer", task.layer);
                  if (steady)
                    json.attribute("iteration", iterationOf(event.iteration));
                });
  }
  for (const CollectiveEvent &event : timeline.getShownCollectiveEvents()) {
    const CollectiveTask &task = model.step.collectives[event.collective];
    writer.span(
        task.label, "communication", event.startUs - timeline.originUs,
        event.endUs - event.startUs, pid, getChannelTid(event.channel),
        [&](llvm::json::OStream &json) {
          json.attribute(
              "op",
              model.collectiveOps[event.collective]->getName().getStringRef());
          // Its place in issue order, as the plan and its measured timeline
          // number it.
          json.attribute("collective", static_cast<int64_t>(event.collective));
          json.attribute("bytes", model.collectiveBytes[event.collective]);
          json.attribute("local_us", model.collectiveLocalUs[event.collective]);
          json.attribute("sent_bytes", task.cost.sentBytes);
          if (task.cost.gatheredBytes > 0)
            json.attribute("gathered_bytes", task.cost.gatheredBytes);
          if (task.cost.gatheredCollectives > 0)
            json.attribute("gathered_collectives",
                           task.cost.gatheredCollectives);
          if (simulated.host.isDescribed())
            json.attribute("alone_host_bound_us",
                           getAloneHostBoundUs(model, timeline, simulated.host,
                                               event.collective));
          json.attributeArray("members", [&] {
            for (const std::string &member :
                 model.collectiveMembers[event.collective])
              json.value(member);
          });
          json.attribute("issue_us", event.issueUs - timeline.originUs);
          json.attribute("exposed_us",
                         timeline.getComputeIdleUs(event.startUs, event.endUs));
          if (task.priority)
            json.attribute("priority", *task.priority);
          if (steady)
            json.attribute("iteration", iterationOf(event.iteration));
        });
  }
}

LogicalResult mlir::comm::exportTimeline(ModuleOp module, raw_ostream &os,
                                         const TimelineExportOptions &options) {
  PlanningCluster target =
      resolvePlanningCluster(module, options.cluster, "export-timeline");
  if (target.source == ClusterSource::Default)
    emitRemark(module.getLoc())
        << "export-timeline: the module records no cluster; simulating on "
        << target.spec << " (set --timeline-cluster for yours)";
  llvm::Expected<ClusterModel> cluster = ClusterModel::parse(target.spec);
  if (!cluster)
    return emitError(module.getLoc())
           << "export-timeline: option --timeline-cluster: "
           << llvm::toString(cluster.takeError());
  llvm::Expected<DeviceModel> device = DeviceModel::parse(options.device);
  if (!device)
    return emitError(module.getLoc())
           << "export-timeline: option --timeline-device: "
           << llvm::toString(device.takeError());

  // Simulate everything first, so that nothing is written on an error.
  std::vector<SimulatedFunction> functions;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (failed(detail::checkExportedName(func, "export-timeline",
                                         "function name", func.getSymName())))
      return failure();
    FailureOr<StepModel> model = buildStepModel(func, *cluster, *device);
    if (failed(model))
      return failure();
    llvm::Expected<StepTimeline> timeline =
        simulateStepModel(*model, *cluster, options.mode);
    if (!timeline)
      return emitError(func.getLoc())
             << "export-timeline: cannot simulate @" << func.getSymName()
             << ": " << llvm::toString(timeline.takeError());
    functions.push_back(
        {func, std::move(*model), std::move(*timeline), device->hostCpu});
  }

  std::string modelName = getModelName(module);
  if (failed(detail::checkExportedName(module, "export-timeline",
                                       "the model name", modelName)))
    return failure();
  os << "{\"displayTimeUnit\": \"ms\",\n\"otherData\": ";
  {
    llvm::json::OStream json(os);
    json.object([&] {
      json.attribute("generator", "commopt-translate --export-timeline");
      json.attribute("model", modelName);
      json.attribute("cluster",
                     cluster->name.empty() ? target.spec : cluster->name);
      json.attribute("cluster_source", stringifyClusterSource(target.source));
      json.attribute("device",
                     device->name.empty() ? options.device : device->name);
      json.attribute("mode", stringifySimulationMode(options.mode));
      // Each function's step, and where the host's CPU bounds it (the
      // events end earlier then): by process name.
      json.attributeObject("steps", [&] {
        for (const SimulatedFunction &simulated : functions)
          json.attributeObject(
              "@" + func::FuncOp(simulated.func).getSymName().str(), [&] {
                json.attribute("step_us", simulated.timeline.result.stepUs);
                json.attribute("simulated_step_us",
                               simulated.timeline.simulatedStepUs);
                json.attribute("cpu_us", simulated.model.cpuUs);
                json.attribute("cpu_bound_us", simulated.model.cpuBoundUs);
                json.attribute("network_idle_us",
                               simulated.timeline.networkIdleUs);
                json.attribute("host_bound_us", simulated.timeline.hostBoundUs);
              });
      });
    });
  }
  os << ",\n\"traceEvents\": [";
  TraceWriter writer(os);
  for (auto [index, simulated] : llvm::enumerate(functions))
    writeFunction(writer, static_cast<int64_t>(index) + 1, simulated, modelName,
                  *cluster);
  os << "\n]}\n";
  return success();
}
