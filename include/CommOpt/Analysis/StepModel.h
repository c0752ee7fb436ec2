//===- StepModel.h - A function's training step, for the simulator --------===//
//
// Reads a training step from a func.func: its compute (comm.compute costs,
// `comm.cost_us` attributes, roofline estimates of tensor ops) and its
// collectives (blocking, or split into comm.start/comm.wait), as the
// timeline simulator's StepDescription, and remembers which op each task
// came from so that results can be attached back to the IR. Simulates it as
// one step or in steady state, for comm-estimate and --export-timeline.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_STEPMODEL_H
#define COMMOPT_ANALYSIS_STEPMODEL_H

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/DeviceModel.h"
#include "CommOpt/Analysis/TimelineSimulator.h"

#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::comm {

/// A function's step as the simulator sees it.
struct StepModel {
  StepDescription step;
  /// The op each compute task stands for, by task index.
  SmallVector<Operation *> computeOps;
  /// The collective op (comm.allreduce, comm.fused_allreduce or
  /// comm.start) each collective task stands for, by task index.
  SmallVector<Operation *> collectiveOps;
  /// Bytes each collective puts on the wire (wire precision applied).
  SmallVector<double> collectiveBytes;
  /// The parameter names of each collective's gradients, in operand order
  /// (empty where the op names none).
  SmallVector<SmallVector<std::string, 1>> collectiveMembers;
  /// The part of each collective's time that is its local work on the ranks
  /// (a sparse allreduce's passes, a dense one's unpacking and wire
  /// conversions), in microseconds.
  SmallVector<double> collectiveLocalUs;
  /// The part of each collective's time beyond its local work during which
  /// the host's cores still work, in microseconds: the ranks' arrival (the
  /// cluster's collective overhead: the last ranks still compute while the
  /// first wait) and a blocking call's handoff to the bridge's thread.
  SmallVector<double> collectiveArrivalUs;
  /// The CPU a rank's transport spends on each collective's bytes
  /// (HostCpu's ns_per_sent_byte and ns_per_gathered_byte), in
  /// microseconds; empty where the device describes no host.
  SmallVector<double> collectiveTransportUs;
  /// Whether the step has per-layer forward tasks, which steady-state
  /// simulation needs to let a layer's forward wait on its gradients only.
  bool hasLayeredForward = false;
  /// How fast collectives progress while compute runs (the device's
  /// compute_overlap; SimulationOptions::progressWhileComputing).
  double progressWhileComputing = 1;
  /// The host CPU a rank needs in a step (its compute and local work as
  /// CPU time, and the spread below), and the step time
  /// that bounds, with every rank of the host needing as much
  /// (HostCpu::boundUs); both 0 where the device describes no host. The
  /// simulation adds the time the cores idle while every rank waits on the
  /// network (StepTimeline::networkIdleUs).
  double cpuUs = 0;
  double cpuBoundUs = 0;
  /// The part of cpuUs that no task of the step does (the host's cost per
  /// step and its transport's): spread over the step, what of it falls
  /// while the cores idle on the network costs no step time.
  double cpuSpreadUs = 0;
  /// Whether the compute tasks run as the host's ranks share its cores
  /// (HostCpu::lockstepStretch; where the durations were timed apart from
  /// that sharing): the timeline then holds the ranks' waits on the network
  /// beside their stretched compute, and while every rank waits on a
  /// collective the cores do only its transport's CPU
  /// (StepTimeline::networkIdleUs).
  bool sharingInTimeline = false;
};

/// The compute cost in microseconds of `op` on `device`: its `cost_us` when
/// it is a comm.compute or carries a `comm.cost_us` attribute; otherwise a
/// roofline estimate for tensor ops of the linalg, arith and math dialects;
/// otherwise zero.
double estimateComputeUs(Operation *op, const DeviceModel &device);

/// The bytes a collective over `types` moves per rank, with `wire` (if not
/// null) replacing the element type on the wire. Dynamic shapes count as
/// zero-sized.
double getCollectiveBytes(TypeRange types, Type wire);

/// The cost model's allreduce algorithm for the dialect's `algorithm`, and
/// back.
AllreduceAlgorithm getAllreduceAlgorithm(AlgorithmKind algorithm);
AlgorithmKind getAlgorithmKind(AllreduceAlgorithm algorithm);
/// The cost model's backend for a `#comm.transport`, and back.
CollectiveBackend getCollectiveBackend(TransportKind transport);
TransportKind getTransportKind(CollectiveBackend backend);

/// Whether `cluster` (all ranks, or a process group's: ClusterModel::forGroup)
/// can run a hierarchical allreduce that differs from a flat one: several
/// nodes of several ranks each.
bool canRunHierarchical(const ClusterModel &cluster);

/// The allreduce algorithms `cluster` can run, its own algorithm first
/// (where it can run it), so that it wins a tie.
SmallVector<AllreduceAlgorithm, 3>
getAllreduceCandidates(const ClusterModel &cluster);

/// A dense allreduce's algorithm, the transport that carries it, and its
/// cost there.
struct AllreduceChoice {
  AllreduceAlgorithm algorithm;
  CollectiveBackend transport;
  /// allreduceCost's total, plus the wire's work on the ranks.
  double costUs;
};

/// The algorithm (`only`, where given; else a candidate,
/// getAllreduceCandidates) and transport of least cost for a dense allreduce
/// of `bytes` on the wire, `narrowedBytes` of whose gradients (in their own
/// type) a wire type narrows: on `cluster`'s backend and, where `transports`
/// allows it, on its alternate. `transports` is `cluster`'s backend, its
/// alternate's, or nullopt for both. The cluster's own backend wins a tie,
/// and on each backend its own algorithm does. The transport given must be
/// one `cluster` has (ClusterModel::onTransport).
AllreduceChoice
getCheapestAllreduceChoice(const ClusterModel &cluster, double bytes,
                           double narrowedBytes,
                           std::optional<AllreduceAlgorithm> only,
                           std::optional<CollectiveBackend> transports);

/// The clusters collectives run on, for pricing them: all ranks of
/// `cluster`, or the ranks and links of a collective's process group
/// (ClusterModel::forGroup), made once per group. A group on a grid of
/// dynamic size is priced among all ranks (it does not say who is grouped
/// with whom).
class CollectiveClusters {
public:
  explicit CollectiveClusters(const ClusterModel &cluster) : cluster(cluster) {}

  /// The cluster `op` runs on (on the alternate, for a collective whose
  /// `transport` is the alternate's backend); valid as long as this object.
  /// A `transport` the cluster does not have is priced on the cluster's own
  /// backend: buildStepModel rejects one first.
  const ClusterModel &get(CollectiveOpInterface op);
  /// The cluster of the ranks `op` runs among, on the cluster's own backend
  /// (with the alternate, where it has one), whatever its `transport`.
  const ClusterModel &getRanks(CollectiveOpInterface op);

private:
  const ClusterModel &cluster;
  SymbolTableCollection symbols;
  llvm::DenseMap<Attribute, std::unique_ptr<ClusterModel>> groups;
};

/// The cost of the dense allreduce `op` of `bytes` on `cluster` (the one it
/// runs on): with its `algorithm` when it has one (a mixed-wire bucket: the
/// ring), else the cluster's, and what its wire type adds on the ranks
/// (getWireCostUs).
CollectiveCost getDenseAllreduceCost(CollectiveOpInterface op,
                                     const ClusterModel &cluster, double bytes);

/// The bytes of the gradients of `op` that a wire type narrows, in their own
/// type.
double getNarrowedBytes(CollectiveOpInterface op);

/// The cost model's exchange scheme for `exchange`.
SparseExchangeScheme getSparseExchangeScheme(ExchangeKind exchange);

/// The cost model's selection scheme for `select`.
SparseSelectScheme getSparseSelectScheme(SelectKind select);

/// The time of a sparse allreduce's local `work` (sparseLocalWork) with
/// `select` on `device`: each phase at the device's measured rate
/// (DeviceModel::localWork) where it has one, else its memory traffic at the
/// device's memory bandwidth (all of them as one roofline op where it has
/// none).
double getSparseLocalUs(const DeviceModel &device, SelectKind select,
                        const SparseLocalWork &work);

/// The time of the local passes of the dense allreduce `op` on `cluster`
/// (the ranks it runs on) beside its reduction: the device's measured
/// dense_ns_per_element for each element that no wire type narrows (a
/// narrowed one's are priced by getWireCostUs); 0 without that rate.
double getDenseLocalUs(CollectiveOpInterface op, const ClusterModel &cluster,
                       const DeviceModel &device);

/// The time of a sparse allreduce of `gradient` on `cluster` (the ranks it
/// runs among): its exchange's messages, and, as a latency term that no
/// concurrent collective shares, its local steps (getSparseLocalUs),
/// `device.channelSlowdown` times as long `onChannel` (started: a channel
/// runs it beside compute), and that local part into `localUs` where given.
/// comm-sparsify and the step model price sparse allreduces, blocking or
/// started, with this one function.
CollectiveCost
getSparseAllreduceCost(const ClusterModel &cluster, const DeviceModel &device,
                       SelectKind select, ExchangeKind exchange,
                       ReduceKind reduce, const SparseGradient &gradient,
                       bool onChannel = false, double *localUs = nullptr);

/// A sparse allreduce of a gradient of static tensor type `type` at
/// `density`, with `chunkElements` per chunk, as the exchange costs need it
/// (the runtime's 8-byte indices and chunk norms).
SparseGradient describeSparseGradient(ShapedType type, double density,
                                      int64_t chunkElements);

/// The name of the model `module` holds, for reports: its `comm.model`
/// attribute (set by the profile imports), else its symbol name, else "".
std::string getModelName(ModuleOp module);

/// The module attribute that says the plan trains with Deep Gradient
/// Compression's momentum correction of its sparse gradients (set by
/// comm-record-cluster's `momentum-correction`), which the training bridge
/// runs on the compute thread (DeviceModel::bridge).
inline constexpr llvm::StringLiteral kMomentumCorrectionAttrName =
    "comm.momentum_correction";
/// The module attribute of a sparse warm-up (comm-record-cluster's
/// sparse-warmup-steps): {steps, start_density}.
inline constexpr llvm::StringLiteral kSparseWarmupAttrName =
    "comm.sparse_warmup";

/// Whether the module of `op` (or `op`, a module) records momentum
/// correction.
bool isMomentumCorrected(Operation *op);

/// Builds the step of `func`'s body: ops in program order; compute of ops
/// with regions is the sum of their nested ops' costs. Every comm.compute is
/// a task, even at zero cost (a forward step stays a point its layer's
/// gradients are waited at); other ops are tasks when they cost something. A
/// forward comm.compute without a `layer` is simulated as TaskPhase::Other.
/// A comm.wait after the last compute task gives its collective no wait
/// point when the collective carries layers: in steady state the next step's
/// forward of those layers waits for it (otherwise, the next step's start).
/// Collective costs come from `cluster` (a process group's from the group's
/// cluster), dense ones by their `algorithm` when they have one. Fails, with a
/// diagnostic on the op, on a comm.start whose comm.wait lies in another block,
/// or whose channel the cluster does not have. Where `device` has bridge
/// costs, the task that produces a gradient runs its hook (and, with
/// momentum correction, the correction of a sparse one), and the task after
/// a sparse allreduce's wait its momentum masking (a task of its own where
/// the wait ends the step).
FailureOr<StepModel> buildStepModel(func::FuncOp func,
                                    const ClusterModel &cluster,
                                    const DeviceModel &device);

/// How a step is simulated.
enum class SimulationMode {
  /// One step from a cold start (simulateStep).
  Step,
  /// Repeated steps, measured after warm-up (simulateSteadyState).
  SteadyState,
};

/// Returns the spelling of a mode in options and reports: "step" or
/// "steady".
StringRef stringifySimulationMode(SimulationMode mode);

/// Parses "step" or "steady".
std::optional<SimulationMode> symbolizeSimulationMode(StringRef spelling);

/// The simulated timeline of a StepModel, and the iterations that reports
/// and traces show: the single step, or the measured iterations of the
/// steady state.
struct StepTimeline {
  /// The simulator's result, with the events of every simulated iteration.
  TimelineResult result;
  /// The mode it was simulated in.
  SimulationMode mode = SimulationMode::Step;
  /// The first iteration shown (0, or the first measured one).
  unsigned firstIteration = 0;
  /// The number of iterations shown (1, or the measured ones).
  unsigned numIterations = 1;
  /// The time shown as zero: the earliest start of an event of the first
  /// shown iteration. Shown times are `event time - originUs`.
  double originUs = 0;
  /// Compute tasks and collectives per iteration.
  size_t numTasks = 0;
  size_t numCollectives = 0;
  /// The step the simulated timeline takes (the compute and collectives'
  /// events), before the host's bound (hostBoundUs) lengthens result.stepUs
  /// where that is longer.
  double simulatedStepUs = 0;
  /// Where the device describes its host: the time its cores idle in a
  /// step because every rank waits on the network, no compute beside it:
  /// each collective's time that no compute hides, less its local work and
  /// the ranks' arrival (StepModel::collectiveArrivalUs); where the
  /// timeline runs the host's sharing (StepModel::sharingInTimeline), less
  /// also the cores' time for every rank's transport CPU in that wait (the
  /// only CPU the ranks have then: the rest of the step's CPU cannot fill
  /// it).
  double networkIdleUs = 0;
  /// The step the host allows: networkIdleUs plus the time its cores need
  /// for the ranks' CPU outside those idle times (StepModel::cpuBoundUs,
  /// less the share of cpuSpreadUs that falls in them unless the timeline
  /// runs the host's sharing). 0 without a host.
  double hostBoundUs = 0;
  /// Prefix sums of the compute events' durations, in execution order:
  /// busyPrefixUs[i] is the busy time of events [0, i).
  std::vector<double> busyPrefixUs;

  /// The compute events of the shown iterations, in execution order.
  ArrayRef<ComputeEvent> getShownComputeEvents() const;
  /// The collective events of the shown iterations, ordered by iteration and
  /// then by collective index.
  ArrayRef<CollectiveEvent> getShownCollectiveEvents() const;
  /// The event of collective `index` in the first shown iteration.
  const CollectiveEvent &getFirstShownEvent(size_t index) const;
  /// The time in [startUs, endUs) during which no compute task runs: for a
  /// collective, the part of it that compute does not hide.
  double getComputeIdleUs(double startUs, double endUs) const;
};

/// The host's bound on collective `index` of `model` run by ranks in step
/// with nothing else in the step (as bench/embedding/exchange_alone.py
/// times an exchange): the cores' time for every rank's CPU in it (its
/// local work, scaled as `host`'s sharing scales CPU work, and its
/// transport's, StepModel::collectiveTransportUs), plus its time on the
/// network (its time in `timeline` less its local work and the ranks'
/// arrival) less the cores' time for its transport in that, as
/// simulateStepModel bounds a step; 0 where `host` is not described. The
/// collective takes the longer of this and its time in the timeline.
double getAloneHostBoundUs(const StepModel &model, const StepTimeline &timeline,
                           const HostCpu &host, size_t index);

/// Simulates `model` on `cluster`'s channels in `mode` (steady state with
/// `steadyState`'s iteration counts). Errors are the simulator's, naming the
/// task or collective and field.
llvm::Expected<StepTimeline>
simulateStepModel(const StepModel &model, const ClusterModel &cluster,
                  SimulationMode mode,
                  const SteadyStateOptions &steadyState = {});

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_STEPMODEL_H
