//===- PlanSearch.cpp - comm-optimize's search over its own options -------===//
//
// The options of comm-optimize that change the plan (wire precision, sparse
// gradients, partitioning) are freedoms, not orders: each can make a plan
// slower on some cluster (f32 gradients below wire-min-bytes split f16
// buckets; a sparse exchange can cost more than the dense allreduce it
// replaces). The search plans the module with every subset of the freedoms
// the user turned on, simulates each plan with the cost model, and keeps
// the fastest (as the lossy margin below weighs it), so turning an option
// on never gives a slower plan in the model. Each option set is bucketed once
// and scheduled on every channel count from the plan's down to one: concurrent
// collectives share the links, so more channels are not always faster. Every
// plan with sparse gradients is then refined: each of them is tried dense in
// turn, and kept dense where the step simulates no slower (comm-sparsify prices
// a gradient's collective alone, the search the overlapped step), and on a tie
// the plan with fewer sparse collectives wins. A lossy choice (sparse
// gradients, a narrower wire type) must make the step faster by more than
// `lossy-margin` of it, for each of the two kinds a plan makes; otherwise the
// lossless plan is kept, and the faster one it declined is marked. What it
// compared is recorded on the module (comm.plan_search) for comm-estimate's
// report. The best plan so far is kept, with the diagnostics its planning gave,
// and becomes the module's body at the end: the chosen plan is not made twice.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"

#include "CommOpt/Analysis/DeviceModel.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::comm;

namespace {

/// A diagnostic of a candidate's planning, kept to be shown if its plan
/// is chosen.
struct CapturedDiagnostic {
  Location location;
  DiagnosticSeverity severity;
  std::string message;
  SmallVector<std::pair<Location, std::string>> notes;
};

/// A candidate's planned module and the diagnostics its planning gave.
struct Plan {
  OwningOpRef<ModuleOp> module;
  SmallVector<CapturedDiagnostic> diagnostics;
};

/// One plan of the search: the options it was made with, and its simulated
/// time (the sum over the module's functions), or why it failed.
struct Candidate {
  std::unique_ptr<OptimizeOptions> options;
  std::string label;
  std::optional<double> stepUs;
  std::string failure;
  /// The sparse collectives of its plan, and the parameter names of those
  /// that have one, in issue order.
  size_t sparseCollectives = 0;
  SmallVector<std::string> sparseNames;
  /// The dense collectives of its plan that narrow a gradient on the wire.
  size_t narrowedCollectives = 0;
  /// While it is planned and the best so far: its plan.
  std::optional<Plan> plan;

  /// How many kinds of lossy choice its plan makes: sparse gradients, and
  /// gradients narrowed on the wire.
  int lossyKinds() const {
    return (sparseCollectives > 0 ? 1 : 0) + (narrowedCollectives > 0 ? 1 : 0);
  }

  /// Its step as the search weighs it: each kind of lossy choice must buy
  /// `margin` of the step, so the simulated step is taken as that much
  /// longer for each.
  double getWeighedUs(double margin) const {
    return *stepUs * (1.0 + margin * lossyKinds());
  }

  /// Whether it beats `other` with `margin` for each lossy kind: faster as
  /// weighed, or as fast with fewer sparse, then narrowed collectives
  /// (compression changes the numerics, so it must pay). With margin 0:
  /// faster, then as fast with fewer lossy collectives.
  bool isBetterThan(const Candidate &other, double margin) const {
    if (!stepUs)
      return false;
    if (!other.stepUs)
      return true;
    double us = getWeighedUs(margin), otherUs = other.getWeighedUs(margin);
    if (us != otherUs)
      return us < otherUs;
    if (sparseCollectives != other.sparseCollectives)
      return sparseCollectives < other.sparseCollectives;
    return narrowedCollectives < other.narrowedCollectives;
  }
};

/// A plan-changing option of comm-optimize that the search may turn off.
struct Freedom {
  /// Whether the user turned it on.
  bool (*isOn)(const OptimizeOptions &);
  /// Turns it off.
  void (*turnOff)(OptimizeOptions &);
  /// "name=value", as comm-optimize spells it.
  std::string (*describe)(const OptimizeOptions &);
  /// The index in kFreedoms of the freedom without which this one changes
  /// nothing (sparse-overlap without sparse), or -1.
  int dependsOn = -1;
};

constexpr Freedom kFreedoms[] = {
    {[](const OptimizeOptions &o) { return o.wire != WirePrecision::None; },
     [](OptimizeOptions &o) { o.wire = WirePrecision::None; },
     [](const OptimizeOptions &o) {
       return std::string(o.wire == WirePrecision::None  ? "wire=none"
                          : o.wire == WirePrecision::F16 ? "wire=f16"
                                                         : "wire=bf16");
     }},
    {[](const OptimizeOptions &o) { return o.sparse.getValue(); },
     [](OptimizeOptions &o) { o.sparse = false; },
     [](const OptimizeOptions &o) {
       return std::string(o.sparse ? "sparse=true" : "sparse=false");
     }},
    // Only with sparse gradients (kFreedoms[1]).
    {[](const OptimizeOptions &o) {
       return o.sparse.getValue() && o.sparseOverlap.getValue();
     },
     [](OptimizeOptions &o) { o.sparseOverlap = false; },
     [](const OptimizeOptions &o) {
       return std::string(o.sparseOverlap ? "sparse-overlap=true"
                                          : "sparse-overlap=false");
     },
     /*dependsOn=*/1},
    {[](const OptimizeOptions &o) { return o.partitionMb > 0.0; },
     [](OptimizeOptions &o) { o.partitionMb = 0.0; },
     [](const OptimizeOptions &o) {
       std::string text;
       llvm::raw_string_ostream(text)
           << llvm::format("partition-mb=%g", o.partitionMb.getValue());
       return text;
     }},
};

/// The option sets to compare: every subset of the freedoms `options` turns
/// on, the full set first (the plan kept on a tie); only the full set with
/// `search=false`. A freedom that depends on another is not also turned off
/// where that one is off: the plan would be the same.
std::vector<Candidate> enumerateCandidates(const OptimizeOptions &options) {
  SmallVector<const Freedom *> on;
  for (const Freedom &freedom : kFreedoms)
    if (options.search && freedom.isOn(options))
      on.push_back(&freedom);
  // Whether `freedom` changes nothing in subset `kept`: the freedom it
  // depends on is on for the search but turned off in `kept`.
  auto isMoot = [&](const Freedom *freedom, unsigned kept) {
    if (freedom->dependsOn < 0)
      return false;
    auto required = llvm::find(on, &kFreedoms[freedom->dependsOn]);
    return required != on.end() && !(kept & (1u << (required - on.begin())));
  };
  auto isRedundant = [&](unsigned kept) {
    for (auto [bit, freedom] : llvm::enumerate(on))
      if (!(kept & (1u << bit)) && isMoot(freedom, kept))
        return true;
    return false;
  };
  std::vector<Candidate> candidates;
  // Subset `kept` keeps freedom i when bit i is set; all bits first.
  for (unsigned kept = 1u << on.size(); kept-- > 0;) {
    if (isRedundant(kept))
      continue;
    Candidate candidate;
    candidate.options = std::make_unique<OptimizeOptions>();
    candidate.options->copyOptionValuesFrom(options);
    for (auto [index, freedom] : llvm::enumerate(on))
      if (!(kept & (1u << index)))
        freedom->turnOff(*candidate.options);
    SmallVector<std::string> parts;
    // "sparse=false" says it all.
    for (const Freedom *freedom : on)
      if (!isMoot(freedom, kept))
        parts.push_back(freedom->describe(*candidate.options));
    candidate.label = llvm::join(parts, " ");
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

struct PlanSearchPass
    : public PassWrapper<PlanSearchPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlanSearchPass)

  explicit PlanSearchPass(const OptimizeOptions &options) {
    this->options.copyOptionValuesFrom(options);
  }
  PlanSearchPass(const PlanSearchPass &other)
      : PassWrapper<PlanSearchPass, OperationPass<ModuleOp>>(other) {
    options.copyOptionValuesFrom(other.options);
  }

  StringRef getArgument() const final { return "comm-plan-search"; }
  StringRef getDescription() const final {
    return "comm-optimize's search over its options (not registered)";
  }

  void getDependentDialects(DialectRegistry &registry) const final {
    OpPassManager pm(ModuleOp::getOperationName());
    buildPlanningPasses(pm, options);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    std::vector<Candidate> optionSets = enumerateCandidates(options);
    // Without a freedom to compare, the plan is made on the module itself.
    // Channels alone are compared only where `channels` was given: the
    // default plan is made once, which keeps planning 100,000 gradients
    // fast (BENCHMARKS.md).
    if (!options.search ||
        (optionSets.size() == 1 && options.channels.getValue() <= 1)) {
      if (failed(planInPlace(module, *optionSets.front().options)))
        return signalPassFailure();
      return;
    }
    if (failed(loadModels(module)))
      return signalPassFailure();
    SmallVector<int64_t> channelCounts = getChannelCounts();
    if (optionSets.size() == 1 && channelCounts.size() == 1) {
      if (failed(planInPlace(module, *optionSets.front().options)))
        return signalPassFailure();
      return;
    }
    candidates.clear();
    bestIndex = fastestIndex = 0;
    for (Candidate &optionSet : optionSets)
      evaluateOptionSet(module, optionSet, channelCounts);
    // Every plan with sparse gradients, not only the fastest, so that the
    // plans compared with more options turned on include those compared
    // with fewer: the search stays never worse.
    size_t count = candidates.size();
    for (size_t index = 0; index < count; ++index)
      if (candidates[index].options->sparse && candidates[index].stepUs)
        if (std::optional<Candidate> refined =
                refineSparse(module, candidates[index]))
          consider(std::move(*refined));

    Candidate &chosen = candidates[bestIndex];
    if (!chosen.plan) {
      // Every candidate failed: planning the module itself shows the user
      // why.
      if (failed(planInPlace(module, *chosen.options)))
        return signalPassFailure();
    } else {
      adopt(module, chosen);
    }
    record(module, candidates, chosen, candidates[fastestIndex],
           options.lossyMargin);
  }

private:
  /// Makes the plan of `planOptions` on `module` itself, its diagnostics
  /// going to the user.
  LogicalResult planInPlace(ModuleOp module,
                            const OptimizeOptions &planOptions) {
    OpPassManager pm(ModuleOp::getOperationName());
    buildPlanningPasses(pm, planOptions);
    return runPipeline(pm, module);
  }

  /// The cluster and device the candidates are simulated on: comm-optimize's
  /// own (the cluster recorded on the module by comm-record-cluster).
  LogicalResult loadModels(ModuleOp module) {
    PlanningCluster target =
        resolvePlanningCluster(module, options.cluster, "comm-optimize");
    llvm::Expected<std::shared_ptr<const ClusterModel>> loadedCluster =
        loadSharedCluster(target.spec);
    if (!loadedCluster)
      return module.emitError() << "comm-optimize: option 'cluster': "
                                << llvm::toString(loadedCluster.takeError());
    cluster = std::move(*loadedCluster);
    llvm::Expected<DeviceModel> loadedDevice =
        DeviceModel::parse(options.device);
    if (!loadedDevice)
      return module.emitError() << "comm-optimize: option 'device': "
                                << llvm::toString(loadedDevice.takeError());
    device = std::move(*loadedDevice);
    return success();
  }

  /// The channel counts to compare, most first: every count from the
  /// plan's (`channels`, else the cluster's) down to one. More channels let
  /// a collective start while another is in flight, but concurrent
  /// collectives share the links, so fewer can be faster. Only the plan's
  /// own count (0) where `channels` asks for more than the cluster has: the
  /// cost model cannot price those plans, so none would be compared.
  SmallVector<int64_t> getChannelCounts() const {
    auto clusterChannels = static_cast<int64_t>(cluster->channels);
    int64_t most =
        options.channels > 0 ? options.channels.getValue() : clusterChannels;
    if (most <= 1 || most > clusterChannels)
      return {0};
    SmallVector<int64_t> counts;
    for (int64_t count = most; count >= 1; --count)
      counts.push_back(count);
    return counts;
  }

  /// Plans `optionSet`'s bucketing on a copy of `module` once, then its
  /// schedule with each of `channelCounts` (0: the options' own), and
  /// considers each plan.
  void evaluateOptionSet(ModuleOp module, const Candidate &optionSet,
                         ArrayRef<int64_t> channelCounts) {
    Candidate bucketed = withChannels(optionSet, channelCounts.front(),
                                      channelCounts.size() > 1);
    bucketed.plan.emplace();
    bucketed.plan->module = module.clone();
    if (failed(runCaptured(bucketed, [&](OpPassManager &pm) {
          buildBucketingPasses(pm, *bucketed.options);
        }))) {
      for (int64_t count : channelCounts) {
        Candidate failed =
            withChannels(optionSet, count, channelCounts.size() > 1);
        failed.failure = bucketed.failure;
        consider(std::move(failed));
      }
      return;
    }
    for (auto [index, count] : llvm::enumerate(channelCounts)) {
      Candidate candidate =
          withChannels(optionSet, count, channelCounts.size() > 1);
      candidate.plan.emplace();
      candidate.plan->diagnostics = bucketed.plan->diagnostics;
      // The last count takes the bucketed module itself.
      candidate.plan->module = index + 1 == channelCounts.size()
                                   ? std::move(bucketed.plan->module)
                                   : bucketed.plan->module->clone();
      if (succeeded(runCaptured(candidate, [&](OpPassManager &pm) {
            buildSchedulingPasses(pm, *candidate.options);
          })))
        simulate(candidate);
      consider(std::move(candidate));
    }
  }

  /// A copy of `optionSet`'s options and label with `count` channels (0:
  /// its own), named in the label where `labelled`.
  static Candidate withChannels(const Candidate &optionSet, int64_t count,
                                bool labelled) {
    Candidate candidate;
    candidate.options = cloneOptions(*optionSet.options);
    candidate.label = optionSet.label;
    if (count > 0)
      candidate.options->channels = count;
    if (labelled)
      candidate.label +=
          (candidate.label.empty() ? "channels=" : " channels=") +
          std::to_string(count);
    return candidate;
  }

  /// Adds `candidate` to those compared; keeps its plan while it is the
  /// best (the earliest of the fastest, as isBetterThan orders them).
  void consider(Candidate candidate) {
    if (!candidate.stepUs)
      candidate.plan.reset();
    candidates.push_back(std::move(candidate));
    size_t index = candidates.size() - 1;
    if (index == 0)
      return;
    if (candidates[index].isBetterThan(candidates[fastestIndex], 0.0))
      fastestIndex = index;
    if (candidates[index].isBetterThan(candidates[bestIndex],
                                       options.lossyMargin)) {
      candidates[bestIndex].plan.reset();
      bestIndex = index;
    } else {
      candidates[index].plan.reset();
    }
  }

  /// comm-sparsify picks each sparse gradient by its collective's time
  /// alone; in the overlapped step a dense allreduce may hide behind compute
  /// where the sparse one's local steps do not, or join a bucket. Starting
  /// from `start`, tries each of its sparse gradients dense (comm-sparsify's
  /// `exclude`), in issue order, and keeps every change that simulates no
  /// slower.
  /// Returns the plan with the gradients kept dense, labelled with them and
  /// the number tried, or nullopt where none was.
  std::optional<Candidate> refineSparse(ModuleOp module,
                                        const Candidate &start) {
    std::optional<Candidate> best;
    SmallVector<std::string> dense;
    for (const std::string &name : start.sparseNames) {
      const Candidate &current = best ? *best : start;
      Candidate trial;
      trial.options = cloneOptions(*current.options);
      std::string excluded = trial.options->sparseExclude;
      trial.options->sparseExclude =
          excluded.empty() ? name : excluded + "," + name;
      trial.plan.emplace();
      trial.plan->module = module.clone();
      if (succeeded(runCaptured(trial, [&](OpPassManager &pm) {
            buildPlanningPasses(pm, *trial.options);
          })))
        simulate(trial);
      // Dense where that is no slower: sparse only where it pays.
      if (!trial.stepUs || *trial.stepUs > *current.stepUs)
        continue;
      dense.push_back(name);
      best = std::move(trial);
    }
    if (!best)
      return std::nullopt;
    // "dense: a, b (of 5 sparse tried)", or with more than three
    // "dense: 12 of 29 sparse" (the plan itself names them).
    std::string tried = std::to_string(start.sparseNames.size());
    if (dense.size() <= 3)
      best->label = start.label + ", dense: " + llvm::join(dense, ", ") +
                    " (of " + tried + " sparse tried)";
    else
      best->label = start.label + ", dense: " + std::to_string(dense.size()) +
                    " of " + tried + " sparse";
    return best;
  }

  static std::unique_ptr<OptimizeOptions>
  cloneOptions(const OptimizeOptions &from) {
    auto copy = std::make_unique<OptimizeOptions>();
    copy->copyOptionValuesFrom(from);
    return copy;
  }

  /// Runs the passes `build` adds on `candidate`'s planned module, keeping
  /// their diagnostics from the user: they are captured with the plan, and
  /// a failure is recorded on the candidate.
  LogicalResult runCaptured(Candidate &candidate,
                            function_ref<void(OpPassManager &)> build) {
    SmallVector<CapturedDiagnostic> &captured = candidate.plan->diagnostics;
    ScopedDiagnosticHandler capture(&getContext(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error &&
          candidate.failure.empty())
        candidate.failure = diag.str();
      CapturedDiagnostic copy{
          diag.getLocation(), diag.getSeverity(), diag.str(), {}};
      for (Diagnostic &note : diag.getNotes())
        copy.notes.emplace_back(note.getLocation(), note.str());
      captured.push_back(std::move(copy));
      return success();
    });
    PassManager pm(&getContext(), ModuleOp::getOperationName());
    build(pm);
    if (succeeded(pm.run(*candidate.plan->module)))
      return success();
    if (candidate.failure.empty())
      candidate.failure = "planning failed";
    return failure();
  }

  /// Counts the sparse collectives of `candidate`'s planned module and
  /// simulates it: the sum of its functions' simulated times, or a failure.
  void simulate(Candidate &candidate) {
    ModuleOp plan = *candidate.plan->module;
    plan.walk([&](CollectiveOpInterface collective) {
      if (isa<SparseCollectiveOpInterface>(collective.getOperation())) {
        ++candidate.sparseCollectives;
        StringRef name = collective.getGradientNames().front();
        if (!name.empty())
          candidate.sparseNames.push_back(name.str());
        return;
      }
      for (unsigned index = 0, e = collective.getGradients().size(); index < e;
           ++index)
        if (collective.getGradientWireType(index)) {
          ++candidate.narrowedCollectives;
          return;
        }
    });
    SimulationMode mode = options.estimate == EstimateMode::Steady
                              ? SimulationMode::SteadyState
                              : SimulationMode::Step;
    std::string failure;
    ScopedDiagnosticHandler capture(&getContext(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && failure.empty())
        failure = diag.str();
      return success();
    });
    double totalUs = 0;
    for (func::FuncOp func : plan.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      FailureOr<StepModel> model = buildStepModel(func, *cluster, *device);
      if (failed(model)) {
        candidate.failure = failure.empty() ? "cannot model" : failure;
        return;
      }
      llvm::Expected<StepTimeline> timeline =
          simulateStepModel(*model, *cluster, mode);
      if (!timeline) {
        candidate.failure = llvm::toString(timeline.takeError());
        return;
      }
      totalUs += timeline->result.stepUs;
    }
    candidate.stepUs = totalUs;
  }

  /// Makes `chosen`'s planned module the module and shows the user the
  /// diagnostics its planning gave (as planning it again would).
  void adopt(ModuleOp module, Candidate &chosen) {
    ModuleOp plan = *chosen.plan->module;
    module.getBodyRegion().takeBody(plan.getBodyRegion());
    module->setAttrs(plan->getAttrDictionary());
    for (const CapturedDiagnostic &captured : chosen.plan->diagnostics) {
      InFlightDiagnostic diag = getContext().getDiagEngine().emit(
          captured.location, captured.severity);
      diag << captured.message;
      for (const auto &[location, message] : captured.notes)
        diag.attachNote(location) << message;
    }
    chosen.plan.reset();
  }

  /// Records the candidates on `module` (kPlanSearchAttrName), and on
  /// `fastest`, where it is not `best`, why the margin declined it.
  static void record(ModuleOp module, ArrayRef<Candidate> candidates,
                     const Candidate &best, const Candidate &fastest,
                     double margin) {
    Builder builder(module.getContext());
    SmallVector<Attribute> entries;
    for (const Candidate &candidate : candidates) {
      SmallVector<NamedAttribute> fields;
      fields.push_back(builder.getNamedAttr(
          "options", builder.getStringAttr(candidate.label)));
      if (candidate.stepUs)
        fields.push_back(builder.getNamedAttr(
            "step_us", builder.getF64FloatAttr(*candidate.stepUs)));
      else
        fields.push_back(builder.getNamedAttr(
            "failure", builder.getStringAttr(candidate.failure)));
      if (candidate.stepUs) {
        SmallVector<Attribute, 2> lossy;
        if (candidate.sparseCollectives > 0)
          lossy.push_back(builder.getStringAttr("sparse"));
        if (candidate.narrowedCollectives > 0)
          lossy.push_back(builder.getStringAttr("wire"));
        fields.push_back(
            builder.getNamedAttr("lossy", builder.getArrayAttr(lossy)));
      }
      if (&candidate == &best)
        fields.push_back(builder.getNamedAttr("chosen", builder.getUnitAttr()));
      if (&candidate == &fastest && best.stepUs &&
          *fastest.stepUs < *best.stepUs) {
        std::string why;
        llvm::raw_string_ostream(why) << llvm::format(
            "%.2f%% faster than the chosen plan, under the lossy margin "
            "(%g%% per lossy kind)",
            (*best.stepUs - *fastest.stepUs) / *best.stepUs * 100.0,
            margin * 100.0);
        fields.push_back(
            builder.getNamedAttr("declined", builder.getStringAttr(why)));
      }
      entries.push_back(builder.getDictionaryAttr(fields));
    }
    module->setAttr(kPlanSearchAttrName, builder.getArrayAttr(entries));
  }

  OptimizeOptions options;
  std::shared_ptr<const ClusterModel> cluster;
  std::optional<DeviceModel> device;
  /// The plans compared so far, in order, the index of the best (with the
  /// lossy margin) and of the fastest (without it).
  std::vector<Candidate> candidates;
  size_t bestIndex = 0, fastestIndex = 0;
};

} // namespace

std::unique_ptr<Pass>
mlir::comm::createPlanSearchPass(const OptimizeOptions &options) {
  return std::make_unique<PlanSearchPass>(options);
}
