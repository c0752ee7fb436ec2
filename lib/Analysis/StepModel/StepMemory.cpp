//===- StepMemory.cpp - The tensors a training step holds at once --------===//

#include "CommOpt/Analysis/StepMemory.h"

#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::comm;

/// The bytes of a statically shaped tensor or memref, else 0.
static double getBufferBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !isa<TensorType, BaseMemRefType>(shaped) ||
      !shaped.hasStaticShape())
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

  // Values that share a buffer are one class, of the bytes of the value
  // that allocated it.
  llvm::EquivalenceClasses<Value> buffers;
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
    buffers.insert(argument);
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
      buffers.insert(result);
      live[result] = {begin, at};
      if (index < aliased.size() && live.count(aliased[index]))
        buffers.unionSets(aliased[index], result);
      else
        allocatedBytes[result] = getBufferBytes(result.getType());
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

  // Each buffer is live over the hull of its members' intervals; the peak
  // by a sweep over the ops.
  std::vector<double> delta(end + 2, 0.0);
  for (auto it = buffers.begin(); it != buffers.end(); ++it) {
    if (!(*it)->isLeader())
      continue;
    double bytes = 0;
    Interval hull = live.lookup((*it)->getData());
    for (Value member : buffers.members(**it)) {
      bytes += allocatedBytes.lookup(member);
      Interval interval = live.lookup(member);
      hull.begin = std::min(hull.begin, interval.begin);
      hull.end = std::max(hull.end, interval.end);
    }
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
