//===- PlanExport.cpp - Planned training steps as JSON plans --------------===//
//
// Implements `--export-plan`: writes the collectives of a planned step (after
// comm-optimize) as a versioned JSON plan that a training loop executes
// without MLIR (python/commopt). Collectives appear in issue order, the order
// of the ops in the step; each names the parameters whose gradients it
// carries, with the element range of each when the planner partitioned a
// gradient into pieces. The format is specified in docs/Plan.md.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Export.h"

#include "ExportNames.h"

#include "CommDialect/CommDialect.h"
#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::comm;

namespace {

/// The elements of one parameter's gradient that a collective carries: the
/// range [offset, offset + count) of the gradient flattened in row-major
/// order.
struct GradientRange {
  std::string name;
  SmallVector<int64_t> shape;
  std::string dtype;
  int64_t offset = 0;
  int64_t count = 0;
  /// In a mixed-wire bucket, whether the gradient travels in the wire type.
  std::optional<bool> narrowed;
};

/// One collective of the plan.
struct PlannedCollective {
  Operation *op;
  SmallVector<GradientRange> gradients;
};

} // namespace

/// Whether `op` is a collective that the plan executes (comm.wait completes a
/// comm.start and is not one).
static bool isPlannedCollective(Operation *op) {
  return isa<CollectiveOpInterface>(op);
}

/// The plan's name of element type `type`, or an empty string when a plan
/// cannot carry it.
static std::string getDtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  return "";
}

/// The gradients that `op` communicates and their parameter names, the
/// unnamed left out.
static std::pair<SmallVector<Value>, SmallVector<StringRef>>
getNamedGradients(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  SmallVector<StringRef> names;
  for (StringRef name : collective.getGradientNames())
    if (!name.empty())
      names.push_back(name);
  return {llvm::to_vector(collective.getGradients()), names};
}

/// Finds the parameter gradient that `value` is, or the piece of it that
/// comm-schedule-overlap cut: a static unit-stride `tensor.extract_slice` of
/// the gradient collapsed to one dimension (or of a 1-D gradient).
static FailureOr<GradientRange> traceGradient(Operation *op, Value value,
                                              StringRef name) {
  GradientRange range;
  range.name = name.str();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return op->emitError() << "export-plan: the gradient of '" << name
                           << "' is not a tensor; export the plan before "
                              "bufferization";
  auto slice = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (slice) {
    auto sourceType = slice.getSourceType();
    if (sourceType.getRank() != 1 || !slice.hasUnitStride() ||
        slice.getStaticOffsets()[0] == ShapedType::kDynamic ||
        slice.getStaticSizes()[0] == ShapedType::kDynamic)
      return op->emitError()
             << "export-plan: the gradient of '" << name
             << "' is a slice that is not a static, contiguous piece of the "
                "flattened parameter";
    range.offset = slice.getStaticOffsets()[0];
    range.count = slice.getStaticSizes()[0];
    value = slice.getSource();
    if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>())
      value = collapse.getSrc();
    type = cast<RankedTensorType>(value.getType());
  }
  if (!type.hasStaticShape())
    return op->emitError() << "export-plan: the gradient of '" << name
                           << "' has a dynamic shape " << type;
  range.shape.assign(type.getShape().begin(), type.getShape().end());
  range.dtype = getDtypeName(type.getElementType());
  if (range.dtype.empty())
    return op->emitError() << "export-plan: the gradient of '" << name
                           << "' has element type " << type.getElementType()
                           << "; plans carry f32, f64, f16 and bf16";
  if (!slice)
    range.count = type.getNumElements();
  return range;
}

/// Collects the collectives of `func` in issue order with their gradients.
static FailureOr<SmallVector<PlannedCollective>>
collectPlan(func::FuncOp func) {
  SmallVector<PlannedCollective> plan;
  WalkResult walked = func.walk([&](Operation *op) {
    if (!isPlannedCollective(op))
      return WalkResult::advance();
    if (isa<ReduceScatterOp, AllGatherOp>(op)) {
      op->emitError() << "export-plan: " << op->getName()
                      << " cannot be exported yet: the training bridge's "
                         "plans allreduce every gradient";
      return WalkResult::interrupt();
    }
    auto [gradients, names] = getNamedGradients(op);
    if (names.size() != gradients.size()) {
      op->emitError() << "export-plan: the collective names " << names.size()
                      << " parameter(s) for " << gradients.size()
                      << " gradient(s); a plan needs the parameter name of "
                         "every gradient (profiles imported with "
                         "--import-grad-profile have them)";
      return WalkResult::interrupt();
    }
    PlannedCollective collective{op, {}};
    std::optional<ArrayRef<bool>> narrowed =
        cast<CollectiveOpInterface>(op).getNarrowedGradients();
    for (auto [index, pair] :
         llvm::enumerate(llvm::zip_equal(gradients, names))) {
      auto [gradient, name] = pair;
      FailureOr<GradientRange> range = traceGradient(op, gradient, name);
      if (failed(range))
        return WalkResult::interrupt();
      if (narrowed)
        range->narrowed = (*narrowed)[index];
      collective.gradients.push_back(std::move(*range));
    }
    plan.push_back(std::move(collective));
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return plan;
}

/// Checks that every parameter keeps one shape and element type across the
/// plan and that its pieces cover its elements exactly once.
static LogicalResult verifyCoverage(func::FuncOp func,
                                    ArrayRef<PlannedCollective> plan) {
  llvm::StringMap<SmallVector<const GradientRange *>> pieces;
  SmallVector<StringRef> order;
  for (const PlannedCollective &collective : plan)
    for (const GradientRange &range : collective.gradients) {
      auto [it, inserted] = pieces.try_emplace(range.name);
      if (inserted)
        order.push_back(it->getKey());
      const GradientRange *first =
          it->second.empty() ? &range : it->second.front();
      if (first->shape != range.shape || first->dtype != range.dtype)
        return collective.op->emitError()
               << "export-plan: parameter '" << range.name
               << "' appears with two shapes or element types";
      it->second.push_back(&range);
    }
  for (StringRef name : order) {
    SmallVector<const GradientRange *> &ranges = pieces[name];
    llvm::sort(ranges, [](const GradientRange *a, const GradientRange *b) {
      return a->offset < b->offset;
    });
    int64_t elements = 1;
    for (int64_t dim : ranges.front()->shape)
      elements *= dim;
    int64_t covered = 0;
    for (const GradientRange *range : ranges) {
      if (range->offset != covered)
        return emitError(func.getLoc())
               << "export-plan: parameter '" << name << "' is "
               << (range->offset < covered ? "communicated twice"
                                           : "not communicated whole")
               << " (elements from " << std::min(range->offset, covered)
               << " on)";
      covered += range->count;
    }
    if (covered != elements)
      return emitError(func.getLoc())
             << "export-plan: parameter '" << name << "' has " << elements
             << " elements but the plan communicates " << covered;
  }
  return success();
}

/// Whether `func` holds a collective that a plan carries.
static bool holdsCollective(func::FuncOp func) {
  WalkResult walked = func.walk([](Operation *op) {
    return isPlannedCollective(op) ? WalkResult::interrupt()
                                   : WalkResult::advance();
  });
  return walked.wasInterrupted();
}

/// The one function of `module` that holds collectives, or the one named
/// `name`.
static FailureOr<func::FuncOp> findStep(ModuleOp module, StringRef name) {
  if (!name.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func || func.isExternal())
      return emitError(module.getLoc())
             << "export-plan: no function @" << name << " with a body";
    return func;
  }
  SmallVector<func::FuncOp> steps;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (holdsCollective(func))
      steps.push_back(func);
  }
  if (steps.empty())
    return emitError(module.getLoc())
           << "export-plan: no function of the module holds a collective";
  if (steps.size() > 1) {
    InFlightDiagnostic diag = emitError(module.getLoc())
                              << "export-plan: several functions hold "
                                 "collectives (";
    llvm::interleaveComma(steps, diag, [&](func::FuncOp func) {
      diag << "@" << func.getSymName();
    });
    return diag << "); name one with --plan-function";
  }
  return steps.front();
}

/// Writes the attributes of `collective` that say how it communicates.
static void writeCollective(llvm::json::OStream &json,
                            const PlannedCollective &collective) {
  Operation *op = collective.op;
  auto interface = cast<CollectiveOpInterface>(op);
  auto sparse = dyn_cast<SparseCollectiveOpInterface>(op);
  json.attribute("kind", sparse ? "sparse" : "dense");
  json.attribute("op", op->getName().getStringRef());
  json.attribute("reduce", stringifyReduceKind(interface.getReduceKind()));
  // A collective among the process groups of a grid names them; one among
  // all ranks has no `group`.
  if (auto group = op->getAttrOfType<GroupAttr>("group")) {
    json.attributeObject("group", [&] {
      json.attribute("grid", group.getGrid().getValue());
      if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
              op, group.getGrid()))
        json.attributeArray("shape", [&] {
          for (int64_t size : grid.getShape())
            json.value(size);
        });
      json.attributeArray("axes", [&] {
        for (int64_t axis : group.getAxes())
          json.value(axis);
      });
    });
  }
  Type wire = interface.getWireType();
  json.attribute("wire", wire ? getDtypeName(wire) : "none");
  json.attribute("prescale", interface.getPrescaleFactor().value_or(1.0));
  // Where the plan chose the backend that carries it (#comm.transport).
  if (std::optional<TransportKind> transport =
          interface.getCollectiveTransport())
    json.attribute("transport", stringifyTransportKind(*transport));
  // A started collective, dense or sparse, runs on its channel.
  if (auto start = dyn_cast<StartedCollectiveOpInterface>(op)) {
    json.attribute("channel", static_cast<int64_t>(start.getChannel()));
    if (std::optional<int64_t> priority = start.getPriority())
      json.attribute("priority", *priority);
    else
      json.attribute("priority", nullptr);
  } else {
    // A collective the plan did not schedule runs where it stands, to
    // completion before the step goes on.
    json.attribute("channel", nullptr);
    json.attribute("priority", nullptr);
  }
  if (sparse)
    json.attributeObject("sparse", [&] {
      json.attribute("select", stringifySelectKind(sparse.getSelect()));
      json.attribute("density", sparse.getDensityValue());
      json.attribute("exchange", stringifyExchangeKind(sparse.getExchange()));
      // Chunk selection's chunk size; the rows exchange's row length.
      if (sparse.getSelect() == SelectKind::chunk ||
          sparse.getSelect() == SelectKind::rows)
        json.attribute("chunk_elements", sparse.getChunkElementCount());
    });
  if (auto startUs = op->getAttrOfType<FloatAttr>("comm.start_us"))
    json.attribute("start_us", startUs.getValueAsDouble());
  if (auto endUs = op->getAttrOfType<FloatAttr>("comm.end_us"))
    json.attribute("end_us", endUs.getValueAsDouble());
  json.attributeArray("gradients", [&] {
    for (const GradientRange &range : collective.gradients)
      json.object([&] {
        json.attribute("name", range.name);
        json.attributeArray("shape", [&] {
          for (int64_t dim : range.shape)
            json.value(dim);
        });
        json.attribute("dtype", range.dtype);
        json.attribute("offset", range.offset);
        json.attribute("count", range.count);
        // Only in a mixed-wire bucket: whether it travels in `wire`.
        if (range.narrowed)
          json.attribute("narrowed", *range.narrowed);
      });
  });
}

namespace {
/// A plan's sparse warm-up (comm-record-cluster's sparse-warmup-steps).
struct SparseWarmup {
  int64_t steps;
  double startDensity;
};
} // namespace

/// The module's comm.sparse_warmup, if any; an error where it is not
/// {steps = N : i64, start_density = D : f64} with N > 0 and D in (0, 1].
static FailureOr<std::optional<SparseWarmup>> getSparseWarmup(ModuleOp module) {
  Attribute attr = module->getAttr(kSparseWarmupAttrName);
  if (!attr)
    return std::optional<SparseWarmup>();
  auto dict = dyn_cast<DictionaryAttr>(attr);
  auto steps = dict ? dict.getAs<IntegerAttr>("steps") : IntegerAttr();
  auto start = dict ? dict.getAs<FloatAttr>("start_density") : FloatAttr();
  if (!steps || !start || steps.getInt() <= 0 ||
      !(start.getValueAsDouble() > 0.0 && start.getValueAsDouble() <= 1.0))
    return module.emitError()
           << "export-plan: " << kSparseWarmupAttrName
           << " must be {steps = N : i64, start_density = D : f64} with N > 0 "
              "and D in (0, 1], got "
           << attr;
  return std::optional<SparseWarmup>(
      SparseWarmup{steps.getInt(), start.getValueAsDouble()});
}

LogicalResult mlir::comm::exportPlan(ModuleOp module, raw_ostream &os,
                                     const PlanExportOptions &options) {
  FailureOr<func::FuncOp> step = findStep(module, options.function);
  if (failed(step))
    return failure();
  func::FuncOp func = *step;
  // The world size: the ranks of the cluster the estimate recorded, else
  // of the cluster comm-record-cluster (or comm-optimize) recorded on the
  // module.
  auto estimate = func->getAttrOfType<DictionaryAttr>("comm.estimate");
  auto estimatedCluster =
      estimate ? estimate.getAs<StringAttr>("cluster") : StringAttr();
  auto estimatedRanks =
      estimate ? estimate.getAs<IntegerAttr>("ranks") : IntegerAttr();
  std::string clusterName;
  int64_t worldSize = 0;
  if (estimatedCluster && estimatedRanks) {
    clusterName = estimatedCluster.getValue().str();
    worldSize = estimatedRanks.getInt();
  } else if (std::optional<PlanningCluster> recorded =
                 getRecordedCluster(module)) {
    llvm::Expected<std::shared_ptr<const ClusterModel>> cluster =
        loadSharedCluster(recorded->spec);
    if (!cluster)
      return emitError(module.getLoc())
             << "export-plan: the module's cluster ('" << recorded->spec
             << "', its comm.cluster) gives the plan's world size but "
                "cannot be read: "
             << llvm::toString(cluster.takeError());
    clusterName = recorded->spec;
    worldSize = (*cluster)->ranks;
  } else {
    return emitError(func.getLoc())
           << "export-plan: @" << func.getSymName()
           << " records no estimate and its module no cluster, so the plan "
              "would not know its world size: plan it with comm-optimize "
              "cluster=... (or run comm-record-cluster), or estimate it "
              "(estimate=step, or comm-estimate last)";
  }
  FailureOr<SmallVector<PlannedCollective>> plan = collectPlan(func);
  if (failed(plan) || failed(verifyCoverage(func, *plan)))
    return failure();
  FailureOr<std::optional<SparseWarmup>> warmup = getSparseWarmup(module);
  if (failed(warmup))
    return failure();
  std::string modelName = getModelName(module);
  if (failed(detail::checkExportedName(module, "export-plan", "the model name",
                                       modelName)) ||
      failed(detail::checkExportedName(func, "export-plan", "function name",
                                       func.getSymName())))
    return failure();

  llvm::json::OStream json(os, /*IndentSize=*/1);
  json.object([&] {
    json.attribute("format", "commopt-plan");
    json.attribute("version", kPlanFormatVersion);
    json.attribute("generator", "commopt-translate --export-plan");
    json.attribute("model", modelName);
    json.attribute("function", func.getSymName());
    json.attribute("world_size", worldSize);
    // Only where the plan was made for it: the bridge then corrects the
    // momentum of the sparse gradients by default.
    if (isMomentumCorrected(module))
      json.attribute("momentum_correction", true);
    if (*warmup)
      json.attributeObject("sparse_warmup", [&] {
        json.attribute("steps", (*warmup)->steps);
        json.attribute("start_density", (*warmup)->startDensity);
      });
    json.attributeObject("cluster", [&] {
      json.attribute("name", clusterName);
      json.attribute("ranks", worldSize);
      // The description itself where the name still resolves (a preset, or
      // a file reachable from here), so that the plan can be re-estimated.
      llvm::Expected<ClusterModel> cluster = ClusterModel::parse(clusterName);
      if (cluster)
        json.attribute("description", cluster->toJSON());
      else
        llvm::consumeError(cluster.takeError());
    });
    if (estimate)
      json.attributeObject("estimate", [&] {
        for (StringRef key :
             {"step_us", "compute_us", "communication_us", "exposed_us",
              "cpu_us", "cpu_bound_us", "network_idle_us", "host_bound_us"})
          if (auto value = estimate.getAs<FloatAttr>(key))
            json.attribute(key, value.getValueAsDouble());
        if (auto mode = estimate.getAs<StringAttr>("mode"))
          json.attribute("mode", mode.getValue());
      });
    json.attributeArray("collectives", [&] {
      for (const PlannedCollective &collective : *plan)
        json.object([&] { writeCollective(json, collective); });
    });
  });
  os << "\n";
  return success();
}
