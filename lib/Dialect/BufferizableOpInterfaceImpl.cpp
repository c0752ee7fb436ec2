//===- BufferizableOpInterfaceImpl.cpp - Bufferization of comm ops --------===//
//
// The collectives (comm.allreduce, comm.fused_allreduce,
// comm.sparse_allreduce, comm.start, comm.sparse_start) share one model: every
// gradient operand is read and written in place, and the op in buffer form
// reduces the operands' buffers, which stand for its tensor results. The
// sharded collectives write their result into a new buffer.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/BufferizableOpInterfaceImpl.h"
#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::comm;

namespace {

/// A collective that reduces its gradients in place: result i (where it is a
/// tensor) is operand i reduced. Results that are not tensors (the start's
/// token) stay results of the op in buffer form.
template <typename OpTy>
struct InPlaceCollectiveModel : public BufferizableOpInterface::ExternalModel<
                                    InPlaceCollectiveModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  // An asynchronous collective has written its buffers by its wait.
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }

  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    unsigned index = operand.getOperandNumber();
    if (index >= op->getNumResults() ||
        !isa<TensorType>(op->getResult(index).getType()))
      return {};
    return {{op->getResult(index), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> buffers;
    for (Value input : op->getOperands()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    SmallVector<Type> kept;
    for (Type type : op->getResultTypes())
      if (!isa<TensorType>(type))
        kept.push_back(type);
    rewriter.setInsertionPoint(op);
    OperationState bufferized(op->getLoc(), op->getName(), buffers, kept,
                              op->getAttrs());
    Operation *newOp = rewriter.create(bufferized);
    if (kept.empty())
      replaceOpWithBufferizedValues(rewriter, op, buffers);
    else
      rewriter.replaceOp(op, newOp->getResults());
    return success();
  }
};

/// comm.wait: its results are its start's buffers (a sparse start's: the
/// gradient's and the residual's), which the start already accounts for;
/// the analysis sees them as fresh buffers owned by nobody else.
struct WaitModel
    : public BufferizableOpInterface::ExternalModel<WaitModel, WaitOp> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    auto wait = cast<WaitOp>(op);
    // The start bufferizes first (it dominates the wait), so its operands are
    // already the buffers the collective reduces in place.
    StartedCollectiveOpInterface start = wait.getStartingOp();
    SmallVector<Value> buffers(start.getResultBuffers());
    if (llvm::any_of(buffers,
                     [](Value v) { return !isa<BaseMemRefType>(v.getType()); }))
      return wait.emitOpError("its ")
             << start->getName() << " was not bufferized";
    rewriter.setInsertionPoint(op);
    WaitOp::create(rewriter, wait.getLoc(), TypeRange(), wait.getToken());
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

/// comm.compute: reads its operands; each tensor result becomes a new buffer
/// that the step writes (`outs`).
struct ComputeModel
    : public BufferizableOpInterface::ExternalModel<ComputeModel, ComputeOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto compute = cast<ComputeOp>(op);
    Location loc = compute.getLoc();
    SmallVector<Value> operands;
    for (Value input : compute.getInputs()) {
      if (!isa<TensorType>(input.getType())) {
        operands.push_back(input);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    SmallVector<Value> results;
    SmallVector<Type> otherTypes;
    for (Value result : compute.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type) {
        if (isa<TensorType>(result.getType()))
          return compute.emitOpError(
              "cannot bufferize an unranked tensor result");
        otherTypes.push_back(result.getType());
        continue;
      }
      if (!type.hasStaticShape())
        return compute.emitOpError("cannot bufferize result of dynamic shape ")
               << type;
      auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
      results.push_back(memref::AllocOp::create(rewriter, loc, bufferType));
    }
    // Outputs it already had (memrefs) come first.
    SmallVector<Value> outputs(compute.getOutputs());
    llvm::append_range(outputs, results);
    auto bufferized = ComputeOp::create(
        rewriter, loc, otherTypes, operands, outputs, compute.getCostUsAttr(),
        compute.getNameAttr(), compute.getLayerAttr(), compute.getPhaseAttr());
    // Results in order: buffers for tensors, the new op's for the others.
    SmallVector<Value> replacements;
    unsigned nextBuffer = 0, nextOther = 0;
    for (Value result : compute.getResults())
      replacements.push_back(isa<RankedTensorType>(result.getType())
                                 ? results[nextBuffer++]
                                 : bufferized.getResult(nextOther++));
    replaceOpWithBufferizedValues(rewriter, op, replacements);
    return success();
  }
};

/// A sharded collective (comm.reduce_scatter, comm.all_gather, and their
/// starts): reads its operands and writes each result into a new buffer,
/// which the op in buffer form takes `into`, after its operands. A start's
/// results are its comm.wait's, which takes the buffers from it
/// (getResultBuffers). A reduce-scatter also writes its operands' buffers,
/// the runtime's working memory.
template <typename OpTy>
struct ShardedCollectiveModel : public BufferizableOpInterface::ExternalModel<
                                    ShardedCollectiveModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return std::is_same_v<OpTy, ReduceScatterOp> ||
           std::is_same_v<OpTy, ReduceScatterStartOp>;
  }

  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  static constexpr bool kStarts = std::is_same_v<OpTy, ReduceScatterStartOp> ||
                                  std::is_same_v<OpTy, AllGatherStartOp>;

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    for (Value input : op->getOperands()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    rewriter.setInsertionPoint(op);
    SmallVector<Type> resultTypes(op->getResultTypes());
    if constexpr (kStarts) {
      // The verifier made sure that the token has its one comm.wait.
      auto wait = cast<WaitOp>(*op->getResult(0).getUsers().begin());
      resultTypes.assign(wait->result_type_begin(), wait->result_type_end());
    }
    SmallVector<Value> outputs;
    for (Type result : resultTypes) {
      auto type = cast<RankedTensorType>(result);
      if (!type.hasStaticShape())
        return op->emitOpError("cannot bufferize a result of dynamic shape ")
               << type;
      outputs.push_back(memref::AllocOp::create(
          rewriter, op->getLoc(),
          MemRefType::get(type.getShape(), type.getElementType())));
    }
    OperationState bufferized(op->getLoc(), op->getName());
    bufferized.addOperands(operands);
    bufferized.addOperands(outputs);
    bufferized.addAttributes(op->getAttrs());
    if constexpr (std::is_same_v<OpTy, ReduceScatterOp> ||
                  std::is_same_v<OpTy, ReduceScatterStartOp>)
      bufferized.attributes.set(
          OpTy::getOperandSegmentSizeAttr(),
          rewriter.getDenseI32ArrayAttr(
              {static_cast<int32_t>(operands.size()), 1}));
    if constexpr (kStarts) {
      bufferized.addTypes(op->getResultTypes());
      rewriter.replaceOp(op, rewriter.create(bufferized)->getResults());
    } else {
      rewriter.create(bufferized);
      replaceOpWithBufferizedValues(rewriter, op, outputs);
    }
    return success();
  }
};

} // namespace

void comm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, CommDialect *) {
    AllReduceOp::attachInterface<InPlaceCollectiveModel<AllReduceOp>>(*context);
    FusedAllReduceOp::attachInterface<InPlaceCollectiveModel<FusedAllReduceOp>>(
        *context);
    SparseAllReduceOp::attachInterface<
        InPlaceCollectiveModel<SparseAllReduceOp>>(*context);
    StartOp::attachInterface<InPlaceCollectiveModel<StartOp>>(*context);
    SparseStartOp::attachInterface<InPlaceCollectiveModel<SparseStartOp>>(
        *context);
    WaitOp::attachInterface<WaitModel>(*context);
    ComputeOp::attachInterface<ComputeModel>(*context);
    ReduceScatterOp::attachInterface<ShardedCollectiveModel<ReduceScatterOp>>(
        *context);
    AllGatherOp::attachInterface<ShardedCollectiveModel<AllGatherOp>>(*context);
    ReduceScatterStartOp::attachInterface<
        ShardedCollectiveModel<ReduceScatterStartOp>>(*context);
    AllGatherStartOp::attachInterface<ShardedCollectiveModel<AllGatherStartOp>>(
        *context);
  });
}
