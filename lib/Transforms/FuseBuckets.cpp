//===- FuseBuckets.cpp - Fuse gradient allreduces into buckets ------------===//
//
// Implements `comm-fuse-buckets`: tensor fusion of allreduces in gradient-
// ready order, by a size threshold (as PyTorch DDP's buckets, Horovod's
// fusion buffer and XLA's all-reduce combiner do) or by the cost model.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/Bucketing.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <limits>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMFUSEBUCKETS
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

constexpr size_t kNoDeadline = std::numeric_limits<size_t>::max();

/// What gradients must agree on to share one collective: a bucket is
/// reduced with one reduction, one element type and wire setting, among
/// one set of ranks (null group: all ranks), by one allreduce algorithm
/// (null: the runtime's default) on one transport (null: the backend in
/// use).
struct BucketKey {
  ReduceKind reduce;
  Type elementType;
  TypeAttr wire;
  FloatAttr prescale;
  GroupAttr group;
  AlgorithmKindAttr algorithm;
  TransportKindAttr transport;

  bool operator==(const BucketKey &other) const {
    return reduce == other.reduce && elementType == other.elementType &&
           wire == other.wire && prescale == other.prescale &&
           group == other.group && algorithm == other.algorithm &&
           transport == other.transport;
  }
};

/// A gradient allreduce that may join a bucket.
struct Candidate {
  AllReduceOp op;
  BucketKey key;
  /// Bytes on the wire.
  int64_t bytes;
  /// Bytes in its own type when a wire type narrows it, else 0: what
  /// packing, the 16-bit reduction and unpacking cost (getWireCostUs).
  int64_t narrowedBytes;
  /// Position of the op in its block.
  size_t position;
  /// Position of the first op of the block that uses the result, which the
  /// gradient's bucket must precede; kNoDeadline if none.
  size_t deadline;
};

/// A collective of the block that is not a candidate but shares the
/// channel with the buckets: a sparse allreduce, an existing bucket or
/// start, an allreduce that cannot be fused.
struct SharedCollective {
  Operation *op;
  /// Position of the op in its block.
  size_t position;
  /// Position of the first op of the block that uses a result; kNoDeadline
  /// if none.
  size_t deadline;
};

/// Indices of the candidates of one bucket, in program order.
using Bucket = SmallVector<size_t>;

/// The threshold rule: a size cap, a cap for the first bucket, and whether
/// a bucket may overflow its cap by its last gradient.
struct ThresholdRule {
  int64_t capBytes;
  int64_t firstCapBytes;
  bool overflow;

  static ThresholdRule fromMiB(double capMb, double firstCapMb, bool overflow) {
    auto cap = static_cast<int64_t>(capMb * kBytesPerMiB);
    return {cap,
            firstCapMb > 0.0 ? static_cast<int64_t>(firstCapMb * kBytesPerMiB)
                             : cap,
            overflow};
  }
};

/// The settings of the peers the cost policy must never lose to.
const ThresholdRule kPeerRules[] = {
    ThresholdRule::fromMiB(25.0, 1.0, true),   // PyTorch DDP
    ThresholdRule::fromMiB(128.0, 0.0, false), // Horovod
    ThresholdRule::fromMiB(64.0, 0.0, false),  // Horovod, older docs
    ThresholdRule::fromMiB(30.0, 0.0, false),  // XLA all-reduce combiner
};

/// The allreduces of `block` that can be fused, in program order: tensor
/// form, static shape. With `shared`, also the block's other collectives.
SmallVector<Candidate>
collectCandidates(Block &block,
                  SmallVectorImpl<SharedCollective> *shared = nullptr) {
  llvm::DenseMap<Operation *, size_t> positions;
  positions.reserve(block.getOperations().size());
  for (auto [position, op] : llvm::enumerate(block))
    positions[&op] = position;
  // The position of the first op of the block that uses a result of `op`.
  auto getDeadline = [&](Operation *op) {
    size_t deadline = kNoDeadline;
    for (Operation *user : op->getUsers())
      if (Operation *ancestor = block.findAncestorOpInBlock(*user))
        deadline = std::min(deadline, positions.lookup(ancestor));
    return deadline;
  };

  SmallVector<Candidate> candidates;
  for (Operation &op : block) {
    auto allreduce = dyn_cast<AllReduceOp>(&op);
    auto type = allreduce && allreduce.getResult()
                    ? cast<RankedTensorType>(allreduce.getInput().getType())
                    : RankedTensorType();
    if (!type || !type.hasStaticShape()) {
      if (shared && isa<CollectiveOpInterface>(op))
        shared->push_back({&op, positions.lookup(&op), getDeadline(&op)});
      continue;
    }
    Type wire =
        allreduce.getWireAttr() ? allreduce.getWireAttr().getValue() : Type();
    size_t deadline = getDeadline(&op);
    candidates.push_back(
        {allreduce,
         {allreduce.getReduce(), type.getElementType(), allreduce.getWireAttr(),
          allreduce.getPrescaleAttr(), allreduce.getGroupAttr(),
          allreduce.getAlgorithmAttr(), allreduce.getTransportAttr()},
         *getGradientBytes(type, wire),
         wire ? *getGradientBytes(type, Type()) : 0,
         positions.lookup(&op),
         deadline});
  }
  return candidates;
}

/// The candidates with each full-precision kind merged into the one
/// narrowed kind that differs from it only in its wire settings (as
/// comm-lower-precision leaves small gradients in full precision), for
/// mixed-wire buckets, which the runtime reduces with the ring; nullopt when
/// no kind merges. Only keys change: the candidates keep their ops, bytes
/// and positions, so buckets of either list index both.
std::optional<SmallVector<Candidate>>
mergeWireKinds(ArrayRef<Candidate> candidates) {
  SmallVector<BucketKey> narrowedKeys;
  for (const Candidate &candidate : candidates)
    if (candidate.key.wire && !llvm::is_contained(narrowedKeys, candidate.key))
      narrowedKeys.push_back(candidate.key);
  auto runsRing = [](AlgorithmKindAttr algorithm) {
    return !algorithm || algorithm.getValue() == AlgorithmKind::ring;
  };
  SmallVector<Candidate> merged(candidates.begin(), candidates.end());
  bool anyMerged = false;
  for (Candidate &candidate : merged) {
    const BucketKey &key = candidate.key;
    if (key.wire || key.prescale || !runsRing(key.algorithm))
      continue;
    SmallVector<const BucketKey *, 1> alike;
    for (const BucketKey &narrowed : narrowedKeys)
      if (narrowed.reduce == key.reduce &&
          narrowed.elementType == key.elementType &&
          narrowed.group == key.group && narrowed.algorithm == key.algorithm)
        alike.push_back(&narrowed);
    if (alike.size() != 1)
      continue;
    candidate.key = *alike.front();
    anyMerged = true;
  }
  if (!anyMerged)
    return std::nullopt;
  return merged;
}

/// Whether `bucket` of `candidates` mixes wire types.
bool isMixedWire(ArrayRef<Candidate> candidates, const Bucket &bucket) {
  auto wireOf = [&](size_t member) {
    AllReduceOp op = candidates[member].op;
    return op.getWireAttr();
  };
  return llvm::any_of(bucket, [&](size_t member) {
    return wireOf(member) != wireOf(bucket.front());
  });
}

/// Buckets by the threshold rule, filling one open bucket per kind of
/// gradient; a bucket closes when full or before one of its results is used.
SmallVector<Bucket> planThreshold(ArrayRef<Candidate> candidates,
                                  const ThresholdRule &rule) {
  struct OpenBucket {
    BucketKey key;
    Bucket members;
    int64_t bytes = 0;
    size_t deadline = kNoDeadline;
  };
  SmallVector<Bucket> buckets;
  SmallVector<OpenBucket> open;
  bool firstBucket = true;
  auto close = [&](size_t index) {
    buckets.push_back(std::move(open[index].members));
    open.erase(open.begin() + index);
    firstBucket = false;
  };

  for (size_t index = 0; index < candidates.size(); ++index) {
    const Candidate &candidate = candidates[index];
    for (size_t i = open.size(); i-- > 0;)
      if (open[i].deadline <= candidate.position)
        close(i);
    int64_t cap = firstBucket ? rule.firstCapBytes : rule.capBytes;
    auto *bucket = llvm::find_if(
        open, [&](const OpenBucket &b) { return b.key == candidate.key; });
    if (bucket != open.end() && !rule.overflow &&
        bucket->bytes + candidate.bytes > cap) {
      close(bucket - open.begin());
      bucket = open.end();
    }
    if (bucket == open.end()) {
      open.push_back({candidate.key, {}, 0, kNoDeadline});
      bucket = std::prev(open.end());
    }
    bucket->members.push_back(index);
    bucket->bytes += candidate.bytes;
    bucket->deadline = std::min(bucket->deadline, candidate.deadline);
    if (bucket->bytes >= cap)
      close(bucket - open.begin());
  }
  while (!open.empty())
    close(0);
  return buckets;
}

/// Each candidate alone, as without fusion.
SmallVector<Bucket> planUnfused(ArrayRef<Candidate> candidates) {
  SmallVector<Bucket> buckets;
  for (size_t index = 0; index < candidates.size(); ++index)
    buckets.push_back({index});
  return buckets;
}

/// Replaces the members of a bucket by one comm.fused_allreduce placed right
/// after the last member, where every gradient is ready.
void emitBucket(ArrayRef<Candidate> candidates, const Bucket &bucket) {
  if (bucket.size() < 2)
    return;
  AllReduceOp last = candidates[bucket.back()].op;
  OpBuilder builder(last->getContext());
  builder.setInsertionPointAfter(last);

  SmallVector<Value> inputs;
  SmallVector<Type> types;
  SmallVector<Attribute> names;
  SmallVector<Location> locations;
  bool anyName = false;
  StringAttr noName = builder.getStringAttr("");
  for (size_t index : bucket) {
    AllReduceOp member = candidates[index].op;
    inputs.push_back(member.getInput());
    types.push_back(member.getInput().getType());
    StringAttr name = member.getNameAttr();
    anyName |= name != nullptr;
    names.push_back(name ? name : noName);
    locations.push_back(member.getLoc());
  }
  // A mixed-wire bucket takes its wire settings from a narrowed member and
  // flags the members that travel in the wire type.
  AllReduceOp settings = last;
  DenseBoolArrayAttr narrowed;
  if (isMixedWire(candidates, bucket)) {
    SmallVector<bool> flags;
    for (size_t index : bucket) {
      AllReduceOp member = candidates[index].op;
      flags.push_back(member.getWireAttr() != nullptr);
      if (member.getWireAttr())
        settings = member;
    }
    narrowed = builder.getDenseBoolArrayAttr(flags);
  }
  auto fused = FusedAllReduceOp::create(
      builder, builder.getFusedLoc(locations), types, inputs,
      settings.getReduceAttr(), settings.getWireAttr(),
      settings.getPrescaleAttr(),
      anyName ? builder.getArrayAttr(names) : ArrayAttr(),
      settings.getGroupAttr(), settings.getAlgorithmAttr(),
      settings.getTransportAttr(), narrowed);
  for (auto [index, result] : llvm::zip(bucket, fused.getResults())) {
    AllReduceOp member = candidates[index].op;
    member.getResult().replaceAllUsesWith(result);
    member.erase();
  }
}

struct CommFuseBucketsPass
    : public WithCheckedOptions<
          comm::impl::CommFuseBucketsBase<CommFuseBucketsPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    Location loc = UnknownLoc::get(context);
    // The option's parser rejects none; it comes only from C++.
    if (policy == FusionPolicy::None)
      return emitError(loc) << "comm-fuse-buckets: option 'policy': none is "
                               "not a policy; leave the pass out";
    if (!(bucketCapMb > 0.0) || std::isinf(bucketCapMb))
      return emitError(loc) << "comm-fuse-buckets: bucket-cap-mb must be "
                               "positive and finite, got "
                            << bucketCapMb;
    if (!(firstBucketMb >= 0.0))
      return emitError(loc)
             << "comm-fuse-buckets: first-bucket-mb must be non-negative, got "
             << firstBucketMb;
    if (policy != FusionPolicy::Threshold) {
      llvm::Expected<DeviceModel> deviceModel = DeviceModel::parse(device);
      if (!deviceModel)
        return emitError(loc)
               << "comm-fuse-buckets: device '" << device
               << "': " << llvm::toString(deviceModel.takeError());
      deviceModel_ = std::move(*deviceModel);
    }
    return success();
  }

  void runOnOperation() final {
    func::FuncOp func = getOperation();
    ThresholdRule rule =
        ThresholdRule::fromMiB(bucketCapMb, firstBucketMb, overflow);
    func->walk([&](Block *block) {
      bool planned =
          policy != FusionPolicy::Threshold && block == &func.getBody().front();
      SmallVector<SharedCollective> shared;
      SmallVector<Candidate> candidates =
          collectCandidates(*block, planned ? &shared : nullptr);
      SmallVector<Bucket> buckets;
      if (planned) {
        FailureOr<SmallVector<Bucket>> plan =
            planFunction(func, candidates, shared);
        if (failed(plan))
          return signalPassFailure();
        buckets = std::move(*plan);
      } else {
        buckets = planThreshold(candidates, rule);
      }
      for (const Bucket &bucket : buckets)
        emitBucket(candidates, bucket);
    });
  }

private:
  /// The cost-model policies for the function's body. `mgwfbp`: MG-WFBP's
  /// merge rule in each class of gradients that may share buckets. `cost`:
  /// for each class, the optimal plan of the class alone
  /// (planOptimalBuckets) or a peer's threshold rule, whichever makes the
  /// whole step fastest with the other classes' buckets on the same
  /// channel, unless MG-WFBP's rule, a peer's rule over the whole
  /// function, or no fusion simulates faster still. Each bucketing is
  /// simulated with the `shared` collectives on the same channel.
  FailureOr<SmallVector<Bucket>>
  planFunction(func::FuncOp func, ArrayRef<Candidate> candidates,
               ArrayRef<SharedCollective> shared) {
    llvm::Expected<const ClusterModel &> cluster = clusters_.get(
        resolvePlanningCluster(func, this->cluster, "comm-fuse-buckets"));
    if (!cluster)
      return func.emitError()
             << "comm-fuse-buckets: " << llvm::toString(cluster.takeError());
    clusterModel_ = &*cluster;
    FailureOr<StepModel> model =
        buildStepModel(func, *clusterModel_, *deviceModel_);
    if (failed(model))
      return failure();
    // When each compute task ends if nothing stalls it.
    SmallVector<double> computeEndUs;
    double now = 0.0;
    for (const ComputeTask &task : model->step.computeTasks)
      computeEndUs.push_back(now += task.durationUs);

    // The cluster's allreduce cost is affine in bytes.
    double costOne = allreduceCost(*clusterModel_, kBytesPerMiB).totalUs();
    double costTwo = allreduceCost(*clusterModel_, 2 * kBytesPerMiB).totalUs();
    AffineCost cost;
    cost.usPerByte = (costTwo - costOne) / kBytesPerMiB;
    cost.latencyUs = costOne - cost.usPerByte * kBytesPerMiB;

    // The candidates, and the other collectives, are among the model's
    // collectives, all in program order: `findCollective` finds each in
    // turn, from `collective` on.
    size_t collective = 0;
    auto findCollective = [&](Operation *op) -> FailureOr<size_t> {
      while (collective < model->collectiveOps.size() &&
             model->collectiveOps[collective] != op)
        ++collective;
      if (collective == model->collectiveOps.size())
        return func.emitError() << "comm-fuse-buckets: the step model has no "
                                   "collective for "
                                << op->getName();
      return collective;
    };
    SmallVector<std::optional<size_t>> issued;
    issued.reserve(candidates.size());
    for (const Candidate &candidate : candidates) {
      FailureOr<size_t> index = findCollective(candidate.op);
      if (failed(index))
        return failure();
      issued.push_back(model->step.collectives[*index].issuedAfter);
    }
    WaitTasks waitTasks(func.getBody().front(), *model);
    SmallVector<std::optional<size_t>> waited;
    for (const Candidate &candidate : candidates)
      waited.push_back(waitTasks.lookup(candidate.deadline));
    // The other collectives, as they will run: on the one channel, those
    // that comm-schedule-overlap will start (sparse ones with
    // `sparse-overlap`) waited for before their first use.
    SmallVector<std::pair<size_t, CollectiveTask>> sharedTasks;
    collective = 0;
    for (const SharedCollective &other : shared) {
      FailureOr<size_t> index = findCollective(other.op);
      if (failed(index))
        return failure();
      CollectiveTask task = model->step.collectives[*index];
      task.channel = 0;
      task.priority.reset();
      if (isBlockingTensorCollective(other.op, sparseOverlap)) {
        task.blocking = false;
        task.waitBefore = waitTasks.lookup(other.deadline);
      }
      sharedTasks.push_back({other.position, std::move(task)});
    }
    // The step the bucketings are simulated in: its compute, moved out of
    // the model (the model is not used again), and each bucketing's
    // collectives.
    StepDescription simulated;
    simulated.computeTasks = std::move(model->step.computeTasks);
    PlanningContext context{&simulated, computeEndUs, issued,
                            waited,     sharedTasks,  cost};
    auto [buckets, bestUs] = planClasses(candidates, context, policy);
    if (policy == FusionPolicy::Mgwfbp)
      return buckets;
    // Narrowed and full-precision gradients as one kind, in mixed-wire
    // buckets, where that makes the step faster.
    if (mixedWire) {
      if (std::optional<SmallVector<Candidate>> merged =
              mergeWireKinds(candidates)) {
        auto [mixed, mixedUs] = planClasses(*merged, context, policy, bestUs);
        if (mixedUs < bestUs) {
          bestUs = mixedUs;
          buckets = std::move(mixed);
        }
      }
    }
    // Never slower than MG-WFBP's merge rule, than a peer's rule over the
    // whole function as the peer applies it (one open bucket per class,
    // closed by size or deadline), nor than no fusion: the optimal plans
    // minimise when the last bucket ends with an affine cost, but the
    // cheapest algorithm of a small collective may cost less than the
    // affine line says, and a gradient needed before the end of the step
    // can be waited for sooner alone. A plan that stalls no compute cannot
    // be beaten: then none is simulated. The others are simulated only
    // where their bound does not rule them out (simulate).
    double computeOnlyUs = computeEndUs.empty() ? 0.0 : computeEndUs.back();
    if (bestUs <= computeOnlyUs)
      return buckets;
    auto [merged, mergedUs] =
        planClasses(candidates, context, FusionPolicy::Mgwfbp, bestUs);
    if (mergedUs < bestUs) {
      bestUs = mergedUs;
      buckets = std::move(merged);
    }
    SmallVector<SmallVector<Bucket>> alternatives;
    for (const ThresholdRule &rule : kPeerRules)
      alternatives.push_back(planThreshold(candidates, rule));
    alternatives.push_back(planUnfused(candidates));
    for (SmallVector<Bucket> &alternative : alternatives) {
      double us = simulate(context, candidates, alternative, bestUs);
      if (us < bestUs) {
        bestUs = us;
        buckets = std::move(alternative);
      }
    }
    return buckets;
  }

  /// The compute task before which an op of the function's body, at a
  /// given deadline (the position of its first user in the block), is
  /// needed, as a comm.wait before that user would be: the first task at or
  /// after that position; none where no task follows it (the end of the
  /// step).
  class WaitTasks {
  public:
    WaitTasks(Block &block, const StepModel &model) {
      // The position in `block` of each compute task's op (its ancestor
      // there), in task order: tasks follow program order.
      ArrayRef<Operation *> ops = model.computeOps;
      taskPositions.reserve(ops.size());
      for (auto [position, op] : llvm::enumerate(block))
        while (taskPositions.size() < ops.size() &&
               block.findAncestorOpInBlock(*ops[taskPositions.size()]) == &op)
          taskPositions.push_back(position);
      // Tasks outside the block (none in a function's body) come last.
      taskPositions.resize(ops.size(), kNoDeadline);
    }

    std::optional<size_t> lookup(size_t deadline) const {
      const size_t *task = llvm::lower_bound(taskPositions, deadline);
      if (deadline == kNoDeadline || task == taskPositions.end())
        return std::nullopt;
      return task - taskPositions.begin();
    }

  private:
    SmallVector<size_t> taskPositions;
  };

  /// What planClasses plans against: the step's compute, when each compute
  /// task ends if nothing stalls it, the compute tasks after which each
  /// candidate is ready and before which it is needed, and the cluster's
  /// allreduce cost.
  struct PlanningContext {
    /// The step's compute tasks; simulate replaces its collectives.
    StepDescription *step;
    ArrayRef<double> computeEndUs;
    ArrayRef<std::optional<size_t>> issued;
    /// The compute task each candidate is first needed before (none: the
    /// end of the step).
    ArrayRef<std::optional<size_t>> waited;
    /// The block's other collectives on the channel, by position in the
    /// block.
    ArrayRef<std::pair<size_t, CollectiveTask>> shared;
    AffineCost cost;
  };

  /// Buckets `candidates` class by class (candidates of one key) by
  /// `classPolicy`, and returns the buckets and the simulated step time
  /// (where that is `cutoffUs` or more, possibly a lower bound of it, as
  /// simulate returns). `mgwfbp`: MG-WFBP's merge rule in each class.
  /// `cost`: for each class, the optimal plan of the class alone
  /// (planOptimalBuckets) or a peer's threshold rule, whichever makes the
  /// whole step fastest with the other classes' buckets on the same channel.
  std::pair<SmallVector<Bucket>, double>
  planClasses(ArrayRef<Candidate> candidates, const PlanningContext &context,
              FusionPolicy classPolicy,
              double cutoffUs = std::numeric_limits<double>::infinity()) {
    // The classes of candidates that may share buckets, and each one's
    // bucketings to choose from, in the function's candidate indices.
    bool mergedWFBP = classPolicy == FusionPolicy::Mgwfbp;
    SmallVector<SmallVector<SmallVector<Bucket>>> choices;
    SmallVector<bool> planned(candidates.size(), false);
    for (size_t first = 0; first < candidates.size(); ++first) {
      if (planned[first])
        continue;
      SmallVector<Candidate> members;
      SmallVector<size_t> indices;
      SmallVector<BucketItem> items;
      for (size_t index = first; index < candidates.size(); ++index) {
        if (planned[index] || !(candidates[index].key == candidates[first].key))
          continue;
        planned[index] = true;
        const Candidate &candidate = candidates[index];
        members.push_back(candidate);
        indices.push_back(index);
        items.push_back({static_cast<double>(candidate.bytes),
                         context.issued[index]
                             ? context.computeEndUs[*context.issued[index]]
                             : 0.0,
                         candidate.position, candidate.deadline});
      }
      auto toFunction = [&](SmallVector<Bucket> classBuckets) {
        for (Bucket &bucket : classBuckets)
          for (size_t &member : bucket)
            member = indices[member];
        return classBuckets;
      };
      SmallVector<SmallVector<Bucket>> &options = choices.emplace_back();
      SmallVector<Bucket> best;
      for (BucketRange range : mergedWFBP
                                   ? planMergedWFBP(items, context.cost)
                                   : planOptimalBuckets(items, context.cost))
        best.push_back(llvm::to_vector(llvm::seq(range.first, range.last)));
      options.push_back(toFunction(std::move(best)));
      if (!mergedWFBP)
        for (const ThresholdRule &rule : kPeerRules)
          options.push_back(toFunction(planThreshold(members, rule)));
    }

    // The classes share the channel, so a class's best bucketing depends on
    // the others': each class takes, in turn, the choice that makes the
    // whole step fastest with the others' fixed, until no choice changes
    // (every change makes the step strictly faster, so this ends).
    SmallVector<size_t> chosen(choices.size(), 0);
    auto assemble = [&](ArrayRef<size_t> picks) {
      SmallVector<Bucket> buckets;
      for (auto [options, pick] : llvm::zip(choices, picks))
        llvm::append_range(buckets, options[pick]);
      return buckets;
    };
    double bestUs = simulate(context, candidates, assemble(chosen), cutoffUs);
    for (bool changed = !mergedWFBP && choices.size() > 1; changed;) {
      changed = false;
      for (size_t cls = 0; cls < choices.size(); ++cls)
        for (size_t option = 0; option < choices[cls].size(); ++option) {
          if (option == chosen[cls])
            continue;
          SmallVector<size_t> trial = chosen;
          trial[cls] = option;
          double us = simulate(context, candidates, assemble(trial), bestUs);
          if (us < bestUs) {
            bestUs = us;
            chosen = std::move(trial);
            changed = true;
          }
        }
    }
    return {assemble(chosen), bestUs};
  }

  /// The simulated step time of the context's compute with `buckets` of
  /// `candidates` overlapped on one channel, each issued, in the order the
  /// lowered step issues them, once its last member is ready, and waited
  /// for before its first member is needed. Where a lower bound of that time
  /// is already `cutoffUs` or more, returns the bound instead: such a plan
  /// cannot beat one of `cutoffUs`, and simulating 10^5 collectives costs
  /// milliseconds.
  double simulate(const PlanningContext &context,
                  ArrayRef<Candidate> candidates, ArrayRef<Bucket> buckets,
                  double cutoffUs = std::numeric_limits<double>::infinity()) {
    SmallVector<const Bucket *> order = llvm::to_vector(
        llvm::map_range(buckets, [](const Bucket &b) { return &b; }));
    llvm::stable_sort(order, [&](const Bucket *a, const Bucket *b) {
      return candidates[a->back()].position < candidates[b->back()].position;
    });
    StepDescription &plan = *context.step;
    plan.collectives.clear();
    // The buckets and the other collectives in issue order: a bucket is
    // issued where its last member was.
    const auto *shared = context.shared.begin();
    auto issueSharedBefore = [&](size_t position) {
      for (; shared != context.shared.end() && shared->first < position;
           ++shared)
        plan.collectives.push_back(shared->second);
    };
    for (const Bucket *bucket : order) {
      issueSharedBefore(candidates[bucket->back()].position);
      CollectiveTask task;
      task.cost = priceBucket(candidates, *bucket);
      task.issuedAfter = context.issued[bucket->back()];
      for (size_t member : *bucket)
        if (std::optional<size_t> waited = context.waited[member])
          task.waitBefore =
              std::min(task.waitBefore.value_or(*waited), *waited);
      plan.collectives.push_back(std::move(task));
    }
    issueSharedBefore(std::numeric_limits<size_t>::max()); // The rest.
    // comm-schedule-overlap places each start right after the compute that
    // produces its gradients, ahead of a blocking collective that follows
    // that compute: the blocking one then waits behind it.
    if (llvm::any_of(context.shared,
                     [](const auto &shared) { return shared.second.blocking; }))
      llvm::stable_sort(plan.collectives, [](const CollectiveTask &a,
                                             const CollectiveTask &b) {
        auto key = [](const CollectiveTask &task) {
          return std::make_pair(task.issuedAfter ? *task.issuedAfter + 1 : 0,
                                task.blocking);
        };
        return key(a) < key(b);
      });
    if (cutoffUs < std::numeric_limits<double>::infinity()) {
      double boundUs = getOneChannelLowerBoundUs(plan);
      if (boundUs >= cutoffUs)
        return boundUs;
    }
    llvm::Expected<TimelineResult> result =
        simulateStep(plan, SimulationOptions{1, clusterModel_->sharing,
                                             deviceModel_->computeOverlap});
    if (!result) {
      llvm::consumeError(result.takeError());
      return std::numeric_limits<double>::infinity();
    }
    return result->stepUs;
  }

  /// The cost of `bucket`'s collective on the function's cluster: with the
  /// algorithm comm-select-algorithm will give it, and what its wire type
  /// adds on the ranks.
  CollectiveCost priceBucket(ArrayRef<Candidate> candidates,
                             const Bucket &bucket) const {
    double bytes = 0.0, narrowedBytes = 0.0;
    bool anyNarrowed = false, anyFull = false;
    for (size_t member : bucket) {
      const Candidate &candidate = candidates[member];
      bytes += static_cast<double>(candidate.bytes);
      narrowedBytes += static_cast<double>(candidate.narrowedBytes);
      AllReduceOp op = candidate.op;
      (op.getWireAttr() ? anyNarrowed : anyFull) = true;
    }
    // The runtime reduces a mixed-wire bucket with its ring, on the
    // backend in use: the cluster's.
    bool mixed = anyNarrowed && anyFull;
    std::optional<AllreduceAlgorithm> only;
    if (mixed)
      only = AllreduceAlgorithm::Ring;
    else if (!cheapestAlgorithm)
      only = clusterModel_->algorithm;
    // comm-select-algorithm also picks the cheaper transport where the
    // cluster has two; without it, the collective runs on the cluster's.
    AllreduceChoice choice = getCheapestAllreduceChoice(
        *clusterModel_, bytes, narrowedBytes, only,
        cheapestAlgorithm && !mixed ? std::nullopt
                                    : std::optional(clusterModel_->backend));
    const ClusterModel &on = *clusterModel_->onTransport(choice.transport);
    CollectiveCost cost = allreduceCost(on, bytes, choice.algorithm);
    cost.latencyUs += getWireCostUs(on, narrowedBytes);
    return cost;
  }

  /// The cluster of the function being planned, from `clusters_`.
  const ClusterModel *clusterModel_ = nullptr;
  ClusterCache clusters_;
  std::optional<DeviceModel> deviceModel_;
};

} // namespace
