//===- TimelineSimulator.h - Event-driven step simulator --------*- C++ -*-===//
//
// Simulates one training step, or the steady state of repeated steps, given
// as compute tasks on one compute channel and collectives on communication
// channels. The description is independent of MLIR: a pass (comm-estimate)
// or an importer builds it, the simulator returns the step time, exposed
// communication and every event's start and end. Semantics in
// docs/CostModel.md, section "Timeline simulator".
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_TIMELINESIMULATOR_H
#define COMMOPT_ANALYSIS_TIMELINESIMULATOR_H

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::comm {

/// Which part of a training iteration a compute task belongs to.
enum class TaskPhase {
  /// The forward computation of layer `ComputeTask::layer`. In steady state
  /// it waits for the previous iteration's collectives that carry that
  /// layer's gradients.
  Forward,
  /// Backward computation (produces gradients).
  Backward,
  /// Anything else (optimizer step, data loading, ...).
  Other,
};

/// One compute task; tasks run one after another in program order on the
/// single compute channel.
struct ComputeTask {
  /// Duration in microseconds.
  double durationUs = 0;
  /// Name for reports and traces.
  std::string label;
  /// Phase of the iteration the task belongs to.
  TaskPhase phase = TaskPhase::Other;
  /// Layer id; required (>= 0) for forward tasks in steady state, otherwise
  /// informational. -1 when the task has no layer.
  int64_t layer = -1;
};

/// One collective. It becomes ready (is issued) when the compute task
/// `issuedAfter` ends, and runs on `channel` once that channel is free and it
/// is the channel's next pick: the earliest issued, or with priorities the
/// most urgent (lowest value; collectives without priority come after all
/// with one, then in issue order).
struct CollectiveTask {
  /// Name for reports and traces.
  std::string label;
  /// Time at full bandwidth, split into latency and bandwidth parts (see
  /// CollectiveCost.h). Under ChannelSharing::Shared the bandwidth part of
  /// k concurrent collectives progresses at rate 1/k each.
  CollectiveCost cost;
  /// Index of the compute task after which it is issued; none: issued when
  /// the iteration starts (time 0 in a single step).
  std::optional<size_t> issuedAfter;
  /// Index of the compute task that waits for it (that task cannot start
  /// before the collective ends); must be after `issuedAfter`. Equal to the
  /// number of tasks, or none: waited at the end of the step.
  std::optional<size_t> waitBefore;
  /// A blocking collective stalls compute from its issue until it ends; it is
  /// the same as waitBefore = issuedAfter + 1 and has no separate wait point.
  bool blocking = false;
  /// Communication channel, below SimulationOptions::channels.
  unsigned channel = 0;
  /// Lower is more urgent.
  std::optional<int64_t> priority;
  /// Layers whose gradients it carries. In steady state, the next
  /// iteration's forward tasks of these layers wait for it.
  llvm::SmallVector<int64_t, 2> layers;
};

/// A training step: compute tasks in program order and the collectives.
struct StepDescription {
  std::vector<ComputeTask> computeTasks;
  std::vector<CollectiveTask> collectives;
};

/// How the communication channels behave.
struct SimulationOptions {
  /// Number of communication channels; every collective's channel is below.
  unsigned channels = 1;
  /// How concurrent collectives share bandwidth.
  ChannelSharing sharing = ChannelSharing::Shared;
  /// How fast collectives progress while a compute task runs, relative to
  /// while none does, in (0, 1]: 1 where the network and its engines work
  /// beside compute (GPUs, NICs); less where the ranks' communication
  /// threads share the host's cores with compute
  /// (DeviceModel::computeOverlap).
  double progressWhileComputing = 1;

  /// The cluster's channel count and sharing mode.
  static SimulationOptions fromCluster(const ClusterModel &cluster) {
    return {cluster.channels, cluster.sharing};
  }
};

/// How many iterations a steady-state simulation runs.
struct SteadyStateOptions {
  /// Iterations simulated before measuring (the first one starts cold).
  unsigned warmupIterations = 2;
  /// Iterations measured; the reported time is their average.
  unsigned measuredIterations = 4;
};

/// When one compute task ran.
struct ComputeEvent {
  /// Index into StepDescription::computeTasks.
  size_t task;
  /// Iteration (0 in a single step).
  unsigned iteration;
  double startUs;
  double endUs;
};

/// When one collective was issued, started and ended.
struct CollectiveEvent {
  /// Index into StepDescription::collectives.
  size_t collective;
  /// Iteration (0 in a single step).
  unsigned iteration;
  /// Its channel.
  unsigned channel;
  /// When it became ready.
  double issueUs;
  /// When its channel started it.
  double startUs;
  double endUs;
};

/// The outcome of a simulation. In steady state the times are per iteration,
/// averaged over the measured iterations.
struct TimelineResult {
  /// Single step: max(end of the last compute task, end of the last
  /// collective). Steady state: time between the starts of consecutive
  /// iterations.
  double stepUs = 0;
  /// Sum of the compute tasks' durations.
  double computeUs = 0;
  /// Sum of the collectives' durations (start to end; overlapping
  /// collectives count in full).
  double communicationUs = 0;
  /// Time the compute channel is idle waiting for communication, including
  /// the tail after the last compute task: stepUs - computeUs.
  double exposedCommunicationUs = 0;
  /// Number of iterations simulated (1 for a single step).
  unsigned iterations = 1;
  /// Every compute task of every simulated iteration, in execution order.
  std::vector<ComputeEvent> computeEvents;
  /// Every collective of every simulated iteration, ordered by iteration and
  /// then by index.
  std::vector<CollectiveEvent> collectiveEvents;
};

/// Simulates a single step. Fails when the description is inconsistent (the
/// error names the task or collective and field).
llvm::Expected<TimelineResult> simulateStep(const StepDescription &step,
                                            const SimulationOptions &options);

/// A lower bound of simulateStep's step time for `step` on one channel,
/// without simulating it: O(n) for collectives listed in issue order. The
/// channel runs one collective at a time, none before the compute task it
/// is issued after ends, and waits only delay compute, so for every
/// collective the channel is busy after its issue for at least its own cost
/// and that of every collective issued no earlier; the step also lasts at
/// least its compute. It is exact when nothing stalls compute (the channel
/// never idles while a collective is issued).
double getOneChannelLowerBoundUs(const StepDescription &step);

/// Simulates repeated iterations of `step`, in which the forward task of
/// layer L waits for the previous iteration's collectives carrying L, and
/// collectives without a wait point or layers are waited at the end of their
/// iteration; returns the per-iteration time in steady state.
llvm::Expected<TimelineResult>
simulateSteadyState(const StepDescription &step,
                    const SimulationOptions &options,
                    const SteadyStateOptions &steadyState = {});

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_TIMELINESIMULATOR_H
