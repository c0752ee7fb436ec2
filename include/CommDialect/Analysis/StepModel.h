//===- StepModel.h - A function's training step, for the simulator --------===//
//
// Reads a training step from a func.func: its compute (comm.compute costs,
// `comm.cost_us` attributes, roofline estimates of tensor ops) and its
// collectives (blocking, or split into comm.start/comm.wait), as the
// timeline simulator's StepDescription, and remembers which op each task
// came from so that results can be attached back to the IR.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_ANALYSIS_STEPMODEL_H
#define COMMDIALECT_ANALYSIS_STEPMODEL_H

#include "CommDialect/Analysis/ClusterModel.h"
#include "CommDialect/Analysis/DeviceModel.h"
#include "CommDialect/Analysis/TimelineSimulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::comm {

/// A function's step as the simulator sees it.
struct StepModel {
  StepDescription step;
  /// The op each compute task stands for, by task index.
  SmallVector<Operation *> computeOps;
  /// The collective op (comm.allreduce, comm.fused_allreduce or
  /// comm.start) each collective task stands for, by task index.
  SmallVector<Operation *> collectiveOps;
  /// Bytes each collective puts on the wire (wire precision applied).
  SmallVector<double> collectiveBytes;
  /// Whether the step has per-layer forward tasks, which steady-state
  /// simulation needs to let a layer's forward wait on its gradients only.
  bool hasLayeredForward = false;
};

/// The compute cost in microseconds of `op` on `device`: its `cost_us` when
/// it is a comm.compute or carries a `comm.cost_us` attribute; otherwise a
/// roofline estimate for tensor ops of the linalg, arith and math dialects;
/// otherwise zero.
double estimateComputeUs(Operation *op, const DeviceModel &device);

/// The bytes a collective over `types` moves per rank, with `wire` (if not
/// null) replacing the element type on the wire. Dynamic shapes count as
/// zero-sized.
double getCollectiveBytes(TypeRange types, Type wire);

/// Builds the step of `func`'s body: ops in program order; compute of ops
/// with regions is the sum of their nested ops' costs. Collective costs come
/// from `cluster`. Fails, with a diagnostic on the op, on a comm.start whose
/// comm.wait lies in another block.
FailureOr<StepModel> buildStepModel(func::FuncOp func,
                                    const ClusterModel &cluster,
                                    const DeviceModel &device);

} // namespace mlir::comm

#endif // COMMDIALECT_ANALYSIS_STEPMODEL_H
