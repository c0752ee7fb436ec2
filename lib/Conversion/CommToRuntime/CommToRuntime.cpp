//===- CommToRuntime.cpp - Lower comm ops to commrt runtime calls ---------===//
//
// Implements `convert-comm-to-runtime`: comm ops in buffer form become calls
// of the runtime's C ABI (lib/Runtime/include/commrt/commrt.h), one dialect
// conversion pattern per op.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommDialect/RuntimeFunctions.h"
#include "CommOpt/Support/OptionChecks.h"

#include "commrt/commrt.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <type_traits>

namespace mlir::comm {
#define GEN_PASS_DEF_CONVERTCOMMTORUNTIME
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// Builds runtime calls in one module: declares the `commrt_*` functions it
/// needs.
class RuntimeCallBuilder {
public:
  explicit RuntimeCallBuilder(Operation *op)
      : module(op->getParentOfType<ModuleOp>()) {}

  /// Returns the runtime function `name`, declaring it on first use. Fails
  /// with a diagnostic at `loc` if the module has the symbol as something
  /// else.
  FailureOr<func::FuncOp> getFunction(OpBuilder &b, Location loc,
                                      StringRef name, FunctionType type) {
    return getOrDeclareRuntimeFunction(
        b, module, name, type, [&](Operation *existing) {
          InFlightDiagnostic diag = emitError(loc)
                                    << "cannot declare runtime function @"
                                    << name << " with type " << type;
          if (auto func = dyn_cast<func::FuncOp>(existing))
            diag << ": the module already has it with type "
                 << func.getFunctionType();
          else
            diag << ": the symbol is already taken";
        });
  }

  /// Emits a call of `name` returning a commrt_status and aborts the program
  /// (all ranks, with the runtime's message) if it failed.
  LogicalResult emitCheckedCall(OpBuilder &b, Location loc, StringRef name,
                                ValueRange args) {
    auto i32 = b.getI32Type();
    FailureOr<func::FuncOp> callee = getFunction(
        b, loc, name, b.getFunctionType(ValueRange(args).getTypes(), {i32}));
    FailureOr<func::FuncOp> check = getFunction(b, loc, "commrt_abort_on_error",
                                                b.getFunctionType({i32}, {}));
    if (failed(callee) || failed(check))
      return failure();
    auto call = func::CallOp::create(b, loc, *callee, args);
    func::CallOp::create(b, loc, *check, call.getResults());
    return success();
  }

  /// Emits a call of a runtime query `name` returning an i32, as an index.
  FailureOr<Value> emitIndexQuery(OpBuilder &b, Location loc, StringRef name) {
    FailureOr<func::FuncOp> callee =
        getFunction(b, loc, name, b.getFunctionType({}, {b.getI32Type()}));
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

/// The type of the contiguous copy through which a gradient of
/// non-contiguous `type` is staged.
static MemRefType getStagingType(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// The arguments every runtime collective takes besides its buffers.
struct CollectiveArguments {
  commrt_dtype dtype;
  commrt_reduce reduce;
  /// COMMRT_WIRE_NONE, COMMRT_F16 or COMMRT_BF16.
  int32_t wire;
  float prescale;
};

/// Reads the arguments of the dense collective `op` (reducing `buffers`),
/// or fails with a diagnostic for what the runtime cannot do: element types
/// other than f16, bf16, f32 and f64, or a prescale outside f32's range.
static FailureOr<CollectiveArguments>
getCollectiveArguments(CollectiveOpInterface op, ValueRange buffers) {
  Type elementType = getElementTypeOrSelf(buffers.front().getType());
  FailureOr<commrt_dtype> dtype = getRuntimeDType(elementType);
  if (failed(dtype))
    return op->emitOpError("cannot be lowered: the runtime communicates f16, "
                           "bf16, f32 and f64 gradients, not ")
           << elementType;
  CollectiveArguments arguments{*dtype, getRuntimeReduce(op.getReduceKind()),
                                COMMRT_WIRE_NONE, 1.0f};
  // The verifier allows f16 and bf16 wires only.
  if (Type wire = op.getWireType())
    arguments.wire = wire.isF16() ? COMMRT_F16 : COMMRT_BF16;
  if (std::optional<double> prescale = op.getPrescaleFactor()) {
    arguments.prescale = static_cast<float>(*prescale);
    if (arguments.prescale == 0.0f || std::isinf(arguments.prescale))
      return op->emitOpError("cannot be lowered: prescale ")
             << *prescale << " is out of the range of f32";
  }
  return arguments;
}

/// The buffers a collective hands to the runtime: the gradients themselves
/// where they are contiguous, otherwise contiguous copies that are written
/// back once the collective is complete.
struct StagedBuffers {
  SmallVector<Value> contiguous;
  /// The copies, each followed by the gradient it goes back to.
  SmallVector<Value> copies;

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
      Value copy =
          memref::AllocOp::create(b, loc, getStagingType(type), dynamicSizes);
      memref::CopyOp::create(b, loc, buffer, copy);
      staged.contiguous.push_back(copy);
      staged.copies.append({copy, buffer});
    }
    return staged;
  }

  /// Copies the reduced values back into the gradients and frees the
  /// copies; `copies` holds (copy, gradient) pairs as `stage` makes them.
  static void writeBack(OpBuilder &b, Location loc, ValueRange copies) {
    for (size_t index = 0; index + 1 < copies.size(); index += 2) {
      memref::CopyOp::create(b, loc, copies[index], copies[index + 1]);
      memref::DeallocOp::create(b, loc, copies[index]);
    }
  }
};

/// Allocates `n` elements of `elementType` on the stack of the function
/// around `op`, at its entry, so that a collective in a loop does not grow
/// the stack.
static Value allocateArray(OpBuilder &b, Operation *op, int64_t n,
                           Type elementType) {
  OpBuilder::InsertionGuard guard(b);
  auto function = op->getParentOfType<FunctionOpInterface>();
  b.setInsertionPointToStart(&function.getFunctionBody().front());
  auto type = MemRefType::get({n}, elementType);
  return memref::AllocaOp::create(b, op->getLoc(), type);
}

/// `n` i64 on the function's stack, as allocateArray.
static Value allocateI64Array(OpBuilder &b, Operation *op, int64_t n) {
  return allocateArray(b, op, n, b.getI64Type());
}

/// Emits the runtime's fused-allreduce arguments before `op`: arrays of the
/// buffers' addresses and element counts, filled in place, and their count.
static SmallVector<Value> getBufferArrays(OpBuilder &b, Operation *op,
                                          ValueRange buffers) {
  Location loc = op->getLoc();
  auto n = static_cast<int64_t>(buffers.size());
  Value addresses = allocateI64Array(b, op, n);
  Value counts = allocateI64Array(b, op, n);
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

/// The arguments of `commrt_fused_allreduce` for `op` on its `staged`
/// buffers; its `_start` form adds the channel and the handle's slot.
static SmallVector<Value>
getFusedCallArguments(OpBuilder &b, Operation *op, const StagedBuffers &staged,
                      const CollectiveArguments &args) {
  SmallVector<Value> callArgs = getBufferArrays(b, op, staged.contiguous);
  llvm::append_range(callArgs, getScalarArguments(b, op->getLoc(), args));
  return callArgs;
}

//===----------------------------------------------------------------------===//
// Process groups
//===----------------------------------------------------------------------===//

/// The coordinates of the process `rank` (an index) on a grid of static
/// `shape` along `axes`, row-major (the last axis varies fastest), as the
/// shard dialect and `#comm.group` number processes.
static SmallVector<Value> emitGridCoordinates(OpBuilder &b, Location loc,
                                              Value rank,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> axes) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t axis = static_cast<int64_t>(shape.size()) - 2; axis >= 0; --axis)
    strides[axis] = strides[axis + 1] * shape[axis + 1];
  SmallVector<Value> coordinates;
  for (int64_t axis : axes) {
    Value stride = arith::ConstantIndexOp::create(b, loc, strides[axis]);
    Value extent = arith::ConstantIndexOp::create(b, loc, shape[axis]);
    Value quotient = arith::DivUIOp::create(b, loc, rank, stride);
    coordinates.push_back(arith::RemUIOp::create(b, loc, quotient, extent));
  }
  return coordinates;
}

/// Emits the runtime's handle of the calling rank's group of `group`
/// (commrt_group_split): the color is the rank's linear index over the
/// grid's other axes, the key its linear index over the group's axes, and
/// the id a hash of the grid's name and the axes, so that every collective
/// of one group finds the communicator the first one made.
static FailureOr<Value> emitGroupHandle(OpBuilder &b, Operation *op,
                                        GroupAttr group) {
  Location loc = op->getLoc();
  // The verifier has checked the grid; checkShardLowerable its static shape.
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, group.getGrid());
  ArrayRef<int64_t> shape = grid.getShape();
  RuntimeCallBuilder runtime(op);
  FailureOr<Value> rank = runtime.emitIndexQuery(b, loc, "commrt_rank");
  if (failed(rank))
    return failure();
  SmallVector<int64_t> allAxes =
      llvm::to_vector(llvm::seq<int64_t>(0, shape.size()));
  SmallVector<Value> coordinates =
      emitGridCoordinates(b, loc, *rank, shape, allAxes);
  Value color = arith::ConstantIndexOp::create(b, loc, 0);
  Value key = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [axis, coordinate] : llvm::enumerate(coordinates)) {
    Value &index = llvm::is_contained(group.getAxes(), axis) ? key : color;
    Value extent = arith::ConstantIndexOp::create(b, loc, shape[axis]);
    index = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, index, extent), coordinate);
  }
  std::string name = group.getGrid().getValue().str();
  for (int64_t axis : group.getAxes())
    name += "," + std::to_string(axis);
  auto id = static_cast<int64_t>(llvm::xxh3_64bits(name) >> 1);

  Value slot = allocateArray(b, op, 1, b.getI32Type());
  auto toI32 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  };
  if (failed(runtime.emitCheckedCall(
          b, loc, "commrt_group_split",
          {arith::ConstantIntOp::create(b, loc, id, 64), toI32(color),
           toI32(key), getDataPointer(b, loc, slot)})))
    return failure();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return Value(memref::LoadOp::create(b, loc, slot, zero));
}

/// The runtime's handle of the process group the collective `op` runs
/// among (emitGroupHandle), or 0 for all ranks.
static FailureOr<Value> emitGroupHandleOrAll(OpBuilder &b, Operation *op) {
  if (GroupAttr group = cast<CollectiveOpInterface>(op).getProcessGroup())
    return emitGroupHandle(b, op, group);
  return Value(arith::ConstantIntOp::create(b, op->getLoc(), 0, 32));
}

/// The runtime's `algorithm` argument for `collective`: its allreduce
/// algorithm (the dialect's values are commrt_algorithm's;
/// COMMRT_ALGORITHM_DEFAULT for none) and its transport (commrt_backend's;
/// AUTO for none) shifted by COMMRT_TRANSPORT_SHIFT.
static int32_t getRuntimeAlgorithm(CollectiveOpInterface collective) {
  int32_t algorithm = COMMRT_ALGORITHM_DEFAULT;
  if (std::optional<AlgorithmKind> kind = collective.getAllreduceAlgorithm())
    algorithm = static_cast<int32_t>(*kind);
  if (std::optional<TransportKind> transport =
          collective.getCollectiveTransport())
    algorithm |= static_cast<int32_t>(*transport) << COMMRT_TRANSPORT_SHIFT;
  return algorithm;
}

static_assert(static_cast<int>(AlgorithmKind::ring) == COMMRT_ALGORITHM_RING &&
              static_cast<int>(AlgorithmKind::tree) == COMMRT_ALGORITHM_TREE &&
              static_cast<int>(AlgorithmKind::hierarchical) ==
                  COMMRT_ALGORITHM_HIERARCHICAL);
static_assert(static_cast<int>(TransportKind::mpi) == COMMRT_BACKEND_MPI &&
              static_cast<int>(TransportKind::nccl) == COMMRT_BACKEND_NCCL);

/// Whether the fused allreduce (or its start) `op` needs the runtime's
/// `commrt_group_` form: it runs over a process group, or names its
/// algorithm or transport.
static bool needsGroupForm(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  return collective.getProcessGroup() ||
         getRuntimeAlgorithm(collective) != COMMRT_ALGORITHM_DEFAULT;
}

/// The `commrt_group_` form of the runtime function `name` (`commrt_...`).
static std::string getGroupFormName(StringRef name) {
  return ("commrt_group_" + name.drop_front(StringRef("commrt_").size())).str();
}

/// `name` (a fused allreduce, or its start, whose `callArgs` end with the
/// prescale) for a collective of all ranks with the runtime's default
/// algorithm. Otherwise its `commrt_group_` form: the group's handle (0, all
/// ranks, without a group) goes first, and the algorithm with the transport
/// (getRuntimeAlgorithm) after the prescale.
static FailureOr<std::string> useGroupForm(OpBuilder &b, Operation *op,
                                           StringRef name,
                                           SmallVectorImpl<Value> &callArgs) {
  if (!needsGroupForm(op))
    return name.str();
  auto collective = cast<CollectiveOpInterface>(op);
  FailureOr<Value> handle = emitGroupHandleOrAll(b, op);
  if (failed(handle))
    return failure();
  callArgs.push_back(arith::ConstantIntOp::create(
      b, op->getLoc(), getRuntimeAlgorithm(collective), 32));
  callArgs.insert(callArgs.begin(), *handle);
  return getGroupFormName(name);
}

/// The arguments of `commrt_mixed_allreduce` for the mixed-wire bucket `op`
/// on its `staged` buffers: the group's handle (0 for all ranks), the
/// buffers' arrays with the narrowed flags after the counts, and the
/// scalars; its `_start` form adds the channel and the handle's slot.
static FailureOr<SmallVector<Value>>
getMixedCallArguments(OpBuilder &b, Operation *op, const StagedBuffers &staged,
                      const CollectiveArguments &args) {
  Location loc = op->getLoc();
  auto collective = cast<CollectiveOpInterface>(op);
  ArrayRef<bool> narrowed = *collective.getNarrowedGradients();
  Value flags = allocateArray(b, op, static_cast<int64_t>(narrowed.size()),
                              b.getI32Type());
  for (auto [index, flag] : llvm::enumerate(narrowed)) {
    Value position = arith::ConstantIndexOp::create(b, loc, index);
    memref::StoreOp::create(b, loc,
                            arith::ConstantIntOp::create(b, loc, flag, 32),
                            flags, position);
  }
  FailureOr<Value> handle = emitGroupHandleOrAll(b, op);
  if (failed(handle))
    return failure();
  SmallVector<Value> callArgs = {*handle};
  SmallVector<Value> arrays = getBufferArrays(b, op, staged.contiguous);
  callArgs.append(
      {arrays[0], arrays[1], getDataPointer(b, loc, flags), arrays[2]});
  llvm::append_range(callArgs, getScalarArguments(b, loc, args));
  return callArgs;
}

/// The runtime function and arguments of the fused allreduce `op` (or of its
/// start, `name` ending in `_start`) on its `staged` buffers:
/// `commrt_mixed_allreduce` for a mixed-wire bucket, else `name` or its
/// group form (useGroupForm).
static FailureOr<std::string> getBucketCall(OpBuilder &b, Operation *op,
                                            StringRef name,
                                            const StagedBuffers &staged,
                                            const CollectiveArguments &args,
                                            SmallVectorImpl<Value> &callArgs) {
  if (cast<CollectiveOpInterface>(op).isMixedWire()) {
    FailureOr<SmallVector<Value>> mixed =
        getMixedCallArguments(b, op, staged, args);
    if (failed(mixed))
      return failure();
    callArgs.assign(mixed->begin(), mixed->end());
    return ("commrt_mixed_allreduce" +
            name.drop_front(StringRef("commrt_fused_allreduce").size()))
        .str();
  }
  callArgs.assign(getFusedCallArguments(b, op, staged, args));
  return useGroupForm(b, op, name, callArgs);
}

//===----------------------------------------------------------------------===//
// What the runtime cannot do
//===----------------------------------------------------------------------===//

/// Fails with a diagnostic if the comm op `op` cannot be lowered: tensors,
/// process groups, element types and prescales the runtime does not take.
/// The patterns run on ops that passed.
static LogicalResult checkLowerable(Operation *op) {
  auto isTensor = [](Type t) { return isa<TensorType>(t); };
  if (llvm::any_of(op->getOperandTypes(), isTensor) ||
      llvm::any_of(op->getResultTypes(), isTensor))
    return op->emitOpError("operates on tensors: run one-shot-bufferize "
                           "before convert-comm-to-runtime");
  if (isa<RankOp, WorldSizeOp, WaitOp>(op))
    return success();
  if (isa<AllReduceOp, FusedAllReduceOp, StartOp, ReduceScatterOp, AllGatherOp,
          ReduceScatterStartOp, AllGatherStartOp>(op)) {
    auto collective = cast<CollectiveOpInterface>(op);
    return getCollectiveArguments(collective, collective.getGradients());
  }
  if (auto sparse = dyn_cast<SparseCollectiveOpInterface>(op)) {
    Type elementType = getElementTypeOrSelf(sparse.getGrad().getType());
    if (!elementType.isF32())
      return sparse->emitOpError("cannot be lowered: the runtime's sparse "
                                 "allreduce takes f32 gradients, not ")
             << elementType;
    return success();
  }
  if (auto compute = dyn_cast<ComputeOp>(op)) {
    if (compute->getNumResults() != 0)
      return compute.emitOpError("cannot be lowered: its results were not "
                                 "bufferized");
    return success();
  }
  return op->emitOpError("cannot be lowered yet by convert-comm-to-runtime");
}

/// Checks what planning leaves of upstream's shard dialect once its
/// collectives are imported: grids of one static size, and of the other ops
/// only process indices. Returns the grids' process count, if any grid.
static FailureOr<std::optional<int64_t>> checkShardLowerable(ModuleOp module) {
  std::optional<int64_t> expected;
  for (shard::GridOp grid : module.getOps<shard::GridOp>()) {
    if (ShapedType::isDynamicShape(grid.getShape()))
      return grid.emitOpError("cannot be lowered: the runtime needs a grid "
                              "of static shape to check the rank count");
    int64_t size = ShapedType::getNumElements(grid.getShape());
    if (size == 0)
      return grid.emitOpError("cannot be lowered: it has no processes (an "
                              "axis of size 0)");
    if (expected && *expected != size)
      return grid.emitOpError("has ")
             << size << " processes where another grid of the module has "
             << *expected << ": the runtime runs one communicator of all ranks";
    expected = size;
  }
  WalkResult result = module.walk([](Operation *op) {
    if (!isa<shard::ShardDialect>(op->getDialect()) ||
        isa<shard::GridOp, shard::ProcessLinearIndexOp,
            shard::ProcessMultiIndexOp>(op))
      return WalkResult::advance();
    op->emitOpError("cannot be lowered to the runtime: import the module's "
                    "shard collectives with comm-import-shard first");
    return WalkResult::interrupt();
  });
  if (result.wasInterrupted())
    return failure();
  return expected;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// Keeps every type but `!comm.token`, which becomes what its comm.wait
/// needs: the runtime's handle (`commrt_wait` takes an i64) followed by the
/// start's staged copies, each with the buffer it goes back to. The copies
/// depend on the start's operands, so the conversion looks at the token's
/// comm.start or comm.sparse_start.
class RuntimeTypeConverter : public TypeConverter {
public:
  RuntimeTypeConverter() {
    addConversion(
        [](Value token,
           SmallVectorImpl<Type> &types) -> std::optional<LogicalResult> {
          if (!isa<TokenType>(token.getType()))
            return std::nullopt;
          auto start = token.getDefiningOp<StartedCollectiveOpInterface>();
          if (!start)
            return failure();
          types.push_back(IntegerType::get(token.getContext(), 64));
          for (Type type : start->getOperandTypes()) {
            auto memref = cast<MemRefType>(type);
            if (!isContiguous(memref))
              types.append({getStagingType(memref), memref});
          }
          return success();
        });
    addConversion([](Type type) -> std::optional<Type> {
      if (isa<TokenType>(type))
        return std::nullopt;
      return type;
    });
  }
};

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// A blocking allreduce of its buffers as one runtime call:
/// `commrt_allreduce` for a single contiguous gradient in full precision,
/// `commrt_fused_allreduce` (which packs, casts to the wire type, reduces
/// and unpacks) otherwise.
template <typename OpT>
struct BlockingAllReduceLowering : public OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpT>::OpAdaptor;

  LogicalResult
  matchAndRewrite(OpT op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    SmallVector<Value> buffers;
    if constexpr (std::is_same_v<OpT, AllReduceOp>)
      buffers.push_back(adaptor.getInput());
    else
      llvm::append_range(buffers, adaptor.getInputs());
    FailureOr<CollectiveArguments> args =
        getCollectiveArguments(cast<CollectiveOpInterface>(*op), buffers);
    if (failed(args))
      return failure();
    RuntimeCallBuilder runtime(op);
    Location loc = op.getLoc();
    Value single = buffers.front();
    if (buffers.size() == 1 && args->wire == COMMRT_WIRE_NONE &&
        args->prescale == 1.0f && !needsGroupForm(op) &&
        isContiguous(cast<MemRefType>(single.getType()))) {
      Value count = rewriter.createOrFold<arith::IndexCastOp>(
          loc, rewriter.getI64Type(), getElementCount(rewriter, loc, single));
      SmallVector<Value> scalars = getScalarArguments(rewriter, loc, *args);
      if (failed(runtime.emitCheckedCall(rewriter, loc, "commrt_allreduce",
                                         {getDataPointer(rewriter, loc, single),
                                          count, scalars[0], scalars[1]})))
        return failure();
      rewriter.eraseOp(op);
      return success();
    }
    StagedBuffers staged = StagedBuffers::stage(rewriter, loc, buffers);
    SmallVector<Value> callArgs;
    FailureOr<std::string> callee = getBucketCall(
        rewriter, op, "commrt_fused_allreduce", staged, *args, callArgs);
    if (failed(callee) ||
        failed(runtime.emitCheckedCall(rewriter, loc, *callee, callArgs)))
      return failure();
    StagedBuffers::writeBack(rewriter, loc, staged.copies);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Replaces a start by what its token converts to: the handle the runtime
/// stored in `slot`, then the staged copies (see RuntimeTypeConverter).
static void replaceStartWithToken(ConversionPatternRewriter &rewriter,
                                  Operation *start, Value slot,
                                  ValueRange stagedCopies) {
  Location loc = start->getLoc();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> token = {
      memref::LoadOp::create(rewriter, loc, slot, zero)};
  llvm::append_range(token, stagedCopies);
  rewriter.replaceOpWithMultiple(start, {token});
}

/// `commrt_fused_allreduce_start` on the start's channel. The handle goes
/// through a stack slot; the token becomes the handle and the staged copies
/// (see RuntimeTypeConverter).
struct StartLowering : public OpConversionPattern<StartOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(StartOp start, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    FailureOr<CollectiveArguments> args = getCollectiveArguments(
        cast<CollectiveOpInterface>(*start), adaptor.getInputs());
    if (failed(args))
      return failure();
    RuntimeCallBuilder runtime(start);
    Location loc = start.getLoc();
    Value slot = allocateI64Array(rewriter, start, 1);
    StagedBuffers staged =
        StagedBuffers::stage(rewriter, loc, adaptor.getInputs());
    SmallVector<Value> callArgs;
    FailureOr<std::string> callee =
        getBucketCall(rewriter, start, "commrt_fused_allreduce_start", staged,
                      *args, callArgs);
    if (failed(callee))
      return failure();
    callArgs.push_back(
        arith::ConstantIntOp::create(rewriter, loc, start.getChannel(), 32));
    callArgs.push_back(getDataPointer(rewriter, loc, slot));
    if (failed(runtime.emitCheckedCall(rewriter, loc, *callee, callArgs)))
      return failure();
    replaceStartWithToken(rewriter, start, slot, staged.copies);
    return success();
  }
};

/// A sharded collective as one runtime call among its group (0: all ranks):
/// `commrt_reduce_scatter` of the flat tensor of the operands' buffers into
/// the shard's, or `commrt_all_gather` of the shard into the flat tensor of
/// the output buffers, with the shard's element count, which the runtime
/// checks against the ranks it runs on; a start calls the `_start` form on
/// its channel and its token becomes the handle and the staged copies.
/// Buffers that are not contiguous go through contiguous copies, staged in
/// operand order as RuntimeTypeConverter expects.
template <typename OpT>
struct ShardedCollectiveLowering : public OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpT>::OpAdaptor;

  static constexpr bool kScatters = std::is_same_v<OpT, ReduceScatterOp> ||
                                    std::is_same_v<OpT, ReduceScatterStartOp>;
  static constexpr bool kStarts = std::is_same_v<OpT, ReduceScatterStartOp> ||
                                  std::is_same_v<OpT, AllGatherStartOp>;

  LogicalResult
  matchAndRewrite(OpT op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    ValueRange operands = adaptor.getOperands();
    // A reduce-scatter's shard is its last operand, an all-gather's its
    // first.
    size_t shardIndex = kScatters ? operands.size() - 1 : 0;
    SmallVector<Value> wholes;
    for (auto [index, operand] : llvm::enumerate(operands))
      if (index != shardIndex)
        wholes.push_back(operand);
    FailureOr<CollectiveArguments> args =
        getCollectiveArguments(cast<CollectiveOpInterface>(*op), wholes);
    if (failed(args))
      return failure();
    Location loc = op.getLoc();
    FailureOr<Value> group = emitGroupHandleOrAll(rewriter, op);
    if (failed(group))
      return failure();
    Value slot;
    if constexpr (kStarts)
      slot = allocateI64Array(rewriter, op, 1);
    StagedBuffers staged = StagedBuffers::stage(rewriter, loc, operands);
    Value shard = staged.contiguous[shardIndex];
    SmallVector<Value> contiguousWholes;
    for (auto [index, buffer] : llvm::enumerate(staged.contiguous))
      if (index != shardIndex)
        contiguousWholes.push_back(buffer);
    SmallVector<Value> arrays = getBufferArrays(rewriter, op, contiguousWholes);
    Value shardPointer = getDataPointer(rewriter, loc, shard);
    Value shardCount = rewriter.createOrFold<arith::IndexCastOp>(
        loc, rewriter.getI64Type(), getElementCount(rewriter, loc, shard));
    SmallVector<Value> scalars = getScalarArguments(rewriter, loc, *args);
    SmallVector<Value> callArgs = {*group};
    if constexpr (kScatters)
      callArgs.append({arrays[0], arrays[1], arrays[2], shardPointer,
                       shardCount, scalars[0], scalars[1], scalars[2],
                       scalars[3]});
    else
      callArgs.append({shardPointer, shardCount, arrays[0], arrays[1],
                       arrays[2], scalars[0], scalars[2], scalars[3]});
    std::string callee =
        kScatters ? "commrt_reduce_scatter" : "commrt_all_gather";
    if constexpr (kStarts) {
      callee += "_start";
      callArgs.push_back(
          arith::ConstantIntOp::create(rewriter, loc, op.getChannel(), 32));
      callArgs.push_back(getDataPointer(rewriter, loc, slot));
    }
    if (failed(RuntimeCallBuilder(op).emitCheckedCall(rewriter, loc, callee,
                                                      callArgs)))
      return failure();
    if constexpr (kStarts) {
      replaceStartWithToken(rewriter, op, slot, staged.copies);
    } else {
      StagedBuffers::writeBack(rewriter, loc, staged.copies);
      rewriter.eraseOp(op);
    }
    return success();
  }
};

/// `commrt_wait` on the handle of the converted token, then the staged
/// copies go back.
struct WaitLowering : public OpConversionPattern<WaitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WaitOp wait, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    ValueRange token = adaptor.getToken();
    Location loc = wait.getLoc();
    RuntimeCallBuilder runtime(wait);
    if (failed(runtime.emitCheckedCall(rewriter, loc, "commrt_wait",
                                       token.front())))
      return failure();
    StagedBuffers::writeBack(rewriter, loc, token.drop_front());
    rewriter.eraseOp(wait);
    return success();
  }
};

/// The call of a sparse allreduce, blocking or started, on its gradient and
/// residual buffers (staged where they are not contiguous): the gradient
/// receives the reduced gradient and the residual the new residual. Without
/// `chunk_elements`, chunk selection gets the runtime's
/// COMMRT_DEFAULT_CHUNK_ELEMENTS, the attribute's documented default. With
/// `group`, the `commrt_group_` form on the calling rank's group.
struct SparseCall {
  std::string callee;
  SmallVector<Value> arguments;
  StagedBuffers staged;

  static FailureOr<SparseCall> build(OpBuilder &b, Operation *op, Value grad,
                                     Value residual, StringRef callee) {
    auto sparse = cast<SparseCollectiveOpInterface>(op);
    Location loc = op->getLoc();
    SparseCall call;
    // The lossless rows exchange has no residual: the runtime takes null.
    SmallVector<Value, 2> buffers = {grad};
    if (residual)
      buffers.push_back(residual);
    call.staged = StagedBuffers::stage(b, loc, buffers);
    Value contiguousGrad = call.staged.contiguous[0];
    auto i32 = [&](int64_t value) -> Value {
      return arith::ConstantIntOp::create(b, loc, value, 32);
    };
    Value gradPointer = getDataPointer(b, loc, contiguousGrad);
    Value residualPointer =
        residual ? getDataPointer(b, loc, call.staged.contiguous[1])
                 : LLVM::ZeroOp::create(
                       b, loc, LLVM::LLVMPointerType::get(b.getContext()));
    call.arguments = {
        gradPointer,
        residualPointer,
        b.createOrFold<arith::IndexCastOp>(
            loc, b.getI64Type(), getElementCount(b, loc, contiguousGrad)),
        arith::ConstantOp::create(b, loc,
                                  b.getF64FloatAttr(sparse.getDensityValue())),
        i32(static_cast<int64_t>(sparse.getSelect())),
        i32(static_cast<int64_t>(sparse.getExchange())),
        i32(getRuntimeReduce(cast<CollectiveOpInterface>(op).getReduceKind())),
        arith::ConstantIntOp::create(b, loc, sparse.getChunkElementCount(),
                                     64)};
    call.callee = callee.str();
    if (GroupAttr group = cast<CollectiveOpInterface>(op).getProcessGroup()) {
      FailureOr<Value> handle = emitGroupHandle(b, op, group);
      if (failed(handle))
        return failure();
      call.arguments.insert(call.arguments.begin(), *handle);
      call.callee = getGroupFormName(callee);
    }
    return call;
  }
};

/// `commrt_sparse_allreduce` (see SparseCall).
struct SparseAllReduceLowering : public OpConversionPattern<SparseAllReduceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SparseAllReduceOp sparse, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    FailureOr<SparseCall> call =
        SparseCall::build(rewriter, sparse, adaptor.getGrad(),
                          adaptor.getResidualIn(), "commrt_sparse_allreduce");
    if (failed(call) ||
        failed(RuntimeCallBuilder(sparse).emitCheckedCall(
            rewriter, sparse.getLoc(), call->callee, call->arguments)))
      return failure();
    StagedBuffers::writeBack(rewriter, sparse.getLoc(), call->staged.copies);
    rewriter.eraseOp(sparse);
    return success();
  }
};

/// `commrt_sparse_allreduce_start` on the start's channel (see SparseCall);
/// the token becomes the handle and the staged copies, as a dense start's.
struct SparseStartLowering : public OpConversionPattern<SparseStartOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SparseStartOp start, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    Location loc = start.getLoc();
    Value slot = allocateI64Array(rewriter, start, 1);
    FailureOr<SparseCall> call = SparseCall::build(
        rewriter, start, adaptor.getGrad(), adaptor.getResidualIn(),
        "commrt_sparse_allreduce_start");
    if (failed(call))
      return failure();
    call->arguments.push_back(
        arith::ConstantIntOp::create(rewriter, loc, start.getChannel(), 32));
    call->arguments.push_back(getDataPointer(rewriter, loc, slot));
    if (failed(RuntimeCallBuilder(start).emitCheckedCall(
            rewriter, loc, call->callee, call->arguments)))
      return failure();
    replaceStartWithToken(rewriter, start, slot, call->staged.copies);
    return success();
  }
};

/// The step's outputs filled with synthetic gradient values
/// (commrt_fill_gradient) and, with compute-delay, a sleep of what is left
/// of its cost once they are (commrt_sleep_since_us): filling is part of the
/// step's profiled time, as a backward kernel writes its gradients within
/// its own.
struct ComputeLowering : public OpConversionPattern<ComputeOp> {
  ComputeLowering(const TypeConverter &converter, MLIRContext *context,
                  bool computeDelay)
      : OpConversionPattern(converter, context), computeDelay(computeDelay) {}

  LogicalResult
  matchAndRewrite(ComputeOp compute, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    Location loc = compute.getLoc();
    RuntimeCallBuilder calls(compute);
    Type f64 = rewriter.getF64Type();
    Value began;
    if (computeDelay) {
      FailureOr<func::FuncOp> now = calls.getFunction(
          rewriter, loc, "commrt_time_us", rewriter.getFunctionType({}, {f64}));
      if (failed(now))
        return failure();
      began =
          func::CallOp::create(rewriter, loc, *now, ValueRange()).getResult(0);
    }
    for (Value output : adaptor.getOutputs()) {
      auto type = cast<MemRefType>(output.getType());
      FailureOr<commrt_dtype> dtype = getRuntimeDType(type.getElementType());
      if (failed(dtype))
        return compute.emitOpError("cannot lower an output of element type ")
               << type.getElementType()
               << ": the runtime fills f32, f64, f16 and bf16";
      if (!isContiguous(type))
        return compute.emitOpError("cannot lower the non-contiguous output ")
               << type << ": the runtime fills contiguous buffers";
      Value count = rewriter.createOrFold<arith::IndexCastOp>(
          loc, rewriter.getI64Type(), getElementCount(rewriter, loc, output));
      Value code = arith::ConstantIntOp::create(rewriter, loc, *dtype, 32);
      if (failed(calls.emitCheckedCall(
              rewriter, loc, "commrt_fill_gradient",
              {getDataPointer(rewriter, loc, output), count, code})))
        return failure();
    }
    if (computeDelay) {
      FailureOr<func::FuncOp> sleep =
          calls.getFunction(rewriter, loc, "commrt_sleep_since_us",
                            rewriter.getFunctionType({f64, f64}, {}));
      if (failed(sleep))
        return failure();
      Value cost =
          arith::ConstantOp::create(rewriter, loc, compute.getCostUsAttr());
      func::CallOp::create(rewriter, loc, *sleep, ValueRange{cost, began});
    }
    rewriter.eraseOp(compute);
    return success();
  }

private:
  bool computeDelay;
};

/// An op whose one index result is a runtime query: comm.rank and
/// shard.process_linear_index to `commrt_rank`, comm.world_size to
/// `commrt_size`.
template <typename OpT>
struct IndexQueryLowering : public OpConversionPattern<OpT> {
  IndexQueryLowering(const TypeConverter &converter, MLIRContext *context,
                     StringRef query)
      : OpConversionPattern<OpT>(converter, context), query(query) {}

  LogicalResult
  matchAndRewrite(OpT op, typename OpConversionPattern<OpT>::OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    return RuntimeCallBuilder(op).replaceWithIndexQuery(rewriter, op, query);
  }

private:
  StringRef query;
};

/// The process's index along grid axes from the runtime's rank, row-major
/// over the grid (the last axis varies fastest), as the shard dialect
/// documents.
struct ProcessMultiIndexLowering
    : public OpConversionPattern<shard::ProcessMultiIndexOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(shard::ProcessMultiIndexOp multi, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        multi, multi.getGridAttr());
    if (!grid)
      return rewriter.notifyMatchFailure(multi, "no grid");
    Location loc = multi.getLoc();
    FailureOr<Value> rank =
        RuntimeCallBuilder(multi).emitIndexQuery(rewriter, loc, "commrt_rank");
    if (failed(rank))
      return failure();
    ArrayRef<int64_t> shape = grid.getShape();
    SmallVector<int64_t> axes(multi.getAxes().begin(), multi.getAxes().end());
    if (axes.empty())
      axes = llvm::to_vector(llvm::seq<int64_t>(0, shape.size()));
    rewriter.replaceOp(multi,
                       emitGridCoordinates(rewriter, loc, *rank, shape, axes));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertCommToRuntimePass
    : public WithCheckedOptions<
          comm::impl::ConvertCommToRuntimeBase<ConvertCommToRuntimePass>> {
  using WithCheckedOptions::WithCheckedOptions;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    // Say what the runtime cannot do before anything changes, rather than
    // leave ops behind for a later pass to choke on.
    WalkResult checked = module.walk([](Operation *op) {
      if (isa<CommDialect>(op->getDialect()) && failed(checkLowerable(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    FailureOr<std::optional<int64_t>> gridSize = checkShardLowerable(module);
    if (failed(gridSize))
      return signalPassFailure();

    // The transports each function's collectives name, made available on
    // its entry (lowerTransports).
    llvm::MapVector<func::FuncOp, SmallVector<TransportKind, 2>> transports;
    module.walk([&](CollectiveOpInterface collective) {
      std::optional<TransportKind> transport =
          collective.getCollectiveTransport();
      auto func = collective->getParentOfType<func::FuncOp>();
      if (!transport || !func)
        return;
      SmallVector<TransportKind, 2> &named = transports[func];
      if (!llvm::is_contained(named, *transport))
        named.push_back(*transport);
    });

    RuntimeTypeConverter converter;
    RewritePatternSet patterns(context);
    patterns.add<BlockingAllReduceLowering<AllReduceOp>,
                 BlockingAllReduceLowering<FusedAllReduceOp>, StartLowering,
                 WaitLowering, SparseAllReduceLowering, SparseStartLowering,
                 ShardedCollectiveLowering<ReduceScatterOp>,
                 ShardedCollectiveLowering<AllGatherOp>,
                 ShardedCollectiveLowering<ReduceScatterStartOp>,
                 ShardedCollectiveLowering<AllGatherStartOp>,
                 ProcessMultiIndexLowering>(converter, context);
    patterns.add<ComputeLowering>(converter, context, computeDelay);
    patterns.add<IndexQueryLowering<RankOp>,
                 IndexQueryLowering<shard::ProcessLinearIndexOp>>(
        converter, context, "commrt_rank");
    patterns.add<IndexQueryLowering<WorldSizeOp>>(converter, context,
                                                  "commrt_size");

    ConversionTarget target(*context);
    target.addIllegalDialect<CommDialect>();
    target.addIllegalOp<shard::ProcessLinearIndexOp,
                        shard::ProcessMultiIndexOp>();
    target.addLegalDialect<arith::ArithDialect, func::FuncDialect,
                           LLVM::LLVMDialect, memref::MemRefDialect>();
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Both insert at the functions' entries: the rank count is checked
    // first.
    if (failed(lowerTransports(transports)))
      return signalPassFailure();
    if (*gridSize && failed(lowerShardGrids(module, **gridSize)))
      return signalPassFailure();
  }

private:
  /// Every function whose collectives name a transport first makes each of
  /// them available (commrt_use_transport, which returns at once after the
  /// first step): the runtime creates a backend beside the one in use among
  /// all ranks, which a process group's collective cannot do.
  static LogicalResult lowerTransports(
      const llvm::MapVector<func::FuncOp, SmallVector<TransportKind, 2>>
          &transports) {
    for (const auto &[constFunc, named] : transports) {
      func::FuncOp func = constFunc;
      OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
      for (TransportKind transport : named) {
        Value backend = arith::ConstantIntOp::create(
            builder, func.getLoc(), static_cast<int64_t>(transport), 32);
        if (failed(RuntimeCallBuilder(func).emitCheckedCall(
                builder, func.getLoc(), "commrt_use_transport", backend)))
          return failure();
      }
    }
    return success();
  }

  /// Every public function first checks that the job has as many ranks as
  /// the grids have processes; the grids, symbols for planning only, are
  /// erased.
  LogicalResult lowerShardGrids(ModuleOp module, int64_t size) {
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
      Value expected = arith::ConstantIntOp::create(builder, func.getLoc(),
                                                    builder.getI64Type(), size);
      if (failed(RuntimeCallBuilder(func).emitCheckedCall(
              builder, func.getLoc(), "commrt_expect_size", expected)))
        return failure();
    }
    for (shard::GridOp grid :
         llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
      if (!SymbolTable::symbolKnownUseEmpty(grid, module))
        return grid.emitOpError("is still used after the lowering: only "
                                "process indices and imported collectives "
                                "lower to the runtime");
      grid.erase();
    }
    return success();
  }
};

} // namespace
