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
#include "llvm/Support/JSON.h"
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

/// Checks the `narrowed` flags of a mixed-wire bucket of `gradients`
/// gradients: they need the `wire` type they flag gradients for, one flag
/// per gradient, both values, and the ring, which the runtime runs such a
/// bucket with, on the backend in use (commrt_mixed_allreduce takes no
/// transport).
static LogicalResult verifyNarrowed(Operation *op,
                                    std::optional<ArrayRef<bool>> narrowed,
                                    std::optional<Type> wire, size_t gradients,
                                    std::optional<AlgorithmKind> algorithm,
                                    std::optional<TransportKind> transport) {
  if (!narrowed)
    return success();
  if (!wire)
    return op->emitOpError("'narrowed' needs a wire type: it flags the "
                           "gradients that travel in it");
  if (narrowed->size() != gradients)
    return op->emitOpError("has ") << narrowed->size() << " narrowed flags for "
                                   << gradients << " gradients";
  if (llvm::all_of(*narrowed, [](bool flag) { return flag; }))
    return op->emitOpError("narrows every gradient: leave 'narrowed' out");
  if (llvm::none_of(*narrowed, [](bool flag) { return flag; }))
    return op->emitOpError("narrows no gradient: leave 'narrowed', 'wire' "
                           "and 'prescale' out");
  if (algorithm && *algorithm != AlgorithmKind::ring)
    return op->emitOpError("is a mixed-wire bucket, which runs the ring, but "
                           "has algorithm ")
           << stringifyAlgorithmKind(*algorithm);
  if (transport)
    return op->emitOpError("is a mixed-wire bucket, which runs on the backend "
                           "in use, but has transport ")
           << stringifyTransportKind(*transport);
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
  // Found by commopt-ir-fuzzer: a grid without processes has no groups to
  // price or to split.
  for (auto [axis, size] : llvm::enumerate(grid.getShape()))
    if (size == 0)
      return op->emitOpError("group's grid ")
             << gridName << " has no processes: its axis " << axis
             << " has size 0";
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

std::optional<int64_t> comm::getGradientBytes(Type type, Type wire) {
  auto shaped = cast<ShapedType>(type);
  if (!shaped.hasStaticShape())
    return std::nullopt;
  int64_t bits =
      wire ? wire.getIntOrFloatBitWidth() : shaped.getElementTypeBitWidth();
  // elements * bits / 8, rounded up, without forming elements * bits.
  int64_t elements = shaped.getNumElements();
  return elements / 8 * bits + llvm::divideCeil(elements % 8 * bits, 8);
}

bool comm::isBlockingTensorCollective(Operation *op, bool sparse) {
  bool splittable = isa<AllReduceOp, FusedAllReduceOp>(op) ||
                    (sparse && isa<SparseAllReduceOp>(op));
  return splittable &&
         llvm::all_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>);
}

/// Fails unless every name in `names` is valid UTF-8: names reach the plan,
/// the timeline and the reports, which are JSON.
static LogicalResult verifyNamesAreUTF8(Operation *op,
                                        ArrayRef<StringRef> names) {
  for (StringRef name : names) {
    size_t offset = 0;
    if (!llvm::json::isUTF8(name, &offset))
      return op->emitOpError("name '")
             << name.take_front(offset) << "...' is not valid UTF-8 at byte "
             << offset << ": names go into JSON plans and reports";
  }
  return success();
}

/// The names of a bucket's `count` gradients: its `names`, or "" for each.
static SmallVector<StringRef> getBucketNames(std::optional<ArrayAttr> names,
                                             size_t count) {
  if (!names)
    return SmallVector<StringRef>(count, "");
  return llvm::to_vector(
      llvm::map_range(names->getAsRange<StringAttr>(),
                      [](StringAttr name) { return name.getValue(); }));
}

/// Checks that the token of the start `op` is consumed by exactly one
/// comm.wait.
static LogicalResult verifyWaitedOnce(Operation *op, Value token) {
  StringRef name = op->getName().getStringRef();
  if (token.use_empty())
    return op->emitOpError("token is never waited on: every ")
           << name << " needs exactly one comm.wait";
  if (!token.hasOneUse())
    return op->emitOpError("token is waited on more than once: every ")
           << name << " needs exactly one comm.wait";
  if (!isa<WaitOp>(*token.getUsers().begin()))
    return op->emitOpError("token must be consumed by comm.wait, not by ")
           << token.getUsers().begin()->getName();
  return success();
}

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

ValueRange AllReduceOp::getGradients() { return getOperation()->getOperands(); }

SmallVector<StringRef> AllReduceOp::getGradientNames() {
  return {getName().value_or("")};
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())))
    return failure();
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

//===----------------------------------------------------------------------===//
// FusedAllReduceOp
//===----------------------------------------------------------------------===//

ValueRange FusedAllReduceOp::getGradients() { return getInputs(); }

SmallVector<StringRef> FusedAllReduceOp::getGradientNames() {
  return getBucketNames(getNames(), getInputs().size());
}

std::optional<ArrayRef<bool>> FusedAllReduceOp::getNarrowedGradients() {
  return getNarrowed();
}

LogicalResult FusedAllReduceOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())))
    return failure();
  if (failed(verifyCollective(*this, getInputs(), getResultTypes(),
                              /*checkResults=*/true, getReduce(), getWire(),
                              getPrescale(), getNames())))
    return failure();
  return verifyNarrowed(*this, getNarrowed(), getWire(), getInputs().size(),
                        getAlgorithm(), getTransport());
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

//===----------------------------------------------------------------------===//
// StartOp
//===----------------------------------------------------------------------===//

ValueRange StartOp::getGradients() { return getInputs(); }

SmallVector<StringRef> StartOp::getGradientNames() {
  return getBucketNames(getNames(), getInputs().size());
}

std::optional<ArrayRef<bool>> StartOp::getNarrowedGradients() {
  return getNarrowed();
}

LogicalResult StartOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())))
    return failure();
  if (failed(verifyCollective(*this, getInputs(), {}, /*checkResults=*/false,
                              getReduce(), getWire(), getPrescale(),
                              getNames())))
    return failure();
  if (failed(verifyNarrowed(*this, getNarrowed(), getWire(), getInputs().size(),
                            getAlgorithm(), getTransport())))
    return failure();
  return verifyWaitedOnce(*this, getToken());
}

LogicalResult StartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

void StartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getInputsMutable(), effects);
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

StartOp WaitOp::getStart() { return getToken().getDefiningOp<StartOp>(); }

StartedCollectiveOpInterface WaitOp::getStartingOp() {
  return getToken().getDefiningOp<StartedCollectiveOpInterface>();
}

LogicalResult WaitOp::verify() {
  StartedCollectiveOpInterface start = getStartingOp();
  if (!start)
    return emitOpError("token must come directly from a comm.start, "
                       "comm.sparse_start, comm.reduce_scatter_start or "
                       "comm.all_gather_start");
  // A sharded start checks its wait's results against itself.
  if (isa<ReduceScatterStartOp, AllGatherStartOp>(start.getOperation()))
    return success();
  // A dense start's results are its gradients reduced; a sparse start's are
  // its gradient reduced and its new residual: one per operand either way.
  ValueRange inputs = start->getOperands();
  if (inputs.empty() || !isa<RankedTensorType>(inputs.front().getType())) {
    if (getNumResults() != 0)
      return emitOpError("waits on a collective over memrefs, which reduces "
                         "them in place: expected no results, got ")
             << getNumResults();
    return success();
  }
  if (getNumResults() != inputs.size())
    return emitOpError("expects one result per operand of its ")
           << start->getName() << " (" << inputs.size() << "), but has "
           << getNumResults();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(inputs, getResultTypes()))) {
    auto [input, resultType] = pair;
    if (input.getType() != resultType)
      return emitOpError("result #")
             << index << " has type " << resultType
             << ", but the operand started has type " << input.getType();
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

//===----------------------------------------------------------------------===//
// SparseAllReduceOp and SparseStartOp
//===----------------------------------------------------------------------===//

/// Checks what both forms of a sparse allreduce share: the gradient and the
/// residual, the density, the reduction and the selection/exchange pairing.
/// `results` are the results that stand for the reduced gradient and the new
/// residual (the blocking op's own; a start's come from its wait).
static LogicalResult verifySparse(SparseCollectiveOpInterface op,
                                  std::optional<TypeRange> results) {
  auto collective = cast<CollectiveOpInterface>(op.getOperation());
  if (failed(verifyNamesAreUTF8(op, collective.getGradientNames())) ||
      failed(verifyByteSize(op, op.getGrad())))
    return failure();
  auto gradType = cast<ShapedType>(op.getGrad().getType());
  bool isTensor = isa<RankedTensorType>(gradType);
  bool lossless = op.getSelect() == SelectKind::rows;
  Value residual = op.getResidualIn();
  if (lossless && residual)
    return op->emitOpError("select <rows> is lossless and takes no "
                           "residual_in, but has one");
  if (!lossless && !residual)
    return op->emitOpError("select <")
           << stringifySelectKind(op.getSelect())
           << "> keeps what it does not send in a residual: expected "
              "residual_in";
  if (lossless && gradType.getRank() == 0)
    return op->emitOpError("select <rows> needs a gradient with rows (rank "
                           ">= 1), but grad is ")
           << gradType;
  // One result per operand in tensor form: the reduced gradient, and the
  // new residual where there is one.
  const size_t tensorResults = residual ? 2 : 1;

  if (residual) {
    auto residualType = cast<ShapedType>(residual.getType());
    if (isa<RankedTensorType>(residualType) != isTensor)
      return op->emitOpError("expects grad and residual_in to be both tensors "
                             "or both memrefs, but grad is ")
             << gradType << " and residual_in is " << residualType;
    if (isTensor && residualType != gradType)
      return op->emitOpError("expects residual_in to have the type of grad (")
             << gradType << "), but it has " << residualType;
    // Bufferization may give the two buffers different layouts.
    if (!isTensor &&
        (residualType.getShape() != gradType.getShape() ||
         residualType.getElementType() != gradType.getElementType()))
      return op->emitOpError("expects residual_in to have the shape and "
                             "element type of grad (")
             << gradType << "), but it is " << residualType;
  }

  if (isTensor) {
    if (results && results->size() != tensorResults)
      return op->emitOpError(residual
                                 ? "on tensors returns the reduced gradient "
                                   "and the new residual (2 results), but has "
                                 : "on tensors without a residual returns the "
                                   "reduced gradient (1 result), but has ")
             << results->size();
    if (results)
      for (auto [index, resultType] : llvm::enumerate(*results))
        if (resultType != gradType)
          return op->emitOpError("result #")
                 << index << " has type " << resultType
                 << ", but the gradient has type " << gradType;
  } else if (results && !results->empty()) {
    return op->emitOpError("on memrefs updates its operands in place and has "
                           "no results, but has ")
           << results->size();
  }

  double density = op.getDensityValue();
  if (!(density > 0.0 && density <= 1.0))
    return op->emitOpError("density must be in (0, 1], got ") << density;
  if (std::optional<double> unionDensity = op.getUnionDensityValue();
      unionDensity && !(*unionDensity >= density && *unionDensity <= 1.0))
    return op->emitOpError("union_density must be in [density, 1] = [")
           << density << ", 1], got " << *unionDensity
           << ": the ranks together send at least what one sends";

  ReduceKind reduce = collective.getReduceKind();
  if (reduce != ReduceKind::sum && reduce != ReduceKind::avg)
    return op->emitOpError("reduce must be <sum> or <avg>, got <")
           << stringifyReduceKind(reduce)
           << ">: ranks exchange selected entries and add them up";
  if (lossless && op.getExchange() != ExchangeKind::allgather &&
      op.getExchange() != ExchangeKind::hash)
    return op->emitOpError("select <rows> goes with exchange <allgather> or "
                           "<hash>, got exchange <")
           << stringifyExchangeKind(op.getExchange()) << ">";

  bool chunkSelect = op.getSelect() == SelectKind::chunk;
  bool chunkExchange = op.getExchange() == ExchangeKind::chunk;
  if (chunkSelect != chunkExchange)
    return op->emitOpError("select <chunk> and exchange <chunk> go together, "
                           "got select <")
           << stringifySelectKind(op.getSelect()) << "> and exchange <"
           << stringifyExchangeKind(op.getExchange())
           << ">: the chunk exchange sends the chunks that chunk selection "
              "makes all ranks agree on";
  if (op.hasChunkElements() && !chunkSelect)
    return op->emitOpError("chunk_elements applies to select <chunk> and "
                           "exchange <chunk> only, got select <")
           << stringifySelectKind(op.getSelect()) << ">";
  return success();
}

// The residual is the rank's own state, not a gradient to reduce.
ValueRange SparseAllReduceOp::getGradients() {
  return getOperation()->getOperands().take_front();
}

SmallVector<StringRef> SparseAllReduceOp::getGradientNames() {
  return {getName().value_or("")};
}

// The selected values travel in the gradient's type.
Type SparseAllReduceOp::getWireType() { return {}; }

std::optional<double> SparseAllReduceOp::getPrescaleFactor() {
  return std::nullopt;
}

// The exchange is `exchange`'s, not a dense allreduce's algorithm.
std::optional<AlgorithmKind> SparseAllReduceOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void SparseAllReduceOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("a sparse allreduce has no allreduce algorithm");
}

bool SparseAllReduceOp::isDenseAllreduce() { return false; }

bool SparseAllReduceOp::canNarrowWire() { return false; }

void SparseAllReduceOp::narrowWire(Type, std::optional<double>) {
  llvm_unreachable("a sparse allreduce sends its gradient's own type");
}

LogicalResult
SparseAllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

LogicalResult SparseAllReduceOp::verify() {
  return verifySparse(*this, TypeRange(getResultTypes()));
}

void SparseAllReduceOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

// The started form answers as the blocking one.
ValueRange SparseStartOp::getGradients() {
  return getOperation()->getOperands().take_front();
}

SmallVector<StringRef> SparseStartOp::getGradientNames() {
  return {getName().value_or("")};
}

Type SparseStartOp::getWireType() { return {}; }

std::optional<double> SparseStartOp::getPrescaleFactor() {
  return std::nullopt;
}

std::optional<AlgorithmKind> SparseStartOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void SparseStartOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("a sparse allreduce has no allreduce algorithm");
}

bool SparseStartOp::isDenseAllreduce() { return false; }

bool SparseStartOp::canNarrowWire() { return false; }

void SparseStartOp::narrowWire(Type, std::optional<double>) {
  llvm_unreachable("a sparse allreduce sends its gradient's own type");
}

LogicalResult
SparseStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGroupAttr(), symbolTable);
}

LogicalResult SparseStartOp::verify() {
  // The wait checks its results against the operands.
  if (failed(verifySparse(*this, std::nullopt)))
    return failure();
  return verifyWaitedOnce(*this, getToken());
}

void SparseStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

//===----------------------------------------------------------------------===//
// ReduceScatterOp and AllGatherOp
//===----------------------------------------------------------------------===//

/// Checks a sharded collective of the flat tensor made of `wholes` and its
/// shard `shard` (tensor types for the op's operands and results, memref
/// types for its operands): one form and one element type, the settings
/// verifyCollective checks of the operands `gradients`, a name per tensor,
/// and a shard of ceil(N / shards) elements where the shapes are static.
/// `wholesAreInputs`: a reduce-scatter's; else an all-gather's, whose
/// wholes are its results or its output buffers.
static LogicalResult
verifySharded(Operation *op, ValueRange gradients, TypeRange wholes, Type shard,
              bool wholesAreInputs, bool isTensor, size_t bufferOperands,
              size_t results, int64_t shards, ReduceKind reduce,
              std::optional<Type> wire, std::optional<APFloat> prescale,
              std::optional<ArrayAttr> names) {
  if (failed(verifyCollective(op, gradients, {}, /*checkResults=*/false, reduce,
                              wire, prescale, /*names=*/std::nullopt)))
    return failure();
  StringRef produced = wholesAreInputs ? "shard" : "whole tensors";
  if (isTensor && (bufferOperands != 0 || results == 0))
    return op->emitOpError("on tensors returns its ")
           << produced << " and takes no buffers to write into";
  if (!isTensor && (bufferOperands == 0 || results != 0))
    return op->emitOpError("on memrefs writes its ")
           << produced << " `into` buffers and has no results";
  if (wholes.empty())
    return op->emitOpError("expects at least one whole tensor");
  Type elementType = cast<ShapedType>(shard).getElementType();
  int64_t total = 0;
  bool isStatic = cast<ShapedType>(shard).hasStaticShape();
  for (auto [index, type] : llvm::enumerate(wholes)) {
    auto shaped = cast<ShapedType>(type);
    if (isa<RankedTensorType>(shaped) != isTensor)
      return op->emitOpError("expects tensors or memrefs throughout, but ")
             << (wholesAreInputs ? "operand" : "whole") << " #" << index
             << " is " << type;
    if (shaped.getElementType() != elementType)
      return op->emitOpError("expects one element type, but the shard has ")
             << elementType << " and whole tensor #" << index << " has "
             << shaped.getElementType();
    if (!shaped.hasStaticShape())
      isStatic = false;
    else
      total += shaped.getNumElements();
  }
  if (isa<RankedTensorType>(shard) != isTensor)
    return op->emitOpError("expects tensors or memrefs throughout, but the "
                           "shard is ")
           << shard;
  if (names && names->size() != wholes.size())
    return op->emitOpError("has ") << names->size() << " names for "
                                   << wholes.size() << " whole tensors";
  if (!isStatic)
    return success();
  auto shardType = cast<ShapedType>(shard);
  int64_t expected = llvm::divideCeil(total, shards);
  if (shardType.getNumElements() != expected)
    return op->emitOpError("shard of type ")
           << shard << " has " << shardType.getNumElements()
           << " elements, but a flat tensor of " << total
           << " elements has shards of ceil(" << total << " / " << shards
           << ") = " << expected;
  return success();
}

/// Checks a sharded collective's group, as every collective's, and that its
/// `shards` are the group's ranks where the grid's size is static.
static LogicalResult verifyShardedGroup(Operation *op, GroupAttr group,
                                        int64_t shards,
                                        SymbolTableCollection &symbolTable) {
  if (failed(verifyGroup(op, group, symbolTable)))
    return failure();
  if (!group)
    return success();
  auto grid = cast<shard::GridOp>(
      symbolTable.lookupNearestSymbolFrom(op, group.getGrid()));
  int64_t ranks = 1;
  for (int64_t axis : group.getAxes()) {
    int64_t size = grid.getShape()[axis];
    if (ShapedType::isDynamic(size))
      return success();
    ranks *= size;
  }
  if (ranks != shards)
    return op->emitOpError("has ")
           << shards << " shards, but its group has " << ranks << " ranks";
  return success();
}

ValueRange ReduceScatterOp::getGradients() { return getInputs(); }

SmallVector<StringRef> ReduceScatterOp::getGradientNames() {
  return getBucketNames(getNames(), getInputs().size());
}

// A reduce-scatter runs the ring's first half, not an allreduce algorithm.
std::optional<AlgorithmKind> ReduceScatterOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void ReduceScatterOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("a reduce-scatter has no allreduce algorithm");
}

bool ReduceScatterOp::isDenseAllreduce() { return false; }

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())))
    return failure();
  if (getInputs().empty())
    return emitOpError("expects at least one gradient");
  bool isTensor = isa<RankedTensorType>(getInputs().front().getType());
  Type shard = getResult()  ? getResult().getType()
               : getShard() ? getShard().getType()
                            : Type();
  if (!shard)
    return emitOpError(isTensor ? "on tensors returns its shard and takes no "
                                  "buffers to write into"
                                : "on memrefs writes its shard `into` buffers "
                                  "and has no results");
  return verifySharded(*this, getInputs(), getInputs().getTypes(), shard,
                       /*wholesAreInputs=*/true, isTensor, getShard() ? 1 : 0,
                       getResult() ? 1 : 0, getShards(), getReduce(), getWire(),
                       getPrescale(), getNames());
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardedGroup(*this, getGroupAttr(), getShards(), symbolTable);
}

void ReduceScatterOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

ValueRange AllGatherOp::getGradients() {
  return getOperation()->getOperands().take_front();
}

SmallVector<StringRef> AllGatherOp::getGradientNames() {
  size_t count = getOutputs().empty() ? getNumResults() : getOutputs().size();
  return getBucketNames(getNames(), count);
}

// Nothing is reduced: every element comes from one rank.
ReduceKind AllGatherOp::getReduceKind() { return ReduceKind::sum; }

std::optional<AlgorithmKind> AllGatherOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void AllGatherOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("an all-gather has no allreduce algorithm");
}

bool AllGatherOp::isDenseAllreduce() { return false; }

// It carries parameters: a narrower wire is the user's choice, not
// comm-lower-precision's.
bool AllGatherOp::canNarrowWire() { return false; }

LogicalResult AllGatherOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())))
    return failure();
  bool isTensor = isa<RankedTensorType>(getInput().getType());
  TypeRange wholes = isTensor ? TypeRange(getResultTypes())
                              : TypeRange(getOutputs().getTypes());
  return verifySharded(*this, getInput(), wholes, getInput().getType(),
                       /*wholesAreInputs=*/false, isTensor, getOutputs().size(),
                       getNumResults(), getShards(), ReduceKind::sum, getWire(),
                       getPrescale(), getNames());
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardedGroup(*this, getGroupAttr(), getShards(), symbolTable);
}

void AllGatherOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

//===----------------------------------------------------------------------===//
// ReduceScatterStartOp and AllGatherStartOp
//===----------------------------------------------------------------------===//

/// The comm.wait that consumes `token`, where it has exactly one (which
/// verifyWaitedOnce checks).
static WaitOp getOnlyWait(Value token) {
  if (!token.hasOneUse())
    return {};
  return dyn_cast<WaitOp>(*token.getUsers().begin());
}

ValueRange ReduceScatterStartOp::getGradients() { return getInputs(); }

SmallVector<StringRef> ReduceScatterStartOp::getGradientNames() {
  return getBucketNames(getNames(), getInputs().size());
}

std::optional<AlgorithmKind> ReduceScatterStartOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void ReduceScatterStartOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("a reduce-scatter has no allreduce algorithm");
}

bool ReduceScatterStartOp::isDenseAllreduce() { return false; }

ValueRange ReduceScatterStartOp::getResultBuffers() {
  return getOperation()->getOperands().drop_front(getInputs().size());
}

LogicalResult ReduceScatterStartOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())) ||
      failed(verifyWaitedOnce(*this, getToken())))
    return failure();
  if (getInputs().empty())
    return emitOpError("expects at least one gradient");
  bool isTensor = isa<RankedTensorType>(getInputs().front().getType());
  // In tensor form the shard is its comm.wait's one result.
  Type shard;
  size_t results = 0;
  if (isTensor) {
    WaitOp wait = getOnlyWait(getToken());
    if (wait.getNumResults() != 1)
      return emitOpError("expects its comm.wait to return the shard, one "
                         "tensor, but it returns ")
             << wait.getNumResults();
    shard = wait.getResult(0).getType();
    results = 1;
  } else if (getShard()) {
    shard = getShard().getType();
  } else {
    return emitOpError("on memrefs writes its shard `into` buffers and has "
                       "no results");
  }
  return verifySharded(*this, getInputs(), getInputs().getTypes(), shard,
                       /*wholesAreInputs=*/true, isTensor, getShard() ? 1 : 0,
                       results, getShards(), getReduce(), getWire(),
                       getPrescale(), getNames());
}

LogicalResult
ReduceScatterStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardedGroup(*this, getGroupAttr(), getShards(), symbolTable);
}

void ReduceScatterStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

ValueRange AllGatherStartOp::getGradients() {
  return getOperation()->getOperands().take_front();
}

SmallVector<StringRef> AllGatherStartOp::getGradientNames() {
  size_t count = getOutputs().size();
  if (WaitOp wait = getOnlyWait(getToken()); wait && count == 0)
    count = wait.getNumResults();
  return getBucketNames(getNames(), count);
}

ReduceKind AllGatherStartOp::getReduceKind() { return ReduceKind::sum; }

std::optional<AlgorithmKind> AllGatherStartOp::getAllreduceAlgorithm() {
  return std::nullopt;
}

void AllGatherStartOp::setAllreduceAlgorithm(AlgorithmKind) {
  llvm_unreachable("an all-gather has no allreduce algorithm");
}

bool AllGatherStartOp::isDenseAllreduce() { return false; }

bool AllGatherStartOp::canNarrowWire() { return false; }

ValueRange AllGatherStartOp::getResultBuffers() { return getOutputs(); }

LogicalResult AllGatherStartOp::verify() {
  if (failed(verifyNamesAreUTF8(*this, getGradientNames())) ||
      failed(verifyWaitedOnce(*this, getToken())))
    return failure();
  bool isTensor = isa<RankedTensorType>(getInput().getType());
  // In tensor form the whole tensors are its comm.wait's results.
  TypeRange wholes = getOutputs().getTypes();
  size_t results = 0;
  if (isTensor) {
    WaitOp wait = getOnlyWait(getToken());
    wholes = wait.getResultTypes();
    results = wait.getNumResults();
  }
  return verifySharded(*this, getInput(), wholes, getInput().getType(),
                       /*wholesAreInputs=*/false, isTensor, getOutputs().size(),
                       results, getShards(), ReduceKind::sum, getWire(),
                       getPrescale(), getNames());
}

LogicalResult
AllGatherStartOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShardedGroup(*this, getGroupAttr(), getShards(), symbolTable);
}

void AllGatherStartOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  getCollectiveEffects(getOperation()->getOpOperands(), effects);
}

//===----------------------------------------------------------------------===//
// ComputeOp
//===----------------------------------------------------------------------===//

LogicalResult ComputeOp::verify() {
  if (getName() && failed(verifyNamesAreUTF8(*this, *getName())))
    return failure();
  double cost = getCostUs().convertToDouble();
  if (!std::isfinite(cost) || cost < 0.0)
    return emitOpError("cost_us must be a non-negative finite number of "
                       "microseconds, got ")
           << cost;
  if (!getOutputs().empty() &&
      llvm::any_of(getResultTypes(), llvm::IsaPred<TensorType>))
    return emitOpError("writes 'outs' (buffer form) and returns tensors: "
                       "a step produces its results one way");
  return success();
}

void ComputeOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Opaque: it stands for real work and must keep its place in the step.
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
  for (OpOperand &output : getOutputsMutable())
    effects.emplace_back(MemoryEffects::Write::get(), &output,
                         SideEffects::DefaultResource::get());
}

#define GET_OP_CLASSES
#include "CommDialect/CommOps.cpp.inc"
