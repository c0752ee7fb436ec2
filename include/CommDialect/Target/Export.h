//===- Export.h - Exports of simulated training steps -----------*- C++ -*-===//
//
// Entry points of the exports (timeline and plan), for programs that call them
// directly rather than through commopt-translate.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_TARGET_EXPORT_H
#define COMMDIALECT_TARGET_EXPORT_H

#include "CommOpt/Analysis/StepModel.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::comm {

/// What the timeline export simulates.
struct TimelineExportOptions {
  /// Cluster preset or description file (ClusterModel::parse); empty: the
  /// cluster recorded on the module, else the default preset.
  std::string cluster;
  /// Device preset or description file (DeviceModel::parse).
  std::string device = "v100";
  /// One step, or the measured iterations of the steady state.
  SimulationMode mode = SimulationMode::Step;
};

/// Simulates every function with a body in `module` as comm-estimate does
/// and writes the timeline as Chrome trace event JSON (the "JSON Object
/// Format" that Perfetto and chrome://tracing open): one process per
/// function, one thread (track) for its compute and one per communication
/// channel; every task and collective of the shown iterations is a complete
/// ("X") event with its start and duration in microseconds. Emits an error
/// on the module or the offending op, and writes nothing, when the models
/// cannot be loaded or a step cannot be simulated.
LogicalResult exportTimeline(ModuleOp module, llvm::raw_ostream &os,
                             const TimelineExportOptions &options);

/// The version of the JSON plan format that exportPlan writes
/// (docs/Plan.md).
inline constexpr int64_t kPlanFormatVersion = 1;

/// What the plan export writes.
struct PlanExportOptions {
  /// The step function; empty: the one function that holds collectives.
  std::string function;
};

/// Writes the planned step of `module` as a JSON plan (docs/Plan.md): its
/// collectives in issue order with the parameters (and element ranges of
/// partitioned gradients) they carry, reduction, wire type, prescale,
/// channel, priority and sparse settings, and the cluster and estimate that
/// comm-estimate attached. Emits an error naming the op or parameter, and
/// writes nothing, when the step has no recorded estimate, a gradient has
/// no parameter name or a dynamic shape, or a parameter is not communicated
/// exactly once.
LogicalResult exportPlan(ModuleOp module, llvm::raw_ostream &os,
                         const PlanExportOptions &options);

} // namespace mlir::comm

#endif // COMMDIALECT_TARGET_EXPORT_H
