//===- ShardToComm.cpp - Import shard and StableHLO allreduces ------------===//
//
// Implements `comm-import-shard`: upstream `shard.all_reduce` ops, and on a
// best-effort basis StableHLO's `all_reduce` in generic form, become
// `comm.allreduce` ops with the matching reduction and process group;
// `shard.reduce_scatter` and `shard.all_gather` become `comm.reduce_scatter`
// and `comm.all_gather` where their axis shards the tensor as comm's
// row-major shards do; `shard.all_slice`, which communicates nothing, is
// lowered by upstream's own pattern to the process's slice.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Simplifications.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMIMPORTSHARD
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// The name of StableHLO's allreduce, which is imported in generic form.
constexpr StringLiteral kStableHloAllReduce = "stablehlo.all_reduce";

/// The ranks an imported allreduce runs among.
struct RankSet {
  /// Each rank on its own: nothing is communicated.
  bool selfOnly = false;
  /// The process group; null for all ranks.
  GroupAttr group;
};

/// A collective that passed every check and can be rewritten.
struct ImportPlan {
  ReduceKind reduce;
  RankSet ranks;
  /// For a reduce-scatter or all-gather: the ranks of the group, the number
  /// of shards.
  int64_t shards = 1;
};

/// Whether comm communicates elements of `type` (comm.allreduce's element
/// constraint).
bool isCommElementType(Type type) {
  return isa<FloatType>(type) || type.isSignlessInteger();
}

/// Checks that a collective's elements of type `from` (its operand's) and
/// `to` (its result's) are ones that comm communicates, and that an average
/// is of floating-point values.
LogicalResult checkElementTypes(Operation *op, Type from, Type to,
                                ReduceKind reduce) {
  if (!isCommElementType(to) || !isCommElementType(from))
    return op->emitOpError("cannot be imported: comm communicates floats and "
                           "signless integers, got ")
           << from << " -> " << to;
  if (reduce == ReduceKind::avg && !isa<FloatType>(to))
    return op->emitOpError("cannot be imported: an average of ")
           << to << " elements has no comm equivalent (comm averages "
           << "floating-point gradients only)";
  return success();
}

/// Checks that an allreduce of `input` into `result` can become a
/// comm.allreduce: ranked tensors of one shape, elements that comm
/// communicates and that arith can convert into the result's, and an
/// average only of floating-point values.
LogicalResult checkTypes(Operation *op, Type input, Type result,
                         ReduceKind reduce) {
  auto inputType = dyn_cast<RankedTensorType>(input);
  auto resultType = dyn_cast<RankedTensorType>(result);
  if (!inputType || !resultType)
    return op->emitOpError("cannot be imported: it must reduce ranked tensors "
                           "(run comm-import-shard before bufferization), "
                           "but has ")
           << input << " -> " << result;
  if (inputType.getShape() != resultType.getShape())
    return op->emitOpError("cannot be imported: its operand and result "
                           "shapes differ: ")
           << input << " -> " << result;
  return checkElementTypes(op, inputType.getElementType(),
                           resultType.getElementType(), reduce);
}

/// Converts the elements of the tensor `input` to `elementType` (a no-op
/// when they already have it): between floats by extension or truncation,
/// between integers by sign extension or truncation, and between the two
/// as signed integers, as linalg's default cast does.
Value convertElements(OpBuilder &builder, Location loc, Value input,
                      Type elementType) {
  auto inputType = cast<RankedTensorType>(input.getType());
  Type from = inputType.getElementType();
  if (from == elementType)
    return input;
  Type type = inputType.clone(elementType);
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = elementType.getIntOrFloatBitWidth();
  bool fromFloat = isa<FloatType>(from);
  bool toFloat = isa<FloatType>(elementType);
  if (fromFloat && toFloat) {
    // Floats of one width but different formats (f16, bf16) go through
    // extension then truncation to keep every step a legal arith cast.
    if (fromWidth == toWidth) {
      Value wide = arith::ExtFOp::create(
          builder, loc, inputType.clone(builder.getF32Type()), input);
      return arith::TruncFOp::create(builder, loc, type, wide);
    }
    if (fromWidth < toWidth)
      return arith::ExtFOp::create(builder, loc, type, input);
    return arith::TruncFOp::create(builder, loc, type, input);
  }
  if (!fromFloat && !toFloat) {
    if (fromWidth < toWidth)
      return arith::ExtSIOp::create(builder, loc, type, input);
    return arith::TruncIOp::create(builder, loc, type, input);
  }
  if (toFloat)
    return arith::SIToFPOp::create(builder, loc, type, input);
  return arith::FPToSIOp::create(builder, loc, type, input);
}

/// Replaces the value `result` of an allreduce of `input` by its comm form:
/// the input converted to the result's element type, then reduced as
/// `plan` says (or left as it is when each rank is alone).
void emitAllReduce(OpBuilder &builder, Location loc, Value input, Value result,
                   const ImportPlan &plan) {
  auto resultType = cast<RankedTensorType>(result.getType());
  Value converted =
      convertElements(builder, loc, input, resultType.getElementType());
  if (plan.ranks.selfOnly) {
    result.replaceAllUsesWith(converted);
    return;
  }
  auto allreduce = AllReduceOp::create(
      builder, loc, resultType, converted, plan.reduce, /*wire=*/nullptr,
      /*prescale=*/nullptr, /*name=*/nullptr, plan.ranks.group,
      /*algorithm=*/nullptr, /*transport=*/nullptr);
  result.replaceAllUsesWith(allreduce.getResult());
}

//===----------------------------------------------------------------------===//
// shard.all_reduce
//===----------------------------------------------------------------------===//

/// The comm reduction of a shard reduction, if comm has one.
std::optional<ReduceKind> getReduceKind(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReduceKind::sum;
  case shard::ReductionKind::Max:
    return ReduceKind::max;
  case shard::ReductionKind::Min:
    return ReduceKind::min;
  case shard::ReductionKind::Average:
    return ReduceKind::avg;
  default:
    return std::nullopt;
  }
}

/// The ranks a shard collective over `axes` of `grid` runs among. Axes of
/// static size 1 do not change which ranks meet: when every other axis has
/// size 1 the collective spans all ranks, and when every axis in `axes`
/// has size 1 (or there is none) each rank is alone.
RankSet getRankSet(shard::GridOp grid, ArrayRef<shard::GridAxis> axes) {
  ArrayRef<int64_t> shape = grid.getShape();
  SmallVector<int64_t> sorted(axes.begin(), axes.end());
  llvm::sort(sorted);
  auto isTrivial = [&](int64_t axis) { return shape[axis] == 1; };
  RankSet ranks;
  if (llvm::all_of(sorted, isTrivial)) {
    ranks.selfOnly = true;
    return ranks;
  }
  bool spansAll =
      llvm::all_of(llvm::seq<int64_t>(0, grid.getRank()), [&](int64_t axis) {
        return isTrivial(axis) || llvm::is_contained(sorted, axis);
      });
  if (!spansAll)
    ranks.group =
        GroupAttr::get(grid.getContext(), FlatSymbolRefAttr::get(grid), sorted);
  return ranks;
}

/// The comm reduction of `op`'s shard reduction `kind`, or a diagnostic on
/// `op` naming it where comm has none.
FailureOr<ReduceKind> importReduction(Operation *op,
                                      shard::ReductionKind kind) {
  if (std::optional<ReduceKind> reduce = getReduceKind(kind))
    return *reduce;
  return op->emitOpError("cannot be imported: reduction '")
         << shard::stringifyReductionKind(kind)
         << "' has no comm equivalent (comm reduces with sum, max, min "
            "and average)";
}

/// Checks a shard.all_reduce and says how to import it.
FailureOr<ImportPlan> planShardAllReduce(shard::AllReduceOp op,
                                         SymbolTableCollection &symbolTable) {
  FailureOr<ReduceKind> reduce = importReduction(op, op.getReduction());
  if (failed(reduce))
    return failure();
  if (failed(checkTypes(op, op.getInput().getType(), op.getResult().getType(),
                        *reduce)))
    return failure();
  auto grid =
      symbolTable.lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  assert(grid && "shard.all_reduce verifies that its grid is a shard.grid");
  return ImportPlan{*reduce, getRankSet(grid, op.getGridAxes())};
}

//===----------------------------------------------------------------------===//
// shard.reduce_scatter and shard.all_gather
//===----------------------------------------------------------------------===//

/// Checks a shard.reduce_scatter or shard.all_gather of `whole` (the
/// reduce-scatter's operand, the all-gather's result) into or from `part`
/// along the tensor axis `axis` of both, among the ranks of `gridAxes`, and
/// says how to import it. comm's shards are the tensor seen flat in
/// row-major order, cut into equal pieces: that is sharding along `axis`
/// where every dimension before it is 1 and the ranks divide it, which
/// upstream's partitioner produces for data-parallel sharding along the
/// first axis.
FailureOr<ImportPlan>
planShardedCollective(Operation *op, Type whole, Type part, int64_t axis,
                      FlatSymbolRefAttr gridName,
                      ArrayRef<shard::GridAxis> gridAxes, ReduceKind reduce,
                      SymbolTableCollection &symbolTable) {
  auto wholeType = dyn_cast<RankedTensorType>(whole);
  auto partType = dyn_cast<RankedTensorType>(part);
  if (!wholeType || !partType)
    return op->emitOpError("cannot be imported: it must shard ranked tensors "
                           "(run comm-import-shard before bufferization)");
  if (!wholeType.hasStaticShape() || !partType.hasStaticShape())
    return op->emitOpError("cannot be imported: comm shards tensors of "
                           "static shape, got ")
           << whole << " and " << part;
  // A reduce-scatter's operand is the whole tensor, an all-gather's the
  // part.
  bool gathers = isa<shard::AllGatherOp>(op);
  if (failed(checkElementTypes(
          op, (gathers ? partType : wholeType).getElementType(),
          (gathers ? wholeType : partType).getElementType(), reduce)))
    return failure();
  auto grid = symbolTable.lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  assert(grid && "shard collectives verify that their grid is a shard.grid");
  // The shards follow the ranks' index within the group, which shard
  // linearizes in the order of `gridAxes` and comm's groups in ascending
  // axis order.
  if (!llvm::is_sorted(gridAxes)) {
    InFlightDiagnostic diag =
        op->emitOpError("cannot be imported: its grid_axes [");
    llvm::interleaveComma(gridAxes, diag);
    return diag << "] are not in ascending order, and its shards follow "
                   "that order, where comm's groups order their ranks by "
                   "ascending axes";
  }
  ImportPlan plan{reduce, getRankSet(grid, gridAxes)};
  for (shard::GridAxis gridAxis : gridAxes) {
    int64_t size = grid.getShape()[gridAxis];
    if (ShapedType::isDynamic(size))
      return op->emitOpError("cannot be imported: grid axis ")
             << gridAxis << " of " << gridName
             << " has a dynamic size, and comm needs the number of shards";
    plan.shards *= size;
  }
  ArrayRef<int64_t> leading = wholeType.getShape().take_front(axis);
  if (llvm::any_of(leading, [](int64_t size) { return size != 1; }))
    return op->emitOpError("cannot be imported: it shards tensor axis ")
           << axis << " of " << whole
           << ", and comm shards the tensor in row-major order, which is "
              "sharding along an axis only where every dimension before it "
              "is 1 (transpose the axis to the front first)";
  if (wholeType.getDimSize(axis) != partType.getDimSize(axis) * plan.shards)
    return op->emitOpError("cannot be imported: its shards of ")
           << part << " are not " << plan.shards << " equal pieces of "
           << whole;
  return plan;
}

/// Replaces `op`'s result with the comm form of the sharded collective
/// `plan` says: a reduce-scatter of the operand, converted to the result's
/// element type first as shard does, or an all-gather; the operand itself
/// (converted) where each rank is alone.
void emitShardedCollective(OpBuilder &builder, Operation *op,
                           const ImportPlan &plan) {
  Location loc = op->getLoc();
  Value result = op->getResult(0);
  auto resultType = cast<RankedTensorType>(result.getType());
  Value converted = convertElements(builder, loc, op->getOperand(0),
                                    resultType.getElementType());
  if (plan.ranks.selfOnly) {
    result.replaceAllUsesWith(converted);
    return;
  }
  IntegerAttr shards = builder.getI64IntegerAttr(plan.shards);
  Value replacement;
  if (isa<shard::ReduceScatterOp>(op))
    replacement =
        ReduceScatterOp::create(
            builder, loc, resultType, ValueRange{converted},
            /*shard=*/Value(),
            ReduceKindAttr::get(builder.getContext(), plan.reduce), shards,
            /*wire=*/nullptr, /*prescale=*/nullptr, /*names=*/nullptr,
            plan.ranks.group)
            .getResult();
  else
    replacement = AllGatherOp::create(
                      builder, loc, TypeRange{resultType}, converted,
                      /*outputs=*/ValueRange(), shards, /*wire=*/nullptr,
                      /*prescale=*/nullptr, /*names=*/nullptr, plan.ranks.group)
                      .getResult(0);
  result.replaceAllUsesWith(replacement);
}

/// Checks a shard.reduce_scatter and says how to import it.
FailureOr<ImportPlan>
planShardReduceScatter(shard::ReduceScatterOp op,
                       SymbolTableCollection &symbolTable) {
  FailureOr<ReduceKind> reduce = importReduction(op, op.getReduction());
  if (failed(reduce))
    return failure();
  return planShardedCollective(
      op, op.getInput().getType(), op.getResult().getType(),
      op.getScatterAxis().getSExtValue(), op.getGridAttr(), op.getGridAxes(),
      *reduce, symbolTable);
}

/// Checks a shard.all_gather and says how to import it.
FailureOr<ImportPlan> planShardAllGather(shard::AllGatherOp op,
                                         SymbolTableCollection &symbolTable) {
  return planShardedCollective(
      op, op.getResult().getType(), op.getInput().getType(),
      op.getGatherAxis().getSExtValue(), op.getGridAttr(), op.getGridAxes(),
      ReduceKind::sum, symbolTable);
}

/// Checks that a shard.all_slice can be lowered: the process's place in
/// its group comes from its rank through the grid's shape, which must then
/// be static.
LogicalResult checkShardAllSlice(shard::AllSliceOp op,
                                 SymbolTableCollection &symbolTable) {
  auto grid =
      symbolTable.lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  assert(grid && "shard.all_slice verifies that its grid is a shard.grid");
  if (!llvm::any_of(grid.getShape(), ShapedType::isDynamic))
    return success();
  return op->emitOpError("cannot be imported: grid ")
         << op.getGridAttr()
         << " has a dynamic size, and comm finds each process's place in it "
            "from its rank through the grid's shape";
}

//===----------------------------------------------------------------------===//
// stablehlo.all_reduce (generic form, unregistered)
//===----------------------------------------------------------------------===//

/// The comm reduction that the reduction region of a StableHLO allreduce
/// computes: one block whose two arguments are combined by a single
/// stablehlo.add, stablehlo.maximum or stablehlo.minimum, returned by
/// stablehlo.return.
FailureOr<ReduceKind> getStableHloReduceKind(Operation *op) {
  auto fail = [&](const Twine &what) {
    return op->emitOpError("cannot be imported: its reduction region must "
                           "combine its two arguments with one stablehlo.add, "
                           "stablehlo.maximum or stablehlo.minimum and return "
                           "the result, but ")
           << what;
  };
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock())
    return fail("it has no single-block region");
  Block &body = op->getRegion(0).front();
  if (body.getNumArguments() != 2 || !llvm::hasNItems(body, 2))
    return fail("its region has " + Twine(body.getNumArguments()) +
                " arguments and " + Twine(body.getOperations().size()) +
                " ops");
  Operation &combine = body.front();
  Operation &terminator = body.back();
  StringRef name = combine.getName().getStringRef();
  std::optional<ReduceKind> reduce =
      llvm::StringSwitch<std::optional<ReduceKind>>(name)
          .Case("stablehlo.add", ReduceKind::sum)
          .Case("stablehlo.maximum", ReduceKind::max)
          .Case("stablehlo.minimum", ReduceKind::min)
          .Default(std::nullopt);
  if (!reduce)
    return fail("it combines them with '" + name + "'");
  Value lhs = body.getArgument(0);
  Value rhs = body.getArgument(1);
  ValueRange operands = combine.getOperands();
  bool combinesArguments = operands.size() == 2 &&
                           combine.getNumResults() == 1 &&
                           ((operands[0] == lhs && operands[1] == rhs) ||
                            (operands[0] == rhs && operands[1] == lhs));
  bool returnsResult =
      terminator.getName().getStringRef() == "stablehlo.return" &&
      terminator.getNumOperands() == 1 &&
      terminator.getOperand(0) == combine.getResult(0);
  if (!combinesArguments || !returnsResult)
    return fail("its '" + name + "' is not applied to both arguments and " +
                "returned");
  return *reduce;
}

/// The integer attribute `name` of `module`, if it has one.
std::optional<int64_t> getModuleCount(ModuleOp module, StringRef name) {
  auto attr = dyn_cast_or_null<IntegerAttr>(module->getAttr(name));
  if (!attr)
    return std::nullopt;
  return attr.getInt();
}

/// Checks that a StableHLO allreduce runs among all ranks: `replica_groups`
/// is absent, empty, or one group holding each id of 0..n-1 once (n the
/// module's number of replicas, or of devices with use_global_device_ids,
/// where the module declares them). With several partitions, groups are
/// imported only when they list global device ids: otherwise they hold the
/// replicas of one partition, not all ranks.
LogicalResult checkStableHloGroups(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  std::optional<int64_t> replicas = getModuleCount(module, "mhlo.num_replicas");
  std::optional<int64_t> partitions =
      getModuleCount(module, "mhlo.num_partitions");
  bool globalIds = op->hasAttr("use_global_device_ids");
  if (partitions && *partitions > 1 && !globalIds)
    return op->emitOpError("cannot be imported: the module has ")
           << *partitions
           << " partitions, and replica_groups without "
              "use_global_device_ids group the replicas of each partition";

  Attribute groupsAttr = op->getAttr("replica_groups");
  if (!groupsAttr)
    return success();
  auto groups = dyn_cast<DenseIntElementsAttr>(groupsAttr);
  if (!groups || groups.getType().getRank() != 2)
    return op->emitOpError("cannot be imported: replica_groups must be a "
                           "2-D dense integer attribute, got ")
           << groupsAttr;
  if (groups.empty())
    return success();

  std::optional<int64_t> expected = replicas;
  if (globalIds)
    expected = replicas && partitions
                   ? std::optional<int64_t>(*replicas * *partitions)
                   : std::nullopt;
  auto notAll = [&]() {
    return op->emitOpError("cannot be imported: replica_groups other than one "
                           "group of all replicas are not imported, got ")
           << groups;
  };
  int64_t size = groups.getType().getDimSize(1);
  if (groups.getType().getDimSize(0) != 1 || (expected && size != *expected))
    return notAll();
  SmallVector<bool> seen(size, false);
  for (const APInt &id : groups.getValues<APInt>()) {
    int64_t value = id.getSExtValue();
    if (value < 0 || value >= size || seen[value])
      return notAll();
    seen[value] = true;
  }
  return success();
}

/// Checks a StableHLO allreduce and says how to import it.
FailureOr<ImportPlan> planStableHloAllReduce(Operation *op) {
  if (op->getNumOperands() == 0 || op->getNumOperands() != op->getNumResults())
    return op->emitOpError("cannot be imported: expected one result per "
                           "operand and at least one, got ")
           << op->getNumOperands() << " operands and " << op->getNumResults()
           << " results";
  FailureOr<ReduceKind> reduce = getStableHloReduceKind(op);
  if (failed(reduce) || failed(checkStableHloGroups(op)))
    return failure();
  for (auto [input, result] : llvm::zip(op->getOperands(), op->getResults()))
    if (failed(checkTypes(op, input.getType(), result.getType(), *reduce)))
      return failure();
  return ImportPlan{*reduce, RankSet{}};
}

struct CommImportShardPass
    : public WithCheckedOptions<
          comm::impl::CommImportShardBase<CommImportShardPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  void runOnOperation() final {
    SmallVector<Operation *> candidates, slices;
    getOperation()->walk([&](Operation *op) {
      if (isa<shard::AllReduceOp, shard::ReduceScatterOp, shard::AllGatherOp>(
              op) ||
          op->getName().getStringRef() == kStableHloAllReduce)
        candidates.push_back(op);
      else if (isa<shard::AllSliceOp>(op))
        slices.push_back(op);
    });

    // Check every candidate before rewriting any, so that all problems are
    // reported and a failing module is left as it was.
    SymbolTableCollection symbolTable;
    SmallVector<std::pair<Operation *, ImportPlan>> plans;
    bool failedAny = false;
    for (Operation *op : candidates) {
      FailureOr<ImportPlan> plan = failure();
      if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
        plan = planShardAllReduce(allReduce, symbolTable);
      else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
        plan = planShardReduceScatter(scatter, symbolTable);
      else if (auto gather = dyn_cast<shard::AllGatherOp>(op))
        plan = planShardAllGather(gather, symbolTable);
      else
        plan = planStableHloAllReduce(op);
      if (failed(plan))
        failedAny = true;
      else
        plans.emplace_back(op, *plan);
    }
    for (Operation *op : slices)
      failedAny |=
          failed(checkShardAllSlice(cast<shard::AllSliceOp>(op), symbolTable));
    if (failedAny)
      return signalPassFailure();

    for (auto &[op, plan] : plans) {
      OpBuilder builder(op);
      if (isa<shard::ReduceScatterOp, shard::AllGatherOp>(op)) {
        emitShardedCollective(builder, op, plan);
        op->erase();
        continue;
      }
      for (auto [input, result] :
           llvm::zip(op->getOperands(), op->getResults()))
        emitAllReduce(builder, op->getLoc(), input, result, plan);
      op->erase();
    }
    if (failed(lowerAllSlices(slices, symbolTable)))
      signalPassFailure();
  }

  /// Lowers the shard.all_slice ops `slices` with upstream's pattern, and
  /// folds what it creates (the grid's static sizes, the check that they
  /// divide a static axis) so that what remains is the process's index and
  /// the slice; nothing else in the module is touched. Reports each one
  /// left.
  static LogicalResult lowerAllSlices(SmallVector<Operation *> slices,
                                      SymbolTableCollection &symbolTable) {
    // A slice of no elements is an empty tensor: upstream's slice of it
    // would take offset 0 of a dimension of size 0, which
    // tensor.extract_slice rejects.
    SmallVector<Operation *> nonEmpty;
    for (Operation *op : slices) {
      auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!type || !type.hasStaticShape() || type.getNumElements() != 0) {
        nonEmpty.push_back(op);
        continue;
      }
      OpBuilder builder(op);
      op->getResult(0).replaceAllUsesWith(
          tensor::EmptyOp::create(builder, op->getLoc(), type.getShape(),
                                  type.getElementType())
              .getResult());
      op->erase();
    }
    slices = nonEmpty;
    if (slices.empty())
      return success();
    MLIRContext *context = slices.front()->getContext();
    RewritePatternSet patterns(context);
    shard::populateAllSliceOpLoweringPatterns(patterns, symbolTable);
    shard::populateFoldingPatterns(patterns, symbolTable);
    cf::AssertOp::getCanonicalizationPatterns(patterns, context);
    tensor::CastOp::getCanonicalizationPatterns(patterns, context);
    // The driver may erase a slice once it is dead; the ones it leaves are
    // looked at after it.
    struct SliceEraseListener : RewriterBase::Listener {
      llvm::SmallPtrSet<Operation *, 8> left;
      void notifyOperationErased(Operation *op) override { left.erase(op); }
    } listener;
    listener.left.insert(slices.begin(), slices.end());
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
        .enableConstantCSE(false)
        .setListener(&listener);
    (void)applyOpPatternsGreedily(slices, std::move(patterns), config);
    // Upstream's pattern replaces the slice's uses and leaves it dead.
    bool failedAny = false;
    for (Operation *op : slices) {
      if (!listener.left.contains(op))
        continue;
      if (!op->use_empty()) {
        op->emitOpError("cannot be imported: upstream's all_slice lowering "
                        "did not apply to it");
        failedAny = true;
        continue;
      }
      op->erase();
    }
    return failure(failedAny);
  }
};

} // namespace
