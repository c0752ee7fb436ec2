//===- CommToRuntime.cpp - Lower comm ops to commrt runtime calls ---------===//
//
// Implements `convert-comm-to-runtime`: comm ops in buffer form become calls
// of the runtime's C ABI (lib/Runtime/include/commrt/commrt.h).
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"

#include "commrt/commrt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

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

/// The address of the first element of a contiguous `memref`, as an
/// `!llvm.ptr`: the aligned base pointer advanced by the view's offset.
static Value getDataPointer(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value elementBytes =
      arith::ConstantIndexOp::create(b, loc, type.getElementTypeBitWidth() / 8);
  Value offsetBytes =
      b.createOrFold<arith::MulIOp>(loc, metadata.getOffset(), elementBytes);
  Value address = b.createOrFold<arith::AddIOp>(loc, base, offsetBytes);
  Value address64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address64);
}

static bool isContiguous(MemRefType type) {
  return type.areTrailingDimsContiguous(type.getRank());
}

/// Lowers the allreduce of `buffers` (one or several gradients of one element
/// type) to exactly one `commrt_allreduce`. A single contiguous buffer is
/// reduced where it is; otherwise the gradients are packed into a fusion
/// buffer, reduced together and unpacked.
static LogicalResult lowerAllReduce(Operation *op, ValueRange buffers,
                                    ReduceKind reduce,
                                    RuntimeCallBuilder &runtime) {
  Location loc = op->getLoc();
  OpBuilder b(op);
  Type elementType =
      cast<MemRefType>(buffers.front().getType()).getElementType();
  FailureOr<commrt_dtype> dtype = getRuntimeDType(elementType);
  if (failed(dtype))
    return op->emitOpError("cannot be lowered: the runtime communicates f16, "
                           "bf16, f32 and f64 gradients, not ")
           << elementType;
  Value dtypeValue = arith::ConstantIntOp::create(b, loc, *dtype, 32);
  Value reduceValue =
      arith::ConstantIntOp::create(b, loc, getRuntimeReduce(reduce), 32);

  auto emitAllReduce = [&](Value contiguous, Value elementCount) {
    Value count =
        b.createOrFold<arith::IndexCastOp>(loc, b.getI64Type(), elementCount);
    return runtime.emitCheckedCall(
        b, loc, "commrt_allreduce",
        {getDataPointer(b, loc, contiguous), count, dtypeValue, reduceValue});
  };

  Value single = buffers.front();
  if (buffers.size() == 1 && isContiguous(cast<MemRefType>(single.getType())))
    return emitAllReduce(single, getElementCount(b, loc, single));

  // Pack: one 1-D fusion buffer, each gradient copied into a row-major view
  // of it at its running offset.
  SmallVector<Value> offsets;
  Value total = arith::ConstantIndexOp::create(b, loc, 0);
  for (Value buffer : buffers) {
    offsets.push_back(total);
    total = b.createOrFold<arith::AddIOp>(loc, total,
                                          getElementCount(b, loc, buffer));
  }
  auto fusionType = MemRefType::get({ShapedType::kDynamic}, elementType);
  Value fusion = memref::AllocOp::create(b, loc, fusionType, total);
  SmallVector<Value> views;
  for (auto [buffer, offset] : llvm::zip(buffers, offsets)) {
    auto type = cast<MemRefType>(buffer.getType());
    // Row-major strides of the gradient's shape inside the fusion buffer.
    SmallVector<Value> sizes = getSizes(b, loc, buffer);
    SmallVector<OpFoldResult> viewSizes;
    for (auto [dim, size] : llvm::enumerate(sizes))
      viewSizes.push_back(type.isDynamicDim(dim)
                              ? OpFoldResult(size)
                              : b.getIndexAttr(type.getDimSize(dim)));
    SmallVector<OpFoldResult> viewStrides(sizes.size());
    Value stride = arith::ConstantIndexOp::create(b, loc, 1);
    for (int64_t dim = type.getRank() - 1; dim >= 0; --dim) {
      viewStrides[dim] = stride;
      stride = b.createOrFold<arith::MulIOp>(loc, stride, sizes[dim]);
    }
    SmallVector<int64_t> dynamicStrides(type.getRank(), ShapedType::kDynamic);
    auto viewType = MemRefType::get(type.getShape(), elementType,
                                    StridedLayoutAttr::get(b.getContext(),
                                                           ShapedType::kDynamic,
                                                           dynamicStrides));
    Value view = memref::ReinterpretCastOp::create(
        b, loc, viewType, fusion, OpFoldResult(offset), viewSizes, viewStrides);
    memref::CopyOp::create(b, loc, buffer, view);
    views.push_back(view);
  }
  if (failed(emitAllReduce(fusion, total)))
    return failure();
  for (auto [buffer, view] : llvm::zip(buffers, views))
    memref::CopyOp::create(b, loc, view, buffer);
  memref::DeallocOp::create(b, loc, fusion);
  return success();
}

struct ConvertCommToRuntimePass
    : public comm::impl::ConvertCommToRuntimeBase<ConvertCommToRuntimePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    RuntimeCallBuilder runtime(module);

    // Ops in tensor form have not been bufferized: say so instead of leaving
    // them behind for a later pass to choke on.
    WalkResult tensorCheck = module.walk([](Operation *op) {
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
    if (tensorCheck.wasInterrupted())
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
  }

private:
  LogicalResult lowerOp(Operation *op, RuntimeCallBuilder &runtime) {
    IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();

    if (auto rank = dyn_cast<RankOp>(op)) {
      FailureOr<Value> value =
          runtime.emitIndexQuery(rewriter, loc, "commrt_rank");
      if (failed(value))
        return failure();
      rewriter.replaceOp(op, *value);
      return success();
    }
    if (auto size = dyn_cast<WorldSizeOp>(op)) {
      FailureOr<Value> value =
          runtime.emitIndexQuery(rewriter, loc, "commrt_size");
      if (failed(value))
        return failure();
      rewriter.replaceOp(op, *value);
      return success();
    }

    if (op->hasAttr("group"))
      return op->emitOpError("collectives over a process group are not "
                             "lowered yet: the runtime has one communicator");
    if (op->hasAttr("wire"))
      return op->emitOpError("cannot be lowered yet: the runtime has no "
                             "reduced-precision wire path");

    if (auto allreduce = dyn_cast<AllReduceOp>(op)) {
      if (failed(lowerAllReduce(op, allreduce.getInput(), allreduce.getReduce(),
                                runtime)))
        return failure();
      rewriter.eraseOp(op);
      return success();
    }
    if (auto fused = dyn_cast<FusedAllReduceOp>(op)) {
      if (failed(lowerAllReduce(op, fused.getInputs(), fused.getReduce(),
                                runtime)))
        return failure();
      rewriter.eraseOp(op);
      return success();
    }
    return op->emitOpError("cannot be lowered yet by "
                           "convert-comm-to-runtime");
  }
};

} // namespace
