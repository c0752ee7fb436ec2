//===- Export.h - Exports of simulated training steps -----------*- C++ -*-===//
//
// Entry points of the exports, for programs that call them directly rather
// than through commopt-translate.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_TARGET_EXPORT_H
#define COMMDIALECT_TARGET_EXPORT_H

#include "CommDialect/Analysis/StepModel.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::comm {

/// What the timeline export simulates.
struct TimelineExportOptions {
  /// Cluster preset or description file (ClusterModel::parse).
  std::string cluster = "gradientflow-64";
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

} // namespace mlir::comm

#endif // COMMDIALECT_TARGET_EXPORT_H
