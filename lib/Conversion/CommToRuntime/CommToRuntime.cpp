//===- CommToRuntime.cpp - Lower comm ops to commrt runtime calls ---------===//
//
// Implements `convert-comm-to-runtime`: comm ops in buffer form become calls
// of the runtime's C ABI (lib/Runtime/include/commrt/commrt.h).
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Support/OptionChecks.h"

#include "commrt/commrt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cmath>

namespace mlir::comm {
#define GEN_PASS_DEF_CONVERTCOMMTORUNTIME
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// Builds runtime calls for one module: declares the `commrt_*` functions it
/// needs and turns memrefs into (pointer, element count) pairs.
class RuntimeCallBuilder {
public:
  explicit RuntimeCallBuilder(ModuleOp module) : module(module) {}

  /// Returns the runtime function `name`, declaring it on first use. Fails
  /// if the module already defines the symbol with another type.
  FailureOr<func::FuncOp> getFunction(Location loc, StringRef name,
                                      FunctionType type) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
      if (existing.getFunctionType() != type)
        return emitError(loc)
               << "cannot declare runtime function @" << name << " with type "
               << type << ": the module already has it with type "
               << existing.getFunctionType();
      return existing;
    }
    if (module.lookupSymbol(name))
      return emitError(loc) << "cannot declare runtime function @" << name
                            << ": the symbol is already taken";
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto func = func::FuncOp::create(builder, module.getLoc(), name, type);
    func.setPrivate();
    return func;
  }

  /// Emits a call of `name` returning a commrt_status and aborts the program
  /// (all ranks, with the runtime's message) if it failed.
  LogicalResult emitCheckedCall(OpBuilder &b, Location loc, StringRef name,
                                ValueRange args) {
    auto i32 = b.getI32Type();
    FailureOr<func::FuncOp> callee = getFunction(
        loc, name, b.getFunctionType(ValueRange(args).getTypes(), {i32}));
    FailureOr<func::FuncOp> check =
        getFunction(loc, "commrt_abort_on_error", b.getFunctionType({i32}, {}));
    if (failed(callee) || failed(check))
      return failure();
    auto call = func::CallOp::create(b, loc, *callee, args);
    func::CallOp::create(b, loc, *check, call.getResults());
    return success();
  }

  /// Emits a call of a runtime query `name` returning an i32, as an index.
  FailureOr<Value> emitIndexQuery(OpBuilder &b, Location loc, StringRef name) {
    FailureOr<func::FuncOp> callee =
        getFunction(loc, name, b.getFunctionType({}, {b.getI32Type()}));
    if (failed(callee))
      return failure();
    auto call = func::CallOp::create(b, loc, *callee, ValueRange());
    return Value(arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                            call.getResult(0)));
  }

  /// Replaces `op`, whose one result is an index, by the runtime query
  /// `name` (commrt_rank, commrt_size).
  LogicalResult replaceWithIndexQuery(RewriterBase &rewriter, Operation *op,
                                      StringRef name) {
    FailureOr<Value> value = emitIndexQuery(rewriter, op->getLoc(), name);
    if (failed(value))
      return failure();
    rewriter.replaceOp(op, *value);
    return success();
  }

private:
  ModuleOp module;
};

/// The runtime's code for an element type, or failure for types it does not
/// communicate.
static FailureOr<commrt_dtype> getRuntimeDType(Type type) {
  if (type.isF32())
    return COMMRT_F32;
  if (type.isF64())
    return COMMRT_F64;
  if (type.isF16())
    return COMMRT_F16;
  if (type.isBF16())
    return COMMRT_BF16;
  return failure();
}

static commrt_reduce getRuntimeReduce(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return COMMRT_SUM;
  case ReduceKind::avg:
    return COMMRT_AVG;
  case ReduceKind::max:
    return COMMRT_MAX;
  case ReduceKind::min:
    return COMMRT_MIN;
  }
  llvm_unreachable("unknown reduce kind");
}

// The sparse allreduce passes the dialect's enums on as they are.
static_assert(static_cast<int>(SelectKind::topk) == COMMRT_SELECT_TOPK &&
              static_cast<int>(SelectKind::threshold) ==
                  COMMRT_SELECT_THRESHOLD &&
              static_cast<int>(SelectKind::chunk) == COMMRT_SELECT_CHUNK);
static_assert(static_cast<int>(ExchangeKind::allgather) ==
                  COMMRT_EXCHANGE_ALLGATHER &&
              static_cast<int>(ExchangeKind::hash) == COMMRT_EXCHANGE_HASH &&
              static_cast<int>(ExchangeKind::chunk) == COMMRT_EXCHANGE_CHUNK);

/// The sizes of `memref`: constants for static dimensions, memref.dim for
/// dynamic ones.
static SmallVector<Value> getSizes(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<Value> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    if (type.isDynamicDim(dim))
      sizes.push_back(memref::DimOp::create(b, loc, memref, dim));
    else
      sizes.push_back(
          arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim)));
  }
  return sizes;
}

static Value getElementCount(OpBuilder &b, Location loc, Value memref) {
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value size : getSizes(b, loc, memref))
    count = b.createOrFold<arith::MulIOp>(loc, count, size);
  return count;
}

/// The address of the first element of a contiguous `memref`, as an i64:
/// the aligned base pointer advanced by the view's offset.
static Value getDataAddress(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value elementBytes =
      arith::ConstantIndexOp::create(b, loc, type.getElementTypeBitWidth() / 8);
  Value offsetBytes =
      b.createOrFold<arith::MulIOp>(loc, metadata.getOffset(), elementBytes);
  Value address = b.createOrFold<arith::AddIOp>(loc, base, offsetBytes);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
}

/// The same address as an `!llvm.ptr`, as the runtime's C ABI takes it.
static Value getDataPointer(OpBuilder &b, Location loc, Value memref) {
  return LLVM::IntToPtrOp::create(b, loc,
                                  LLVM::LLVMPointerType::get(b.getContext()),
                                  getDataAddress(b, loc, memref));
}

static bool isContiguous(MemRefType type) {
  return type.areTrailingDimsContiguous(type.getRank());
}

/// The arguments every runtime collective takes besides its buffers.
struct CollectiveArguments {
  commrt_dtype dtype;
  commrt_reduce reduce;
  /// COMMRT_WIRE_NONE, COMMRT_F16 or COMMRT_BF16.
  int32_t wire;
  float prescale;
};

/// Reads a collective's arguments, or fails with a diagnostic for what the
/// runtime cannot do: element types other than f16, bf16, f32 and f64, or a
/// prescale outside f32's range.
static FailureOr<CollectiveArguments>
getCollectiveArguments(Operation *op, ValueRange buffers, ReduceKind reduce,
                       TypeAttr wire, std::optional<APFloat> prescale) {
  Type elementType = getElementTypeOrSelf(buffers.front().getType());
  FailureOr<commrt_dtype> dtype = getRuntimeDType(elementType);
  if (failed(dtype))
    return op->emitOpError("cannot be lowered: the runtime communicates f16, "
                           "bf16, f32 and f64 gradients, not ")
           << elementType;
  CollectiveArguments arguments{*dtype, getRuntimeReduce(reduce),
                                COMMRT_WIRE_NONE, 1.0f};
  // The verifier allows f16 and bf16 wires only.
  if (wire)
    arguments.wire = wire.getValue().isF16() ? COMMRT_F16 : COMMRT_BF16;
  if (prescale) {
    double value = prescale->convertToDouble();
    arguments.prescale = static_cast<float>(value);
    if (arguments.prescale == 0.0f || std::isinf(arguments.prescale))
      return op->emitOpError("cannot be lowered: prescale ")
             << value << " is out of the range of f32";
  }
  return arguments;
}

/// The buffers a collective hands to the runtime: the gradients themselves
/// where they are contiguous, otherwise contiguous copies that are written
/// back once the collective is complete.
struct StagedBuffers {
  SmallVector<Value> contiguous;
  /// (copy, gradient) pairs.
  SmallVector<std::pair<Value, Value>> copies;

  static StagedBuffers stage(OpBuilder &b, Location loc, ValueRange buffers) {
    StagedBuffers staged;
    for (Value buffer : buffers) {
      auto type = cast<MemRefType>(buffer.getType());
      if (isContiguous(type)) {
        staged.contiguous.push_back(buffer);
        continue;
      }
      SmallVector<Value> dynamicSizes;
      for (int64_t dim = 0; dim < type.getRank(); ++dim)
        if (type.isDynamicDim(dim))
          dynamicSizes.push_back(memref::DimOp::create(b, loc, buffer, dim));
      auto copyType = MemRefType::get(type.getShape(), type.getElementType());
      Value copy = memref::AllocOp::create(b, loc, copyType, dynamicSizes);
      memref::CopyOp::create(b, loc, buffer, copy);
      staged.contiguous.push_back(copy);
      staged.copies.push_back({copy, buffer});
    }
    return staged;
  }

  /// Copies the reduced values back into the gradients.
  void writeBack(OpBuilder &b, Location loc) const {
    for (auto [copy, buffer] : copies) {
      memref::CopyOp::create(b, loc, copy, buffer);
      memref::DeallocOp::create(b, loc, copy);
    }
  }
};

/// Allocates `n` i64 on the stack of the function around `op`, at its entry,
/// so that a collective in a loop does not grow the stack.
static Value allocateI64Array(Operation *op, int64_t n) {
  auto function = op->getParentOfType<FunctionOpInterface>();
  OpBuilder b = OpBuilder::atBlockBegin(&function.getFunctionBody().front());
  auto type = MemRefType::get({n}, b.getI64Type());
  return memref::AllocaOp::create(b, op->getLoc(), type);
}

/// Emits the runtime's fused-allreduce arguments before `op`: arrays of the
/// buffers' addresses and element counts, filled in place, and their count.
static SmallVector<Value> getBufferArrays(OpBuilder &b, Operation *op,
                                          ValueRange buffers) {
  Location loc = op->getLoc();
  auto n = static_cast<int64_t>(buffers.size());
  Value addresses = allocateI64Array(op, n);
  Value counts = allocateI64Array(op, n);
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    Value position = arith::ConstantIndexOp::create(b, loc, index);
    Value address = getDataAddress(b, loc, buffer);
    Value count = b.createOrFold<arith::IndexCastOp>(
        loc, b.getI64Type(), getElementCount(b, loc, buffer));
    memref::StoreOp::create(b, loc, address, addresses, position);
    memref::StoreOp::create(b, loc, count, counts, position);
  }
  return {getDataPointer(b, loc, addresses), getDataPointer(b, loc, counts),
          arith::ConstantIntOp::create(b, loc, n, 32)};
}

/// The scalar arguments of a runtime collective as constants.
static SmallVector<Value> getScalarArguments(OpBuilder &b, Location loc,
                                             const CollectiveArguments &args) {
  return {arith::ConstantIntOp::create(b, loc, args.dtype, 32),
          arith::ConstantIntOp::create(b, loc, args.reduce, 32),
          arith::ConstantIntOp::create(b, loc, args.wire, 32),
          arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                         APFloat(args.prescale))};
}

/// Lowers a blocking allreduce of `buffers` to one runtime call:
/// `commrt_allreduce` for a single contiguous gradient in full precision,
/// `commrt_fused_allreduce` (which packs, casts to the wire type, reduces
/// and unpacks) otherwise.
static LogicalResult lowerBlocking(Operation *op, ValueRange buffers,
                                   const CollectiveArguments &args,
                                   RuntimeCallBuilder &runtime) {
  Location loc = op->getLoc();
  OpBuilder b(op);
  Value single = buffers.front();
  if (buffers.size() == 1 && args.wire == COMMRT_WIRE_NONE &&
      args.prescale == 1.0f &&
      isContiguous(cast<MemRefType>(single.getType()))) {
    Value count = b.createOrFold<arith::IndexCastOp>(
        loc, b.getI64Type(), getElementCount(b, loc, single));
    SmallVector<Value> scalars = getScalarArguments(b, loc, args);
    return runtime.emitCheckedCall(
        b, loc, "commrt_allreduce",
        {getDataPointer(b, loc, single), count, scalars[0], scalars[1]});
  }
  StagedBuffers staged = StagedBuffers::stage(b, loc, buffers);
  SmallVector<Value> callArgs = getBufferArrays(b, op, staged.contiguous);
  llvm::append_range(callArgs, getScalarArguments(b, loc, args));
  if (failed(
          runtime.emitCheckedCall(b, loc, "commrt_fused_allreduce", callArgs)))
    return failure();
  staged.writeBack(b, loc);
  return success();
}

struct ConvertCommToRuntimePass
    : public WithCheckedOptions<
          comm::impl::ConvertCommToRuntimeBase<ConvertCommToRuntimePass>> {
  using WithCheckedOptions::WithCheckedOptions;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    RuntimeCallBuilder runtime(module);

    // Ops in tensor form have not been bufferized: say so instead of leaving
    // them behind for a later pass to choke on.
    WalkResult precheck = module.walk([](Operation *op) {
      if (!isa<CommDialect>(op->getDialect()))
        return WalkResult::advance();
      auto isTensor = [](Type t) { return isa<TensorType>(t); };
      if (llvm::any_of(op->getOperandTypes(), isTensor) ||
          llvm::any_of(op->getResultTypes(), isTensor)) {
        op->emitOpError("operates on tensors: run one-shot-bufferize before "
                        "convert-comm-to-runtime");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (precheck.wasInterrupted())
      return signalPassFailure();

    SmallVector<Operation *> commOps;
    module.walk([&](Operation *op) {
      if (isa<CommDialect>(op->getDialect()))
        commOps.push_back(op);
    });

    for (Operation *op : commOps) {
      if (failed(lowerOp(op, runtime)))
        return signalPassFailure();
    }
    if (failed(lowerShardGrids(module, runtime)))
      return signalPassFailure();
  }

private:
  /// Lowers what planning leaves of upstream's shard dialect once its
  /// collectives are imported: process indices become the runtime's rank
  /// (row-major over the grid, as the dialect documents), every public
  /// function first checks that the job has as many ranks as the grid, and
  /// the grids, symbols for planning only, are erased.
  LogicalResult lowerShardGrids(ModuleOp module, RuntimeCallBuilder &runtime) {
    SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
    if (grids.empty())
      return success();
    std::optional<int64_t> expected;
    for (shard::GridOp grid : grids) {
      if (ShapedType::isDynamicShape(grid.getShape()))
        return grid.emitOpError("cannot be lowered: the runtime needs a grid "
                                "of static shape to check the rank count");
      int64_t size = ShapedType::getNumElements(grid.getShape());
      if (expected && *expected != size)
        return grid.emitOpError("has ")
               << size << " processes where another grid of the module has "
               << *expected
               << ": the runtime runs one communicator of all ranks";
      expected = size;
    }

    SmallVector<Operation *> shardOps;
    module.walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()) && !isa<shard::GridOp>(op))
        shardOps.push_back(op);
    });
    for (Operation *op : shardOps)
      if (failed(lowerShardOp(op, runtime)))
        return failure();

    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
      Value size = arith::ConstantIntOp::create(
          builder, func.getLoc(), builder.getI64Type(), *expected);
      if (failed(runtime.emitCheckedCall(builder, func.getLoc(),
                                         "commrt_expect_size", size)))
        return failure();
    }
    for (shard::GridOp grid : grids) {
      if (!SymbolTable::symbolKnownUseEmpty(grid, module))
        return grid.emitOpError("is still used after the lowering: only "
                                "process indices and imported collectives "
                                "lower to the runtime");
      grid.erase();
    }
    return success();
  }

  /// Lowers one shard op left in the module: process indices to the
  /// runtime's rank; anything else is an error.
  LogicalResult lowerShardOp(Operation *op, RuntimeCallBuilder &runtime) {
    IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    if (isa<shard::ProcessLinearIndexOp>(op))
      return runtime.replaceWithIndexQuery(rewriter, op, "commrt_rank");
    if (auto multi = dyn_cast<shard::ProcessMultiIndexOp>(op)) {
      auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
          op, multi.getGridAttr());
      FailureOr<Value> rank =
          runtime.emitIndexQuery(rewriter, loc, "commrt_rank");
      if (!grid || failed(rank))
        return failure();
      // Row-major: the last axis varies fastest.
      ArrayRef<int64_t> shape = grid.getShape();
      SmallVector<int64_t> strides(shape.size(), 1);
      for (int64_t axis = static_cast<int64_t>(shape.size()) - 2; axis >= 0;
           --axis)
        strides[axis] = strides[axis + 1] * shape[axis + 1];
      SmallVector<int64_t> axes(multi.getAxes().begin(), multi.getAxes().end());
      if (axes.empty())
        axes = llvm::to_vector(llvm::seq<int64_t>(0, shape.size()));
      SmallVector<Value> indices;
      for (int64_t axis : axes) {
        Value stride =
            arith::ConstantIndexOp::create(rewriter, loc, strides[axis]);
        Value extent =
            arith::ConstantIndexOp::create(rewriter, loc, shape[axis]);
        Value quotient = arith::DivUIOp::create(rewriter, loc, *rank, stride);
        indices.push_back(
            arith::RemUIOp::create(rewriter, loc, quotient, extent));
      }
      rewriter.replaceOp(op, indices);
      return success();
    }
    return op->emitOpError("cannot be lowered to the runtime: import the "
                           "module's shard collectives with comm-import-shard "
                           "first");
  }

  /// A started collective: the stack slot holding its handle and its staged
  /// buffers, for its wait.
  struct Started {
    Value handle;
    StagedBuffers staged;
  };

  LogicalResult lowerCollective(Operation *op, ValueRange buffers,
                                ReduceKind reduce, TypeAttr wire,
                                std::optional<APFloat> prescale,
                                RuntimeCallBuilder &runtime) {
    FailureOr<CollectiveArguments> args =
        getCollectiveArguments(op, buffers, reduce, wire, prescale);
    if (failed(args) || failed(lowerBlocking(op, buffers, *args, runtime)))
      return failure();
    op->erase();
    return success();
  }

  /// `commrt_fused_allreduce_start` on the start's channel; the handle goes
  /// to a stack slot that the wait reads.
  LogicalResult lowerStart(StartOp start, RuntimeCallBuilder &runtime) {
    FailureOr<CollectiveArguments> args =
        getCollectiveArguments(start, start.getInputs(), start.getReduce(),
                               start.getWireAttr(), start.getPrescale());
    if (failed(args))
      return failure();
    Location loc = start.getLoc();
    OpBuilder b(start);
    Started started{allocateI64Array(start, 1),
                    StagedBuffers::stage(b, loc, start.getInputs())};
    SmallVector<Value> callArgs =
        getBufferArrays(b, start, started.staged.contiguous);
    llvm::append_range(callArgs, getScalarArguments(b, loc, *args));
    callArgs.push_back(
        arith::ConstantIntOp::create(b, loc, start.getChannel(), 32));
    callArgs.push_back(getDataPointer(b, loc, started.handle));
    if (failed(runtime.emitCheckedCall(b, loc, "commrt_fused_allreduce_start",
                                       callArgs)))
      return failure();
    inFlight[start] = std::move(started);
    return success();
  }

  /// `commrt_wait` on the start's handle, then the staged copies go back.
  LogicalResult lowerWait(WaitOp wait, RuntimeCallBuilder &runtime) {
    StartOp start = wait.getStart();
    auto it = inFlight.find(start);
    if (it == inFlight.end())
      return wait.emitOpError(
          "cannot be lowered: its comm.start was not lowered first");
    Location loc = wait.getLoc();
    OpBuilder b(wait);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value handle = memref::LoadOp::create(b, loc, it->second.handle, zero);
    if (failed(runtime.emitCheckedCall(b, loc, "commrt_wait", {handle})))
      return failure();
    it->second.staged.writeBack(b, loc);
    inFlight.erase(it);
    wait.erase();
    start.erase();
    return success();
  }

  /// `commrt_sparse_allreduce` on the gradient and residual buffers (staged
  /// where they are not contiguous): the gradient receives the reduced
  /// gradient and the residual the new residual. Without `chunk_elements`,
  /// chunk selection gets the runtime's COMMRT_DEFAULT_CHUNK_ELEMENTS, the
  /// attribute's documented default.
  LogicalResult lowerSparse(SparseAllReduceOp sparse,
                            RuntimeCallBuilder &runtime) {
    Type elementType = getElementTypeOrSelf(sparse.getGrad().getType());
    if (!elementType.isF32())
      return sparse.emitOpError("cannot be lowered: the runtime's sparse "
                                "allreduce takes f32 gradients, not ")
             << elementType;
    Location loc = sparse.getLoc();
    OpBuilder b(sparse);
    StagedBuffers staged = StagedBuffers::stage(
        b, loc, ValueRange{sparse.getGrad(), sparse.getResidualIn()});
    Value grad = staged.contiguous[0], residual = staged.contiguous[1];
    auto i32 = [&](int64_t value) -> Value {
      return arith::ConstantIntOp::create(b, loc, value, 32);
    };
    SmallVector<Value> callArgs = {
        getDataPointer(b, loc, grad),
        getDataPointer(b, loc, residual),
        b.createOrFold<arith::IndexCastOp>(loc, b.getI64Type(),
                                           getElementCount(b, loc, grad)),
        arith::ConstantOp::create(b, loc, sparse.getDensityAttr()),
        i32(static_cast<int64_t>(sparse.getSelect())),
        i32(static_cast<int64_t>(sparse.getExchange())),
        i32(getRuntimeReduce(sparse.getReduce())),
        arith::ConstantIntOp::create(
            b, loc,
            sparse.getChunkElements().value_or(COMMRT_DEFAULT_CHUNK_ELEMENTS),
            64)};
    if (failed(runtime.emitCheckedCall(b, loc, "commrt_sparse_allreduce",
                                       callArgs)))
      return failure();
    staged.writeBack(b, loc);
    sparse.erase();
    return success();
  }

  /// Nothing, or a sleep of the step's cost with compute-delay.
  LogicalResult lowerCompute(ComputeOp compute, RuntimeCallBuilder &runtime) {
    if (compute->getNumResults() != 0)
      return compute.emitOpError("cannot be lowered: its results were not "
                                 "bufferized");
    if (computeDelay) {
      OpBuilder b(compute);
      FailureOr<func::FuncOp> sleep =
          runtime.getFunction(compute.getLoc(), "commrt_sleep_us",
                              b.getFunctionType({b.getF64Type()}, {}));
      if (failed(sleep))
        return failure();
      Value cost = arith::ConstantOp::create(b, compute.getLoc(),
                                             compute.getCostUsAttr());
      func::CallOp::create(b, compute.getLoc(), *sleep, cost);
    }
    compute.erase();
    return success();
  }

  /// Starts lowered, until their waits are.
  llvm::DenseMap<Operation *, Started> inFlight;

  LogicalResult lowerOp(Operation *op, RuntimeCallBuilder &runtime) {
    IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(op);

    if (isa<RankOp>(op))
      return runtime.replaceWithIndexQuery(rewriter, op, "commrt_rank");
    if (isa<WorldSizeOp>(op))
      return runtime.replaceWithIndexQuery(rewriter, op, "commrt_size");

    if (op->hasAttr("group"))
      return op->emitOpError("collectives over a process group are not "
                             "lowered yet: the runtime has one communicator");
    if (auto allreduce = dyn_cast<AllReduceOp>(op))
      return lowerCollective(op, allreduce.getInput(), allreduce.getReduce(),
                             allreduce.getWireAttr(), allreduce.getPrescale(),
                             runtime);
    if (auto fused = dyn_cast<FusedAllReduceOp>(op))
      return lowerCollective(op, fused.getInputs(), fused.getReduce(),
                             fused.getWireAttr(), fused.getPrescale(), runtime);
    if (auto sparse = dyn_cast<SparseAllReduceOp>(op))
      return lowerSparse(sparse, runtime);
    if (auto start = dyn_cast<StartOp>(op))
      return lowerStart(start, runtime);
    if (auto compute = dyn_cast<ComputeOp>(op))
      return lowerCompute(compute, runtime);
    if (auto wait = dyn_cast<WaitOp>(op))
      return lowerWait(wait, runtime);
    return op->emitOpError("cannot be lowered yet by "
                           "convert-comm-to-runtime");
  }
};

} // namespace
