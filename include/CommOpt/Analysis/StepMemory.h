//===- StepMemory.h - The tensors a training step holds at once ----------===//
//
// Estimates the memory a rank holds during a training step: the bytes of
// the step's tensors (its arguments, the gradients its compute produces,
// the parameters its all-gathers gather, the shards of its reduce-scatters)
// live at each point of the function's body, as bufferization would give
// them buffers, and the replicated parameters of the gradients it
// allreduces. Sharded plans are limited by it (comm-shard-data-parallel's
// memory-limit-mb) and comm-estimate reports its peak.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_STEPMEMORY_H
#define COMMOPT_ANALYSIS_STEPMEMORY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::comm {

/// The memory a step holds, per rank.
struct StepMemory {
  /// The most bytes live at once.
  double peakBytes = 0;
  /// The op before or at which the peak is reached; null for a step that
  /// holds nothing.
  Operation *peakOp = nullptr;
  /// The bytes of the function's arguments, held through the step (a
  /// sharded step's parameter shards).
  double argumentBytes = 0;
  /// The bytes of the parameters whose gradients are allreduced: a
  /// replicated step holds each whole, though its IR does not name them.
  double replicatedParameterBytes = 0;
};

/// The memory `func`'s body holds, by these rules:
/// - a statically shaped tensor or memref value is a buffer of its bytes,
///   live from the op that defines it to its last use in the body (a use in
///   a nested region counts at its ancestor op in the body); arguments are
///   live throughout, and returned values to the end;
/// - the results of collectives that reduce in place (comm.allreduce,
///   comm.fused_allreduce, comm.sparse_allreduce, the comm.wait of a
///   comm.start or comm.sparse_start) and of reshapes and casts share their
///   operand's buffer;
/// - a started collective's operands live until its comm.wait, and the
///   whole tensors or shard that a reduce-scatter's or all-gather's
///   comm.wait returns are allocated at its start;
/// - the gradients of allreduces (dense or sparse, blocking or started)
///   stand for parameters that every rank holds whole: their bytes count
///   throughout (replicatedParameterBytes);
/// - dynamically shaped values and activations that the IR does not name
///   are not counted.
StepMemory computeStepMemory(func::FuncOp func);

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_STEPMEMORY_H
