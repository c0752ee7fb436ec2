//===- CommOps.cpp - Operations of the comm dialect -----------------------===//
//
// Verifiers, symbol checks, memory effects and bufferization of the comm
// ops.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::comm;
using namespace mlir::bufferization;

//===----------------------------------------------------------------------===//
// Shared verification of collectives
//===----------------------------------------------------------------------===//

namespace {
/// The side effects every collective has beyond its buffers: it talks to the
/// other ranks, so it must stay where it is and may not be dropped.
struct CommunicationResource
    : public SideEffects::Resource::Base<CommunicationResource> {
  StringRef getName() final { return "comm::Communication"; }
};
} // namespace

/// The most bytes the gradients of one collective may hold together. Passes
/// count bytes in int64_t and sum a few collectives' sizes; 2^62 leaves them
/// room, and no real gradient comes near it.
static constexpr int64_t kMaxCollectiveBytes = int64_t(1) << 62;

/// Checks that the statically shaped gradients among `inputs` hold at most
/// kMaxCollectiveBytes together, so that no pass's byte count overflows.
static LogicalResult verifyByteSize(Operation *op, ValueRange inputs) {
  int64_t total = 0;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto type = cast<ShapedType>(input.getType());
    if (!type.hasStaticShape())
      continue;
    Type element = type.getElementType();
    // Index and other types without a bit width are counted as 64 bits.
    int64_t bytes = llvm::divideCeil(
        element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64, 8);
    for (int64_t dim : type.getShape())
      if (llvm::MulOverflow(bytes, dim, bytes) || bytes > kMaxCollectiveBytes)
        return op->emitOpError("operand #")
               << index << " of type " << type
               << " holds more than 2^62 bytes, the most a collective may "
                  "hold";
    if (llvm::AddOverflow(total, bytes, total) || total > kMaxCollectiveBytes)
      return op->emitOpError("gradients hold more than 2^62 bytes together, "
                             "the most a collective may hold");
  }
  return success();
}

/// Checks what all dense collectives share: a uniform form (all tensors or
/// all memrefs), results that mirror the operands in tensor form and none in
/// buffer form, one element type, and reduction and wire settings that fit
/// that element type. `results` is empty for ops whose results are produced
/// elsewhere (comm.start).
static LogicalResult verifyCollective(Operation *op, ValueRange inputs,
                                      TypeRange results, bool checkResults,
                                      ReduceKind reduce,
                                      std::optional<Type> wire,
                                      std::optional<APFloat> prescale,
                                      std::optional<ArrayAttr> names) {
  if (inputs.empty())
    return op->emitOpError("expects at least one gradient");
  if (failed(verifyByteSize(op, inputs)))
    return failure();

  bool isTensor = isa<RankedTensorType>(inputs.front().getType());
  Type elementType =
      cast<ShapedType>(inputs.front().getType()).getElementType();
  for (auto [index, input] : llvm::enumerate(inputs)) {
    auto type = cast<ShapedType>(input.getType());
    if (isa<RankedTensorType>(type) != isTensor)
      return op->emitOpError("expects all gradients to be tensors or all to "
                             "be memrefs, but operand #")
             << index << " is " << type;
    if (type.getElementType() != elementType)
      return op->emitOpError("expects all gradients to share one element "
                             "type, but operand #")
             << index << " has " << type.getElementType()
             << " and operand #0 has " << elementType;
  }

  if (checkResults) {
    if (!isTensor && !results.empty())
      return op->emitOpError("on memrefs reduces in place and has no "
                             "results, but has ")
             << results.size();
    if (isTensor && results.size() != inputs.size())
      return op->emitOpError("expects one result per gradient (")
             << inputs.size() << "), but has " << results.size();
    if (isTensor) {
      for (auto [index, pair] : llvm::enumerate(llvm::zip(inputs, results))) {
        auto [input, resultType] = pair;
        if (input.getType() != resultType)
          return op->emitOpError("result #")
                 << index << " has type " << resultType
                 << ", but its gradient has type " << input.getType();
      }
    }
  }

  bool isFloat = isa<FloatType>(elementType);
  if (reduce == ReduceKind::avg && !isFloat)
    return op->emitOpError("reduce <avg> needs a floating-point element "
                           "type, but the gradients are ")
           << elementType;

  if (wire) {
    auto wireFloat = dyn_cast<FloatType>(*wire);
    if (!isFloat || !wireFloat)
      return op->emitOpError("wire precision applies to floating-point "
                             "gradients and types only, got wire ")
             << *wire << " for " << elementType << " gradients";
    if (!wireFloat.isF16() && !wireFloat.isBF16())
      return op->emitOpError("wire type must be f16 or bf16, got ") << *wire;
    if (wireFloat.getWidth() >= elementType.getIntOrFloatBitWidth())
      return op->emitOpError("wire type ")
             << *wire << " must be narrower than the element type "
             << elementType;
  }

  if (prescale) {
    if (!isFloat)
      return op->emitOpError("prescale needs floating-point gradients, got ")
             << elementType;
    double value = prescale->convertToDouble();
    if (!std::isfinite(value) || value <= 0.0)
      return op->emitOpError("prescale must be a positive finite number, "
                             "got ")
             << value;
  }

  if (names && (*names).size() != inputs.size())
    return op->emitOpError("has ")
           << (*names).size() << " names for " << inputs.size() << " gradients";
  return success();
}

/// Checks a collective's `group` against the module: its grid must be a
/// `shard.grid` whose rank exceeds every axis of the group.
static LogicalResult verifyGroup(Operation *op, GroupAttr group,
                                 SymbolTableCollection &symbolTable) {
  if (!group)
    return success();
  FlatSymbolRefAttr gridName = group.getGrid();
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(op, gridName);
  if (!symbol)
    return op->emitOpError("group refers to an unknown grid ") << gridName;
  auto grid = dyn_cast<shard::GridOp>(symbol);
  if (!grid)
    return op->emitOpError("group's grid ")
           << gridName << " must be a shard.grid, but is a '"
           << symbol->getName() << "'";
  for (int64_t axis : group.getAxes())
    if (axis >= grid.getRank())
      return op->emitOpError("group axis ")
             << axis << " is out of range: grid " << gridName << " has "
             << grid.getRank() << (grid.getRank() == 1 ? " axis" : " axes");
  return success();
}

/// Memory effects of a collective: it reads and writes each memref it is
/// given (in buffer form) and communicates.
static void getCollectiveEffects(
    MutableArrayRef<OpOperand> operands,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : operands) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand);
    effects.emplace_back(MemoryEffects::Write::get(), &operand);
  }
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
}

/// Bufferizes a collective in tensor form into the same op on the operands'
/// buffers, which it reduces in place. The new op has `bufferizedResultTypes`
/// (none, or the start's token); tensor results become the buffers.
static LogicalResult bufferizeInPlaceCollective(
    Operation *op, TypeRange bufferizedResultTypes, RewriterBase &rewriter,
    const BufferizationOptions &options, BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value input : op->getOperands()) {
    FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(op);
  OperationState bufferized(op->getLoc(), op->getName(), buffers,
                            bufferizedResultTypes, op->getAttrs());
  Operation *newOp = rewriter.create(bufferized);
  if (bufferizedResultTypes.empty())
    replaceOpWithBufferizedValues(rewriter, op, buffers);
  else
    rewriter.replaceOp(op, newOp->getResults());
  return success();
}

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  SmallVector<Type, 1> results;
  if (getResult())
    results.push_back(getResult().getType());
  return verifyCollective(*this, getInput(), results, /*checkResults=*/true,
                          getReduce(), getWire(), getPrescale(),
                          /*names=*/std::nullopt);
}

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

void AllReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

bool AllReduceOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return true;
}

bool AllReduceOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return true;
}

AliasingValueList AllReduceOp::getAliasingValues(OpOperand &,
                                                 const AnalysisState &) {
  return {{getResult(), BufferRelation::Equivalent}};
}

LogicalResult AllReduceOp::bufferize(RewriterBase &rewriter,
                                     const BufferizationOptions &options,
                                     BufferizationState &state) {
  return bufferizeInPlaceCollective(*this, {}, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// FusedAllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult FusedAllReduceOp::verify() {
  return verifyCollective(*this, getInputs(), getResultTypes(),
                          /*checkResults=*/true, getReduce(), getWire(),
                          getPrescale(), getNames());
}

LogicalResult
FusedAllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

void FusedAllReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getInputsMutable(), effects);
}

bool FusedAllReduceOp::bufferizesToMemoryRead(OpOperand &,
                                              const AnalysisState &) {
  return true;
}

bool FusedAllReduceOp::bufferizesToMemoryWrite(OpOperand &,
                                               const AnalysisState &) {
  return true;
}

AliasingValueList FusedAllReduceOp::getAliasingValues(OpOperand &operand,
                                                      const AnalysisState &) {
  return {{getResult(operand.getOperandNumber()), BufferRelation::Equivalent}};
}

LogicalResult FusedAllReduceOp::bufferize(RewriterBase &rewriter,
                                          const BufferizationOptions &options,
                                          BufferizationState &state) {
  return bufferizeInPlaceCollective(*this, {}, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// StartOp
//===----------------------------------------------------------------------===//

LogicalResult StartOp::verify() {
  if (failed(verifyCollective(*this, getInputs(), {}, /*checkResults=*/false,
                              getReduce(), getWire(), getPrescale(),
                              getNames())))
    return failure();
  Value token = getToken();
  if (token.use_empty())
    return emitOpError("token is never waited on: every comm.start needs "
                       "exactly one comm.wait");
  if (!token.hasOneUse())
    return emitOpError("token is waited on more than once: every "
                       "comm.start needs exactly one comm.wait");
  if (!isa<WaitOp>(*token.getUsers().begin()))
    return emitOpError("token must be consumed by comm.wait, not by ")
           << token.getUsers().begin()->getName();
  return success();
}

LogicalResult StartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

void StartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getInputsMutable(), effects);
}

bool StartOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return true;
}

// The collective writes its gradients' buffers by the time of the wait.
bool StartOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return true;
}

AliasingValueList StartOp::getAliasingValues(OpOperand &,
                                             const AnalysisState &) {
  return {};
}

LogicalResult StartOp::bufferize(RewriterBase &rewriter,
                                 const BufferizationOptions &options,
                                 BufferizationState &state) {
  return bufferizeInPlaceCollective(*this, getToken().getType(), rewriter,
                                    options, state);
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

StartOp WaitOp::getStart() { return getToken().getDefiningOp<StartOp>(); }

LogicalResult WaitOp::verify() {
  StartOp start = getStart();
  if (!start)
    return emitOpError("token must come directly from a comm.start");
  ValueRange inputs = start.getInputs();
  if (inputs.empty() || !isa<RankedTensorType>(inputs.front().getType())) {
    if (getNumResults() != 0)
      return emitOpError("waits on a collective over memrefs, which reduces "
                         "them in place: expected no results, got ")
             << getNumResults();
    return success();
  }
  if (getNumResults() != inputs.size())
    return emitOpError("expects one result per gradient of its comm.start (")
           << inputs.size() << "), but has " << getNumResults();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(inputs, getResultTypes()))) {
    auto [input, resultType] = pair;
    if (input.getType() != resultType)
      return emitOpError("result #")
             << index << " has type " << resultType
             << ", but the gradient started has type " << input.getType();
  }
  return success();
}

void WaitOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // In buffer form the wait completes writes into the start's memrefs, which
  // are not its operands: say it may write anything.
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       CommunicationResource::get());
}

// The results are the start's buffers, which the start already accounts
// for; the analysis sees them as fresh buffers owned by nobody else.
bool WaitOp::bufferizesToAllocation(Value) { return true; }

LogicalResult WaitOp::bufferize(RewriterBase &rewriter,
                                const BufferizationOptions &,
                                BufferizationState &) {
  // The start bufferizes first (it dominates the wait), so its operands are
  // already the buffers the collective reduces in place.
  StartOp start = getStart();
  SmallVector<Value> buffers(start.getInputs());
  if (llvm::any_of(buffers,
                   [](Value v) { return !isa<BaseMemRefType>(v.getType()); }))
    return emitOpError("its comm.start was not bufferized");
  rewriter.setInsertionPoint(*this);
  WaitOp::create(rewriter, getLoc(), TypeRange(), getToken());
  replaceOpWithBufferizedValues(rewriter, *this, buffers);
  return success();
}

//===----------------------------------------------------------------------===//
// SparseAllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult SparseAllReduceOp::verify() {
  if (failed(verifyByteSize(*this, getGrad())))
    return failure();
  auto gradType = cast<ShapedType>(getGrad().getType());
  auto residualType = cast<ShapedType>(getResidualIn().getType());
  bool isTensor = isa<RankedTensorType>(gradType);
  if (isa<RankedTensorType>(residualType) != isTensor)
    return emitOpError("expects grad and residual_in to be both tensors or "
                       "both memrefs, but grad is ")
           << gradType << " and residual_in is " << residualType;

  if (isTensor) {
    if (residualType != gradType)
      return emitOpError("expects residual_in to have the type of grad (")
             << gradType << "), but it has " << residualType;
    if (getNumResults() != 2)
      return emitOpError("on tensors returns the reduced gradient and the "
                         "new residual (2 results), but has ")
             << getNumResults();
    for (auto [index, resultType] : llvm::enumerate(getResultTypes()))
      if (resultType != gradType)
        return emitOpError("result #")
               << index << " has type " << resultType
               << ", but the gradient has type " << gradType;
  } else {
    // Bufferization may give the two buffers different layouts.
    if (residualType.getShape() != gradType.getShape() ||
        residualType.getElementType() != gradType.getElementType())
      return emitOpError("expects residual_in to have the shape and element "
                         "type of grad (")
             << gradType << "), but it is " << residualType;
    if (getNumResults() != 0)
      return emitOpError("on memrefs updates grad and residual_in in place "
                         "and has no results, but has ")
             << getNumResults();
  }

  double density = getDensity().convertToDouble();
  if (!(density > 0.0 && density <= 1.0))
    return emitOpError("density must be in (0, 1], got ") << density;

  if (getReduce() != ReduceKind::sum && getReduce() != ReduceKind::avg)
    return emitOpError("reduce must be <sum> or <avg>, got <")
           << stringifyReduceKind(getReduce())
           << ">: ranks exchange selected entries and add them up";

  bool chunkSelect = getSelect() == SelectKind::chunk;
  bool chunkExchange = getExchange() == ExchangeKind::chunk;
  if (chunkSelect != chunkExchange)
    return emitOpError("select <chunk> and exchange <chunk> go together, "
                       "got select <")
           << stringifySelectKind(getSelect()) << "> and exchange <"
           << stringifyExchangeKind(getExchange())
           << ">: the chunk exchange sends the chunks that chunk selection "
              "makes all ranks agree on";
  if (getChunkElements() && !chunkSelect)
    return emitOpError("chunk_elements applies to select <chunk> and "
                       "exchange <chunk> only, got select <")
           << stringifySelectKind(getSelect()) << ">";
  return success();
}

void SparseAllReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

// Both the gradient and the residual are read (accumulated) and written
// (the reduced gradient, the new residual).
bool SparseAllReduceOp::bufferizesToMemoryRead(OpOperand &,
                                               const AnalysisState &) {
  return true;
}

bool SparseAllReduceOp::bufferizesToMemoryWrite(OpOperand &,
                                                const AnalysisState &) {
  return true;
}

AliasingValueList SparseAllReduceOp::getAliasingValues(OpOperand &operand,
                                                       const AnalysisState &) {
  return {{getResult(operand.getOperandNumber()), BufferRelation::Equivalent}};
}

LogicalResult SparseAllReduceOp::bufferize(RewriterBase &rewriter,
                                           const BufferizationOptions &options,
                                           BufferizationState &state) {
  return bufferizeInPlaceCollective(*this, {}, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// ComputeOp
//===----------------------------------------------------------------------===//

LogicalResult ComputeOp::verify() {
  double cost = getCostUs().convertToDouble();
  if (!std::isfinite(cost) || cost < 0.0)
    return emitOpError("cost_us must be a non-negative finite number of "
                       "microseconds, got ")
           << cost;
  return success();
}

void ComputeOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Opaque: it stands for real work and must keep its place in the step.
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

bool ComputeOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return true;
}

bool ComputeOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return false;
}

AliasingValueList ComputeOp::getAliasingValues(OpOperand &,
                                               const AnalysisState &) {
  return {};
}

bool ComputeOp::bufferizesToAllocation(Value) { return true; }

// The same step on the operands' buffers; each tensor result becomes a new
// buffer, zero-filled so that what the skeleton computes on is defined.
LogicalResult ComputeOp::bufferize(RewriterBase &rewriter,
                                   const BufferizationOptions &options,
                                   BufferizationState &state) {
  SmallVector<Value> operands;
  for (Value input : getInputs()) {
    if (!isa<TensorType>(input.getType())) {
      operands.push_back(input);
      continue;
    }
    FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
    if (failed(buffer))
      return failure();
    operands.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  SmallVector<Value> results;
  SmallVector<Type> otherTypes;
  for (Value result : getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type) {
      if (isa<TensorType>(result.getType()))
        return emitOpError("cannot bufferize an unranked tensor result");
      otherTypes.push_back(result.getType());
      continue;
    }
    if (!type.hasStaticShape())
      return emitOpError("cannot bufferize result of dynamic shape ") << type;
    auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
    Value buffer = memref::AllocOp::create(rewriter, getLoc(), bufferType);
    Value zero = arith::ConstantOp::create(
        rewriter, getLoc(), rewriter.getZeroAttr(type.getElementType()));
    linalg::FillOp::create(rewriter, getLoc(), zero, buffer);
    results.push_back(buffer);
  }
  auto bufferized = ComputeOp::create(rewriter, getLoc(), otherTypes, operands,
                                      getCostUsAttr(), getNameAttr(),
                                      getLayerAttr(), getPhaseAttr());
  // Results in order: buffers for tensors, the new op's for the others.
  SmallVector<Value> replacements;
  unsigned nextBuffer = 0, nextOther = 0;
  for (Value result : getResults())
    replacements.push_back(isa<RankedTensorType>(result.getType())
                               ? results[nextBuffer++]
                               : bufferized.getResult(nextOther++));
  replaceOpWithBufferizedValues(rewriter, *this, replacements);
  return success();
}

#define GET_OP_CLASSES
#include "CommDialect/CommOps.cpp.inc"
