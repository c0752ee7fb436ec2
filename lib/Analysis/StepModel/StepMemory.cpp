//===- StepMemory.cpp - The tensors a training step holds at once --------===//

#include "CommOpt/Analysis/StepMemory.h"

#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::comm;

/// The bytes of a statically shaped tensor or memref of integers or floats
/// (an index as 8 bytes), else 0.
static double getBufferBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !isa<TensorType, BaseMemRefType>(shaped) ||
      !shaped.hasStaticShape())
    return 0.0;
  Type element = shaped.getElementType();
  if (element.isIndex())
    return 8.0 * static_cast<double>(shaped.getNumElements());
  if (!element.isIntOrFloat())
    return 0.0;
  return static_cast<double>(getGradientBytes(shaped).value_or(0));
}

/// The operands whose buffers `op`'s results share, one per result, or an
/// empty list where its results are buffers of their own.
static SmallVector<Value> getAliasedOperands(Operation *op) {
  if (isa<AllReduceOp, FusedAllReduceOp, SparseAllReduceOp>(op))
    return cast<CollectiveOpInterface>(op).getGradients();
  if (auto wait = dyn_cast<WaitOp>(op)) {
    Operation *start = wait.getStartingOp().getOperation();
    if (isa<StartOp, SparseStartOp>(start))
      return cast<CollectiveOpInterface>(start).getGradients();
    return {};
  }
  if (isa<tensor::CastOp, tensor::CollapseShapeOp, tensor::ExpandShapeOp,
          tensor::ReshapeOp>(op))
    return {op->getOperand(0)};
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return {view.getViewSource()};
  return {};
}

StepMemory mlir::comm::computeStepMemory(func::FuncOp func) {
  StepMemory memory;
  if (func.isExternal())
    return memory;
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, size_t> position;
  SmallVector<Operation *> ops;
  for (Operation &op : body) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  size_t end = ops.size();

  // The value that allocated each value's buffer (itself, or for a result
  // that shares an operand's buffer, that operand's), and its bytes. An
  // alias always follows what it aliases, so one lookup finds the root.
  llvm::DenseMap<Value, Value> bufferOf;
  llvm::DenseMap<Value, double> allocatedBytes;
  struct Interval {
    size_t begin, end;
  };
  llvm::DenseMap<Value, Interval> live;
  auto extend = [&](Value value, size_t at) {
    auto it = live.find(value);
    if (it != live.end())
      it->second.end = std::max(it->second.end, at);
  };
  // A replicated step holds the whole parameter of each gradient it
  // allreduces, though the IR does not name it.
  for (Operation *op : ops)
    if (auto collective = dyn_cast<CollectiveOpInterface>(op);
        collective && !isa<ReduceScatterOp, ReduceScatterStartOp, AllGatherOp,
                           AllGatherStartOp>(op))
      for (Value gradient : collective.getGradients())
        memory.replicatedParameterBytes += getBufferBytes(gradient.getType());
  for (BlockArgument argument : body.getArguments()) {
    memory.argumentBytes += getBufferBytes(argument.getType());
    bufferOf[argument] = argument;
    allocatedBytes[argument] = getBufferBytes(argument.getType());
    live[argument] = {0, end};
  }
  // The op of the body that starts each started collective's result.
  llvm::DenseMap<Operation *, size_t> waitOf;
  for (Operation *op : ops)
    if (auto wait = dyn_cast<WaitOp>(op))
      waitOf[wait.getStartingOp().getOperation()] = position[op];

  for (Operation *op : ops) {
    size_t at = position[op];
    SmallVector<Value> aliased = getAliasedOperands(op);
    size_t begin = at;
    if (auto wait = dyn_cast<WaitOp>(op); wait && aliased.empty())
      // The shard or whole tensors are allocated by the start.
      begin = position.lookup(wait.getStartingOp().getOperation());
    for (auto [index, result] : llvm::enumerate(op->getResults())) {
      live[result] = {begin, at};
      if (index < aliased.size() && bufferOf.count(aliased[index])) {
        bufferOf[result] = bufferOf.lookup(aliased[index]);
      } else {
        bufferOf[result] = result;
        allocatedBytes[result] = getBufferBytes(result.getType());
      }
    }
  }
  // Uses, at their ancestor op in the body; a start's operands until its
  // wait.
  for (Operation *op : ops) {
    size_t at = position[op];
    auto wait = waitOf.find(op);
    size_t until = wait == waitOf.end() ? at : std::max(at, wait->second);
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        extend(operand, nested == op ? until : at);
    });
    if (isa<func::ReturnOp>(op))
      for (Value operand : op->getOperands())
        extend(operand, end);
  }

  // Each buffer is live over the hull of the intervals of the values that
  // share it; the peak by a sweep over the ops.
  llvm::DenseMap<Value, Interval> hulls;
  for (auto [value, interval] : live) {
    auto [it, inserted] = hulls.try_emplace(bufferOf.lookup(value), interval);
    if (!inserted) {
      it->second.begin = std::min(it->second.begin, interval.begin);
      it->second.end = std::max(it->second.end, interval.end);
    }
  }
  std::vector<double> delta(end + 2, 0.0);
  for (auto [buffer, hull] : hulls) {
    double bytes = allocatedBytes.lookup(buffer);
    if (bytes <= 0)
      continue;
    delta[hull.begin] += bytes;
    delta[hull.end + 1] -= bytes;
  }
  double current = memory.replicatedParameterBytes;
  memory.peakBytes = current;
  for (size_t at = 0; at <= end; ++at) {
    current += delta[at];
    if (current > memory.peakBytes) {
      memory.peakBytes = current;
      memory.peakOp = at < end ? ops[at] : nullptr;
    }
  }
  return memory;
}
