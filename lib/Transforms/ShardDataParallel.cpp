//===- ShardDataParallel.cpp - A step as sharded data parallelism ---------===//
//
// Implements `comm-shard-data-parallel`: rewrites an imported data-parallel
// step (one comm.allreduce per gradient) into ZeRO-2 or ZeRO-3/FSDP form,
// with units of parameters reduce-scattered after their backward and
// all-gathered ahead of their forward (and, fully sharded, of their
// backward), choosing unit size and prefetch depth by the simulated step
// within a memory limit.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepMemory.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include <limits>
#include <map>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMSHARDDATAPARALLEL
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

constexpr llvm::StringLiteral kPassName = "comm-shard-data-parallel";

/// A layer of the imported step, with the parameters its backward produces
/// gradients of.
struct Layer {
  SmallVector<ComputeOp, 1> forward;
  SmallVector<ComputeOp, 1> backward;
  /// Indices into ImportedStep::allreduces.
  SmallVector<size_t> parameters;
};

/// The step as imported from a gradient profile.
struct ImportedStep {
  /// One per gradient, in program order.
  SmallVector<AllReduceOp> allreduces;
  /// In backward order (the order of their first backward step).
  SmallVector<Layer> layers;
  /// The optimizer step that takes the reduced gradients, if any.
  ComputeOp optimizer;
  func::ReturnOp terminator;
};

/// Parameters of whole layers, of one element type, wire type and prescale,
/// sharded, gathered and reduced together (FSDP's flat parameter).
struct Unit {
  /// Indices into ImportedStep::layers, in backward order.
  SmallVector<size_t> layers;
  /// Indices into ImportedStep::allreduces, layer by layer.
  SmallVector<size_t> parameters;
  int64_t elements = 0;
  int64_t bytes = 0;
  Type elementType;
  /// The wire type and prescale of its gradients (comm-lower-precision's).
  TypeAttr wire;
  FloatAttr prescale;
};

/// One plan the search made.
struct Candidate {
  double unitCapMb;
  int64_t prefetch;
  /// Units of backward after its own that a reduce-scatter may take before
  /// it is waited for (and its gradients freed); none: the optimizer's.
  std::optional<size_t> scatterLag;
  size_t numUnits;
  double stepUs;
  double peakBytes;
};

/// Whether `candidate` is a better plan than `incumbent`: faster, or as fast
/// (to float summation noise) and holding less.
bool isBetter(const Candidate &candidate, const Candidate &incumbent) {
  double tolerance = 1e-9 * incumbent.stepUs;
  if (candidate.stepUs < incumbent.stepUs - tolerance)
    return true;
  return candidate.stepUs <= incumbent.stepUs + tolerance &&
         candidate.peakBytes < incumbent.peakBytes;
}

/// Reads `func`'s body as an imported step, or fails with an error on the
/// first op that does not fit.
FailureOr<ImportedStep> readImportedStep(func::FuncOp func) {
  ImportedStep step;
  Block &body = func.getBody().front();
  auto fail = [&](Operation *op) {
    return op->emitError() << kPassName << ": ";
  };
  // Layer numbers are any int64 an attribute holds: std::map, since
  // DenseMap reserves two of them as its empty and tombstone keys (a
  // fuzzer finding, test/Fuzz/ir-layer-int64-max.mlir).
  std::map<int64_t, size_t> layerIndex;
  auto getLayer = [&](int64_t layer) -> Layer & {
    auto [it, inserted] = layerIndex.try_emplace(layer, step.layers.size());
    if (inserted)
      step.layers.emplace_back();
    return step.layers[it->second];
  };
  // The forward steps of each layer.
  std::map<int64_t, SmallVector<ComputeOp, 1>> forward;
  WalkResult walked = func.walk([&](Operation *op) {
    if (!isa<CollectiveOpInterface>(op))
      return WalkResult::advance();
    if (op->getBlock() != &body) {
      fail(op) << "a collective in a nested region cannot be sharded";
      return WalkResult::interrupt();
    }
    auto allreduce = dyn_cast<AllReduceOp>(op);
    if (!allreduce || !allreduce.getResult() || allreduce.getGroupAttr()) {
      fail(op) << "expects the step as imported, one dense comm.allreduce "
                  "in tensor form per gradient among all ranks; shard it "
                  "before other planning passes than comm-lower-precision";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();

  for (Operation &op : body) {
    if (auto compute = dyn_cast<ComputeOp>(op)) {
      std::optional<Phase> phase = compute.getPhase();
      if (phase == Phase::optimizer) {
        bool takesGradients = llvm::any_of(compute.getInputs(), [](Value v) {
          return v.getDefiningOp<AllReduceOp>() != nullptr;
        });
        if (!takesGradients)
          continue;
        if (step.optimizer)
          return fail(compute)
                 << "a second optimizer step takes reduced gradients; a "
                    "sharded step updates its shards in one";
        step.optimizer = compute;
        continue;
      }
      if (!compute.getLayer())
        continue;
      auto layer = static_cast<int64_t>(*compute.getLayer());
      if (phase == Phase::forward)
        forward[layer].push_back(compute);
      else if (phase == Phase::backward)
        getLayer(layer).backward.push_back(compute);
      continue;
    }
    auto allreduce = dyn_cast<AllReduceOp>(op);
    if (!allreduce)
      continue;
    auto type = dyn_cast<RankedTensorType>(allreduce.getInput().getType());
    auto producer = allreduce.getInput().getDefiningOp<ComputeOp>();
    if (!type || !type.hasStaticShape())
      return fail(allreduce) << "a gradient of dynamic shape cannot be "
                                "sharded";
    if (!producer || producer.getPhase() != Phase::backward ||
        !producer.getLayer())
      return fail(allreduce) << "its gradient is not produced by a layer's "
                                "backward comm.compute (phase backward, with "
                                "a layer)";
    for (Operation *user : allreduce.getResult().getUsers())
      if (!isa<func::ReturnOp>(user) &&
          !(isa<ComputeOp>(user) &&
            cast<ComputeOp>(user).getPhase() == Phase::optimizer))
        return fail(allreduce)
               << "its reduced gradient is used by " << user->getName()
               << ", which a sharded step cannot give the whole reduced "
                  "gradient (only the optimizer step and the return may use "
                  "it)";
    Layer &layer = getLayer(static_cast<int64_t>(*producer.getLayer()));
    layer.parameters.push_back(step.allreduces.size());
    step.allreduces.push_back(allreduce);
  }
  step.terminator = cast<func::ReturnOp>(body.getTerminator());

  // Layers without gradients play no part. A layer without a forward step
  // of its own (a profile that timed the forward pass whole) is gathered
  // before the step's first forward step without a layer, if any.
  ComputeOp wholeForward;
  for (ComputeOp compute : body.getOps<ComputeOp>())
    if (compute.getPhase() == Phase::forward && !compute.getLayer()) {
      wholeForward = compute;
      break;
    }
  SmallVector<Layer> layers;
  SmallVector<std::pair<int64_t, size_t>> ordered(layerIndex.begin(),
                                                  layerIndex.end());
  llvm::sort(ordered, [](auto a, auto b) { return a.second < b.second; });
  for (auto [number, index] : ordered) {
    Layer &layer = step.layers[index];
    if (layer.parameters.empty())
      continue;
    auto it = forward.find(number);
    if (it != forward.end())
      layer.forward = it->second;
    else if (wholeForward)
      layer.forward.push_back(wholeForward);
    // Its backward steps take the parameters its forward gathers.
    for (ComputeOp later : layer.forward)
      if (layer.backward.front()->isBeforeInBlock(later))
        return fail(later) << "this forward step of layer " << number
                           << " comes after the layer's backward step, "
                              "which would use parameters not yet gathered";
    layers.push_back(std::move(layer));
  }
  step.layers = std::move(layers);
  return step;
}

/// Groups the layers' parameters, in backward order, into units of one
/// element type, wire type and prescale each, closing a unit once it holds
/// `capBytes` or more (a layer with parameters of several kinds is in a
/// unit of each).
SmallVector<Unit> formUnits(const ImportedStep &step, int64_t capBytes) {
  SmallVector<Unit> units;
  // The unit still open for each kind of parameter.
  using Kind = std::tuple<Type, Attribute, Attribute>;
  llvm::DenseMap<Kind, size_t> open;
  auto getKind = [&](size_t parameter) {
    AllReduceOp allreduce = step.allreduces[parameter];
    return Kind{getElementTypeOrSelf(allreduce.getInput().getType()),
                allreduce.getWireAttr(), allreduce.getPrescaleAttr()};
  };
  for (auto [index, layer] : llvm::enumerate(step.layers)) {
    // A unit closes between layers, never within one.
    llvm::DenseSet<Kind> started;
    for (size_t parameter : layer.parameters) {
      Kind kind = getKind(parameter);
      auto it = open.find(kind);
      if (started.insert(kind).second &&
          (it == open.end() || units[it->second].bytes >= capBytes)) {
        open[kind] = units.size();
        Unit &unit = units.emplace_back();
        std::tie(unit.elementType, unit.wire, unit.prescale) = std::make_tuple(
            std::get<0>(kind), cast_or_null<TypeAttr>(std::get<1>(kind)),
            cast_or_null<FloatAttr>(std::get<2>(kind)));
      }
      Unit &unit = units[open[kind]];
      if (unit.layers.empty() || unit.layers.back() != index)
        unit.layers.push_back(index);
      unit.parameters.push_back(parameter);
      AllReduceOp allreduce = step.allreduces[parameter];
      auto type = cast<RankedTensorType>(allreduce.getInput().getType());
      unit.elements += type.getNumElements();
      unit.bytes += *getGradientBytes(type);
    }
  }
  return units;
}

/// Builds the sharded plan of `units` into `func` (a copy of the imported
/// step, read as `step`).
class ShardedStepBuilder {
public:
  ShardedStepBuilder(func::FuncOp func, ImportedStep &step,
                     ArrayRef<Unit> units, int64_t shards, ShardStage stage,
                     int64_t prefetch, std::optional<size_t> scatterLag,
                     unsigned channels)
      : func(func), step(step), units(units), shards(shards), stage(stage),
        prefetch(prefetch), scatterLag(scatterLag), builder(func.getContext()),
        gatherChannel(channels > 1 ? 1 : 0),
        entry(&func.getBody().front().front()) {}

  void build() {
    addShardArguments();
    gatherForForward();
    if (stage == ShardStage::Full)
      gatherForBackward();
    reduceScatterGradients();
    finishStep();
  }

private:
  /// The gradients, and so the parameters, of `unit` in order.
  SmallVector<AllReduceOp> getAllreduces(const Unit &unit) const {
    SmallVector<AllReduceOp> allreduces;
    for (size_t parameter : unit.parameters)
      allreduces.push_back(step.allreduces[parameter]);
    return allreduces;
  }

  ArrayAttr getNames(const Unit &unit) {
    SmallVector<Attribute> names;
    for (AllReduceOp allreduce : getAllreduces(unit))
      names.push_back(allreduce.getNameAttr()
                          ? static_cast<Attribute>(allreduce.getNameAttr())
                          : builder.getStringAttr(""));
    return builder.getArrayAttr(names);
  }

  RankedTensorType getShardType(const Unit &unit) const {
    // ceil(N / shards), as the reduce-scatter's verifier has it.
    int64_t elements = llvm::divideCeil(unit.elements, shards);
    return RankedTensorType::get({elements}, unit.elementType);
  }

  /// The first compute op of the unit's layers in forward or backward, in
  /// program order; without forward steps, the first op of the step as
  /// imported.
  Operation *getFirst(const Unit &unit, bool forward) const {
    Operation *first = nullptr;
    for (size_t index : unit.layers) {
      const Layer &layer = step.layers[index];
      for (ComputeOp compute : forward ? layer.forward : layer.backward)
        if (!first || compute->isBeforeInBlock(first))
          first = compute;
    }
    return first ? first : entry;
  }

  void addShardArguments() {
    unsigned first = func.getNumArguments();
    for (auto [index, unit] : llvm::enumerate(units)) {
      DictionaryAttr attrs = builder.getDictionaryAttr(
          builder.getNamedAttr("comm.names", getNames(unit)));
      (void)func.insertArgument(first + index, getShardType(unit), attrs,
                                func.getLoc());
      shardArguments.push_back(func.getArgument(first + index));
    }
  }

  /// Starts the all-gather of each of `order`'s units `prefetch` units
  /// before the one that needs it (at `getPoint(unit)`), and waits for it
  /// there; gives each layer's gathered parameters to the layer's compute
  /// ops that `getUsers` lists. The unit `skip` is not gathered (it keeps
  /// what it has), but counts as a unit ahead.
  void
  gatherInOrder(ArrayRef<size_t> order,
                function_ref<Operation *(const Unit &)> getPoint,
                function_ref<SmallVector<ComputeOp>(const Layer &)> getUsers,
                std::optional<size_t> skip) {
    SmallVector<std::pair<size_t, Value>> tokens;
    for (auto [position, unitIndex] : llvm::enumerate(order)) {
      if (unitIndex == skip)
        continue;
      const Unit &unit = units[unitIndex];
      size_t startBefore = position > static_cast<size_t>(prefetch)
                               ? position - static_cast<size_t>(prefetch)
                               : 0;
      builder.setInsertionPoint(getPoint(units[order[startBefore]]));
      auto start = AllGatherStartOp::create(
          builder, func.getLoc(), builder.getType<TokenType>(),
          shardArguments[unitIndex], /*outputs=*/ValueRange(),
          static_cast<uint64_t>(shards), /*wire=*/nullptr,
          /*prescale=*/nullptr, getNames(unit), /*group=*/nullptr,
          static_cast<uint64_t>(gatherChannel), /*priority=*/nullptr);
      tokens.push_back({unitIndex, start.getToken()});
    }
    for (auto [unitIndex, token] : tokens) {
      const Unit &unit = units[unitIndex];
      builder.setInsertionPoint(getPoint(unit));
      SmallVector<Type> wholes;
      for (AllReduceOp allreduce : getAllreduces(unit))
        wholes.push_back(allreduce.getInput().getType());
      auto wait = WaitOp::create(builder, func.getLoc(), wholes, token);
      // The wait returns the unit's parameters layer by layer; each layer's
      // compute takes its own.
      for (size_t index : unit.layers) {
        const Layer &layer = step.layers[index];
        SmallVector<Value> own;
        for (auto [parameter, gathered] :
             llvm::zip(unit.parameters, wait.getResults()))
          if (llvm::is_contained(layer.parameters, parameter))
            own.push_back(gathered);
        for (ComputeOp compute : getUsers(layer))
          compute.getInputsMutable().append(own);
      }
    }
  }

  /// The units in the order their forward or backward begins.
  SmallVector<size_t> getUnitOrder(bool forward) const {
    SmallVector<size_t> order =
        llvm::to_vector(llvm::seq<size_t>(0, units.size()));
    llvm::stable_sort(order, [&](size_t a, size_t b) {
      return getFirst(units[a], forward)
          ->isBeforeInBlock(getFirst(units[b], forward));
    });
    return order;
  }

  void gatherForForward() {
    SmallVector<size_t> order = getUnitOrder(/*forward=*/true);
    lastForwardUnit = order.back();
    // Kept through the backward pass (ZeRO-2), and the last unit's in any
    // case.
    llvm::DenseSet<const Layer *> kept;
    for (const Unit &unit : units)
      if (stage == ShardStage::Grad || &unit == &units[lastForwardUnit])
        for (size_t index : unit.layers)
          kept.insert(&step.layers[index]);
    gatherInOrder(
        order, [&](const Unit &unit) { return getFirst(unit, true); },
        [&](const Layer &layer) {
          SmallVector<ComputeOp> users(layer.forward.begin(),
                                       layer.forward.end());
          if (kept.contains(&layer))
            llvm::append_range(users, layer.backward);
          return users;
        },
        std::nullopt);
  }

  void gatherForBackward() {
    SmallVector<size_t> order = getUnitOrder(/*forward=*/false);
    gatherInOrder(
        order, [&](const Unit &unit) { return getFirst(unit, false); },
        [&](const Layer &layer) {
          return SmallVector<ComputeOp>(layer.backward.begin(),
                                        layer.backward.end());
        },
        lastForwardUnit);
  }

  void reduceScatterGradients() {
    for (const Unit &unit : units) {
      SmallVector<Value> gradients;
      Operation *last = nullptr;
      for (AllReduceOp allreduce : getAllreduces(unit)) {
        gradients.push_back(allreduce.getInput());
        Operation *producer = allreduce.getInput().getDefiningOp();
        if (!last || last->isBeforeInBlock(producer))
          last = producer;
      }
      ReduceKind reduce = getAllreduces(unit).front().getReduce();
      builder.setInsertionPointAfter(last);
      auto start = ReduceScatterStartOp::create(
          builder, func.getLoc(), builder.getType<TokenType>(), gradients,
          /*shard=*/Value(), reduce, static_cast<uint64_t>(shards), unit.wire,
          unit.prescale, getNames(unit),
          /*group=*/nullptr, /*channel=*/0, /*priority=*/nullptr);
      scatterTokens.push_back(start.getToken());
    }
  }

  void finishStep() {
    Operation *waitPoint = step.optimizer ? step.optimizer.getOperation()
                                          : step.terminator.getOperation();
    // Each reduce-scatter is waited for before the optimizer, or with a lag,
    // before the backward of the unit whose reduce-scatter starts
    // `scatterLag` + 1 after its own (where that backward begins before its
    // own start, before that unit's reduce-scatter), which frees its
    // gradients there.
    SmallVector<size_t> scatterOrder =
        llvm::to_vector(llvm::seq<size_t>(0, units.size()));
    llvm::stable_sort(scatterOrder, [&](size_t a, size_t b) {
      return scatterTokens[a].getDefiningOp()->isBeforeInBlock(
          scatterTokens[b].getDefiningOp());
    });
    SmallVector<Value> gradientShards(units.size());
    for (auto [position, unitIndex] : llvm::enumerate(scatterOrder)) {
      Operation *point = waitPoint;
      size_t next = scatterLag ? position + *scatterLag + 1 : units.size();
      if (next < units.size()) {
        size_t nextUnit = scatterOrder[next];
        Operation *start = scatterTokens[unitIndex].getDefiningOp();
        point = getFirst(units[nextUnit], false);
        if (!start->isBeforeInBlock(point))
          point = scatterTokens[nextUnit].getDefiningOp();
      }
      builder.setInsertionPoint(point);
      gradientShards[unitIndex] =
          WaitOp::create(builder, func.getLoc(),
                         TypeRange{getShardType(units[unitIndex])},
                         scatterTokens[unitIndex])
              .getResult(0);
    }
    builder.setInsertionPoint(waitPoint);
    auto isReduced = [](Value value) {
      return value.getDefiningOp<AllReduceOp>() != nullptr;
    };
    SmallVector<Value> returned = gradientShards;
    if (ComputeOp optimizer = step.optimizer) {
      // It updates this rank's shards only: 1/p of the parameters.
      SmallVector<Value> inputs;
      for (Value input : optimizer.getInputs())
        if (!isReduced(input))
          inputs.push_back(input);
      llvm::append_range(inputs, gradientShards);
      llvm::append_range(inputs, shardArguments);
      SmallVector<Type> resultTypes;
      for (const Unit &unit : units)
        resultTypes.push_back(getShardType(unit));
      llvm::append_range(resultTypes, optimizer.getResultTypes());
      auto update = ComputeOp::create(
          builder, optimizer.getLoc(), resultTypes, inputs,
          optimizer.getOutputs(),
          builder.getF64FloatAttr(optimizer.getCostUs().convertToDouble() /
                                  static_cast<double>(shards)),
          optimizer.getNameAttr(), optimizer.getLayerAttr(),
          optimizer.getPhaseAttr());
      for (auto [old, replacement] :
           llvm::zip(optimizer.getResults(),
                     update.getResults().drop_front(units.size())))
        old.replaceAllUsesWith(replacement);
      returned.assign(update.getResults().begin(),
                      update.getResults().begin() + units.size());
      optimizer.erase();
    }
    SmallVector<Value> results;
    for (Value value : step.terminator.getOperands())
      if (!isReduced(value))
        results.push_back(value);
    llvm::append_range(results, returned);
    builder.setInsertionPoint(step.terminator);
    func::ReturnOp::create(builder, step.terminator.getLoc(), results);
    step.terminator.erase();
    for (AllReduceOp allreduce : step.allreduces)
      allreduce.erase();
    func.removeResAttrsAttr();
    func.setType(builder.getFunctionType(
        func.getBody().front().getArgumentTypes(), ValueRange(results)));
  }

  func::FuncOp func;
  ImportedStep &step;
  ArrayRef<Unit> units;
  int64_t shards;
  ShardStage stage;
  int64_t prefetch;
  std::optional<size_t> scatterLag;
  OpBuilder builder;
  int64_t gatherChannel;
  /// The step's first op as imported: what a unit without forward steps
  /// is gathered before.
  Operation *entry;
  SmallVector<Value> shardArguments;
  SmallVector<Value> scatterTokens;
  size_t lastForwardUnit = 0;
};

struct CommShardDataParallelPass
    : public WithCheckedOptions<
          comm::impl::CommShardDataParallelBase<CommShardDataParallelPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    Location loc = UnknownLoc::get(context);
    auto fail = [&](StringRef option) {
      return emitError(loc) << kPassName << ": option '" << option << "': ";
    };
    // The option's parser rejects none; it comes only from C++.
    if (stage == ShardStage::None)
      return fail("stage") << "none is not a stage; leave the pass out";
    if (!(bucketCapMb > 0.0) || std::isinf(bucketCapMb))
      return fail("bucket-cap-mb")
             << "expected a positive finite size in MiB, got " << bucketCapMb;
    if (failed(verifyShardPlanOptions(
            memoryLimitMb, prefetch, "memory-limit-mb", "prefetch",
            [&](StringRef option, const Twine &message) {
              return fail(option) << message;
            })))
      return failure();
    llvm::Expected<DeviceModel> deviceModel = DeviceModel::parse(device);
    if (!deviceModel)
      return fail("device") << llvm::toString(deviceModel.takeError());
    deviceModel_ = std::move(*deviceModel);
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    for (func::FuncOp func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() ||
          func.getBody().front().getOps<AllReduceOp>().empty())
        continue;
      if (failed(shardFunction(module, func)))
        return signalPassFailure();
    }
  }

private:
  LogicalResult shardFunction(ModuleOp module, func::FuncOp func) {
    if (!SymbolTable::symbolKnownUseEmpty(func, module))
      return func.emitError()
             << kPassName
             << ": the function is called, and a sharded step takes and "
                "returns shards instead of its arguments and results";
    llvm::Expected<const ClusterModel &> cluster =
        clusters_.get(resolvePlanningCluster(func, this->cluster, kPassName));
    if (!cluster)
      return func.emitError()
             << kPassName << ": " << llvm::toString(cluster.takeError());
    FailureOr<ImportedStep> step = readImportedStep(func);
    if (failed(step))
      return failure();
    auto shards = static_cast<int64_t>(cluster->ranks);
    double limitBytes = memoryLimitMb * kBytesPerMiB;

    // Every unit size from the cap down, halving until every layer is a unit
    // of its own, each with every prefetch depth and its reduce-scatters
    // waited for at the optimizer or sooner (getLags).
    SmallVector<Candidate> tried;
    std::optional<size_t> best;
    func::FuncOp bestPlan;
    auto discardBest = llvm::make_scope_exit([&] {
      if (bestPlan)
        bestPlan.erase();
    });
    size_t previousUnits = 0;
    size_t mostUnits = formUnits(*step, /*capBytes=*/0).size();
    for (double capMb = bucketCapMb;; capMb /= 2) {
      SmallVector<Unit> units =
          formUnits(*step, static_cast<int64_t>(capMb * kBytesPerMiB));
      if (units.size() != previousUnits) {
        previousUnits = units.size();
        for (int64_t depth : getDepths(units.size()))
          for (std::optional<size_t> lag : getLags(units.size()))
            if (failed(tryPlan(func, units, shards, depth, lag, capMb, *cluster,
                               limitBytes, tried, best, bestPlan)))
              return failure();
      }
      // Halving further cannot split a unit of one layer's parameters of
      // one type.
      if (units.size() == mostUnits)
        break;
    }
    if (!best) {
      double smallest = std::numeric_limits<double>::infinity();
      for (const Candidate &candidate : tried)
        smallest = std::min(smallest, candidate.peakBytes);
      return func.emitError()
             << kPassName << ": option 'memory-limit-mb': no sharded plan "
             << "fits in " << llvm::formatv("{0}", memoryLimitMb.getValue())
             << " MiB per rank; the smallest of " << tried.size()
             << " plans holds "
             << llvm::formatv("{0:f2}", smallest / kBytesPerMiB)
             << " MiB at once"
             << (stage == ShardStage::Grad ? " (stage=full holds less)" : "");
    }
    // The chosen plan becomes the function.
    func.getBody().takeBody(bestPlan.getBody());
    func.setType(bestPlan.getFunctionType());
    func.setAllArgAttrs(bestPlan.getAllArgAttrs());
    func.removeResAttrsAttr();
    const Candidate &chosen = tried[*best];
    Builder builder(func.getContext());
    func->setAttr(
        kShardPlanAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr(
                "stage", builder.getStringAttr(
                             stage == ShardStage::Grad ? "grad" : "full")),
            builder.getNamedAttr("shards", builder.getI64IntegerAttr(shards)),
            builder.getNamedAttr("units",
                                 builder.getI64IntegerAttr(
                                     static_cast<int64_t>(chosen.numUnits))),
            builder.getNamedAttr("unit_cap_mb",
                                 builder.getF64FloatAttr(chosen.unitCapMb)),
            builder.getNamedAttr("prefetch",
                                 builder.getI64IntegerAttr(chosen.prefetch)),
            builder.getNamedAttr(
                "scatter_lag",
                builder.getI64IntegerAttr(
                    chosen.scatterLag ? static_cast<int64_t>(*chosen.scatterLag)
                                      : -1)),
            builder.getNamedAttr("peak_bytes",
                                 builder.getF64FloatAttr(chosen.peakBytes)),
            builder.getNamedAttr("memory_limit_mb",
                                 builder.getF64FloatAttr(memoryLimitMb)),
            builder.getNamedAttr(
                "plans",
                builder.getI64IntegerAttr(static_cast<int64_t>(tried.size()))),
        }));
    return success();
  }

  /// Plans `func` with `units`, prefetch `depth` and scatter `lag` into a
  /// copy, and keeps it as `bestPlan` where it fits `limitBytes` (0: no
  /// limit) and is faster than `tried[*best]`.
  LogicalResult tryPlan(func::FuncOp func, ArrayRef<Unit> units, int64_t shards,
                        int64_t depth, std::optional<size_t> lag, double capMb,
                        const ClusterModel &cluster, double limitBytes,
                        SmallVectorImpl<Candidate> &tried,
                        std::optional<size_t> &best, func::FuncOp &bestPlan) {
    func::FuncOp plan = func.clone();
    auto discard = llvm::make_scope_exit([&] {
      if (plan != bestPlan)
        plan.erase();
    });
    FailureOr<ImportedStep> copy = readImportedStep(plan);
    if (failed(copy))
      return failure();
    ShardedStepBuilder(plan, *copy, units, shards, stage, depth, lag,
                       cluster.channels)
        .build();
    // The step model reads waits after their starts and values after their
    // definitions: a plan that breaks that is this pass's bug, reported.
    if (failed(verify(plan)))
      return func.emitError()
             << kPassName << ": internal error: the plan of " << units.size()
             << " units at prefetch " << depth << " does not verify";
    FailureOr<double> stepUs = simulate(plan, cluster);
    if (failed(stepUs))
      return failure();
    tried.push_back({capMb, depth, lag, units.size(), *stepUs,
                     computeStepMemory(plan).peakBytes});
    const Candidate &candidate = tried.back();
    bool fits = limitBytes <= 0 || candidate.peakBytes <= limitBytes;
    if (fits && (!best || isBetter(candidate, tried[*best]))) {
      best = tried.size() - 1;
      if (bestPlan)
        bestPlan.erase();
      bestPlan = plan;
    }
    return success();
  }

  /// The prefetch depths to try for `numUnits` units: the option's, or
  /// 0..4, 6, 8 and numUnits - 1 (all gathered at once), those below it.
  SmallVector<int64_t> getDepths(size_t numUnits) const {
    int64_t deepest = static_cast<int64_t>(numUnits) - 1;
    if (prefetch >= 0)
      return {std::min<int64_t>(prefetch, deepest)};
    SmallVector<int64_t> depths;
    for (int64_t depth : {0, 1, 2, 3, 4, 6, 8})
      if (depth < deepest)
        depths.push_back(depth);
    depths.push_back(deepest);
    return depths;
  }

  /// The scatter lags to try for `numUnits` units: none, and 1 where a
  /// unit after next exists.
  static SmallVector<std::optional<size_t>> getLags(size_t numUnits) {
    if (numUnits <= 2)
      return {std::nullopt};
    return {std::nullopt, 1};
  }

  /// The simulated time of one step of `plan`.
  FailureOr<double> simulate(func::FuncOp plan, const ClusterModel &cluster) {
    FailureOr<StepModel> model = buildStepModel(plan, cluster, deviceModel_);
    if (failed(model))
      return failure();
    llvm::Expected<StepTimeline> timeline =
        simulateStepModel(*model, cluster, SimulationMode::Step);
    if (!timeline)
      return plan.emitError()
             << kPassName << ": " << llvm::toString(timeline.takeError());
    return timeline->result.stepUs;
  }

  DeviceModel deviceModel_;
  ClusterCache clusters_;
};

} // namespace

LogicalResult comm::verifyShardPlanOptions(
    double memoryLimitMb, int64_t prefetch, StringRef limitOption,
    StringRef prefetchOption,
    function_ref<LogicalResult(StringRef, const Twine &)> fail) {
  if (!(memoryLimitMb >= 0.0) || std::isinf(memoryLimitMb))
    return fail(limitOption,
                "expected a non-negative finite size in MiB (0: no limit), "
                "got " +
                    llvm::formatv("{0}", memoryLimitMb));
  if (prefetch < -1)
    return fail(prefetchOption,
                "expected -1 (by cost) or a unit count of 0 or more, got " +
                    Twine(prefetch));
  return success();
}
