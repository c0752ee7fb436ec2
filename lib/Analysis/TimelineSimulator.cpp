//===- TimelineSimulator.cpp - Event-driven step simulator ----------------===//
//
// A discrete-event simulation of compute tasks on one compute channel and
// collectives on communication channels. Bandwidth sharing between
// concurrent collectives is egalitarian processor sharing, simulated with a
// virtual clock: while k collectives are in their bandwidth phase, virtual
// time advances at rate 1/k ("shared") or 1 ("independent"), so a collective
// that enters the phase at virtual time v with bandwidth work w ends when the
// virtual clock reaches v + w, whatever starts or ends in between. Every
// event costs O(log n), so a step with n tasks and collectives takes
// O(n log n).
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/TimelineSimulator.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::comm;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// Builds an error whose message is `field` followed by `message`.
llvm::Error fieldError(const llvm::Twine &field, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (field + ": " + message).str());
}

/// Whether `layer` is a valid layer id: any non-negative int64_t (the sets
/// and maps of layers are std ones, which reserve no keys).
bool isLayerId(int64_t layer) { return layer >= 0; }

/// Checks the description against the options; `steady` adds the
/// steady-state requirements (forward tasks have layers, carried layers have
/// forward tasks).
llvm::Error verifyStep(const StepDescription &step,
                       const SimulationOptions &options, bool steady) {
  if (options.channels < 1)
    return fieldError("options.channels", "expected at least one channel");
  if (!(options.progressWhileComputing > 0 &&
        options.progressWhileComputing <= 1))
    return fieldError("options.progressWhileComputing",
                      "expected a rate in (0, 1]");
  size_t numTasks = step.computeTasks.size();
  std::set<int64_t> forwardLayers;
  for (auto [i, task] : llvm::enumerate(step.computeTasks)) {
    if (!std::isfinite(task.durationUs) || task.durationUs < 0)
      return fieldError(llvm::formatv("computeTasks[{0}].durationUs", i).str(),
                        "expected a finite non-negative duration");
    if (steady && task.phase == TaskPhase::Forward) {
      if (!isLayerId(task.layer))
        return fieldError(llvm::formatv("computeTasks[{0}].layer", i).str(),
                          "a forward task needs a non-negative layer id");
      forwardLayers.insert(task.layer);
    }
  }
  if (steady && numTasks == 0)
    return fieldError("computeTasks", "steady state needs compute tasks");

  for (auto [c, collective] : llvm::enumerate(step.collectives)) {
    auto field = [&, c = c](llvm::StringRef name) {
      return llvm::formatv("collectives[{0}].{1}", c, name).str();
    };
    const CollectiveCost &cost = collective.cost;
    if (!std::isfinite(cost.latencyUs) || cost.latencyUs < 0)
      return fieldError(field("cost.latencyUs"),
                        "expected a finite non-negative time");
    if (!std::isfinite(cost.bandwidthUs) || cost.bandwidthUs < 0)
      return fieldError(field("cost.bandwidthUs"),
                        "expected a finite non-negative time");
    if (collective.issuedAfter && *collective.issuedAfter >= numTasks)
      return fieldError(field("issuedAfter"),
                        llvm::formatv("no compute task {0} (there are {1})",
                                      *collective.issuedAfter, numTasks)
                            .str());
    if (collective.blocking && collective.waitBefore)
      return fieldError(field("waitBefore"),
                        "a blocking collective has no separate wait point");
    if (collective.waitBefore) {
      size_t earliest =
          collective.issuedAfter ? *collective.issuedAfter + 1 : 0;
      if (*collective.waitBefore < earliest)
        return fieldError(field("waitBefore"),
                          "the wait must come after the issue");
      if (*collective.waitBefore > numTasks)
        return fieldError(field("waitBefore"),
                          llvm::formatv("no compute task {0} (there are {1})",
                                        *collective.waitBefore, numTasks)
                              .str());
    }
    if (collective.channel >= options.channels)
      return fieldError(field("channel"),
                        llvm::formatv("channel {0} out of {1}",
                                      collective.channel, options.channels)
                            .str());
    if (steady)
      for (int64_t layer : collective.layers)
        if (!isLayerId(layer) || !forwardLayers.count(layer))
          return fieldError(
              field("layers"),
              llvm::formatv("layer {0} has no forward task", layer).str());
  }
  return llvm::Error::success();
}

/// Fails when the step cannot be timed in doubles: every time the
/// simulation reaches is at most the sum of all durations over all
/// `iterations` (while work is left, some of it progresses), and past the
/// largest double the clock would stop at infinity with tasks left
/// unsimulated. Half the largest double leaves room for rounding.
llvm::Error checkTotalTime(const StepDescription &step, unsigned iterations) {
  constexpr double kMaxTotalUs = std::numeric_limits<double>::max() / 2;
  double total = 0;
  for (const ComputeTask &task : step.computeTasks)
    total += task.durationUs;
  for (const CollectiveTask &collective : step.collectives)
    total += collective.cost.totalUs();
  if (total * iterations <= kMaxTotalUs)
    return llvm::Error::success();
  return fieldError("step",
                    llvm::formatv("its compute tasks and collectives take "
                                  "more than {0:e} us in all over {1} "
                                  "iteration(s), too long to simulate",
                                  kMaxTotalUs, iterations)
                        .str());
}

/// A compressed list of lists, indexed 0..size-1.
template <typename T> class Csr {
public:
  Csr() = default;

  /// Builds the lists from (list, value) pairs; values keep their order.
  Csr(size_t numLists, llvm::ArrayRef<std::pair<size_t, T>> entries)
      : offsets(numLists + 1, 0) {
    for (const auto &entry : entries)
      ++offsets[entry.first + 1];
    for (size_t i = 0; i < numLists; ++i)
      offsets[i + 1] += offsets[i];
    values.resize(entries.size());
    std::vector<size_t> next(offsets.begin(), offsets.end() - 1);
    for (const auto &entry : entries)
      values[next[entry.first]++] = entry.second;
  }

  llvm::ArrayRef<T> operator[](size_t list) const {
    return llvm::ArrayRef<T>(values).slice(offsets[list],
                                           offsets[list + 1] - offsets[list]);
  }

private:
  std::vector<size_t> offsets;
  std::vector<T> values;
};

/// A dependency between a collective and a compute task: the task of the
/// same iteration (offset 0) or of the next one (offset 1) cannot start
/// before the collective ends.
struct Gate {
  /// The compute task (from a collective) or the collective (from a task).
  size_t other;
  unsigned offset;
};

/// The simulation of `iterations` iterations of one step.
class Simulation {
public:
  Simulation(const StepDescription &step, const SimulationOptions &options,
             unsigned iterations, bool steady);

  /// Runs to completion and returns the events; the summary figures are
  /// filled in by the caller.
  TimelineResult run();

private:
  enum class EventKind { ComputeEnd, LatencyEnd };

  /// An event at a known time: a compute task or a collective's latency
  /// phase ends.
  struct TimedEvent {
    double time;
    uint64_t sequence;
    EventKind kind;
    size_t id;
    /// A latency end's version: one that is no longer the collective's
    /// (latencyVersion) was moved by a change of rate.
    uint32_t version = 0;
    bool operator>(const TimedEvent &other) const {
      return std::tie(time, sequence) > std::tie(other.time, other.sequence);
    }
  };

  /// A collective in its bandwidth phase, ending at virtual time `finish`.
  struct BandwidthJob {
    double finish;
    size_t instance;
    bool operator>(const BandwidthJob &other) const {
      return std::tie(finish, instance) >
             std::tie(other.finish, other.instance);
    }
  };

  /// A ready collective waiting for its channel.
  struct ReadyEntry {
    int64_t priority;
    uint64_t sequence;
    size_t instance;
    bool operator>(const ReadyEntry &other) const {
      return std::tie(priority, sequence) >
             std::tie(other.priority, other.sequence);
    }
  };

  template <typename T>
  using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<T>>;

  /// Collective of an instance (iteration * numCollectives + index).
  const CollectiveTask &collectiveOf(size_t instance) const {
    return step.collectives[instance % numCollectives];
  }

  void issueAll(llvm::ArrayRef<size_t> collectives, unsigned iteration);
  void markDirty(unsigned channel);
  void dispatch();
  size_t countPendingGates(size_t taskInstance) const;
  void handle(const TimedEvent &event);
  void finishComputeTask(size_t taskInstance);
  void enterBandwidthPhase(size_t instance);
  void complete(size_t instance);
  /// The rate at which collectives progress now.
  double progressRate() const {
    return computeBusy ? options.progressWhileComputing : 1.0;
  }
  /// Moves the latency ends in flight after the compute channel became
  /// busy (or idle) at `now`, changing the rate from `before`.
  void rescheduleLatencies(double before);

  const StepDescription &step;
  SimulationOptions options;
  unsigned iterations;
  size_t numTasks;
  size_t numCollectives;

  /// Collectives issued when an iteration starts (list 0) and after task i
  /// (list i + 1), in index order.
  Csr<size_t> issued;
  /// For every task, the collectives it waits for.
  Csr<Gate> gatesOfTask;
  /// For every collective, the tasks that wait for it.
  Csr<Gate> gatesOfCollective;

  double now = 0;
  double virtualTime = 0;
  unsigned activeBandwidth = 0;
  uint64_t sequence = 0;
  MinHeap<TimedEvent> timedEvents;
  MinHeap<BandwidthJob> bandwidthJobs;

  std::vector<MinHeap<ReadyEntry>> readyQueues;
  std::vector<bool> channelBusy;
  std::vector<bool> channelDirty;
  std::vector<unsigned> dirtyChannels;

  /// The next compute task instance (iteration * numTasks + index).
  size_t nextTask = 0;
  bool computeBusy = false;
  /// Whether pendingGates has been counted for nextTask.
  bool gatesCounted = false;
  size_t pendingGates = 0;

  std::vector<bool> collectiveDone;
  /// The collectives in their latency phase and when it ends at the current
  /// rate, and each collective instance's latency version.
  std::vector<std::pair<size_t, double>> inLatency;
  std::vector<uint32_t> latencyVersion;
  TimelineResult result;
};

/// The effective wait index of a collective: where its compute stall sits.
std::optional<size_t> waitIndex(const CollectiveTask &collective) {
  if (collective.blocking)
    return collective.issuedAfter ? *collective.issuedAfter + 1 : 0;
  return collective.waitBefore;
}

/// The issue list of a collective: 0 at iteration start, i + 1 after task i.
size_t issueList(const CollectiveTask &collective) {
  return collective.issuedAfter ? *collective.issuedAfter + 1 : 0;
}

/// (task, gate) pairs of every dependency in `step`.
std::vector<std::pair<size_t, Gate>> taskGates(const StepDescription &step,
                                               bool steady) {
  size_t numTasks = step.computeTasks.size();
  std::map<int64_t, llvm::SmallVector<size_t, 1>> forwardTasks;
  if (steady)
    for (auto [i, task] : llvm::enumerate(step.computeTasks))
      if (task.phase == TaskPhase::Forward)
        forwardTasks[task.layer].push_back(i);

  std::vector<std::pair<size_t, Gate>> gates;
  for (auto [c, collective] : llvm::enumerate(step.collectives)) {
    std::optional<size_t> wait = waitIndex(collective);
    if (wait && *wait < numTasks)
      gates.push_back({*wait, Gate{c, 0}});
    if (!steady)
      continue;
    // Waited at the end of its iteration: the next iteration's first task.
    if ((wait && *wait == numTasks) || (!wait && collective.layers.empty()))
      gates.push_back({0, Gate{c, 1}});
    for (int64_t layer : collective.layers)
      for (size_t task : forwardTasks.find(layer)->second)
        gates.push_back({task, Gate{c, 1}});
  }
  return gates;
}

/// The same dependencies, listed by collective.
std::vector<std::pair<size_t, Gate>>
invertGates(llvm::ArrayRef<std::pair<size_t, Gate>> gates) {
  std::vector<std::pair<size_t, Gate>> inverted;
  inverted.reserve(gates.size());
  for (const auto &[task, gate] : gates)
    inverted.push_back({gate.other, Gate{task, gate.offset}});
  return inverted;
}

std::vector<std::pair<size_t, size_t>>
issueEntries(const StepDescription &step) {
  std::vector<std::pair<size_t, size_t>> entries;
  entries.reserve(step.collectives.size());
  for (auto [c, collective] : llvm::enumerate(step.collectives))
    entries.push_back({issueList(collective), c});
  return entries;
}

Simulation::Simulation(const StepDescription &step,
                       const SimulationOptions &options, unsigned iterations,
                       bool steady)
    : step(step), options(options), iterations(iterations),
      numTasks(step.computeTasks.size()),
      numCollectives(step.collectives.size()),
      issued(numTasks + 1, issueEntries(step)), readyQueues(options.channels),
      channelBusy(options.channels, false),
      channelDirty(options.channels, false),
      collectiveDone(numCollectives * iterations, false),
      latencyVersion(numCollectives * iterations, 0) {
  std::vector<std::pair<size_t, Gate>> gates = taskGates(step, steady);
  gatesOfTask = Csr<Gate>(numTasks, gates);
  gatesOfCollective = Csr<Gate>(numCollectives, invertGates(gates));
  result.iterations = iterations;
  result.computeEvents.resize(numTasks * iterations);
  result.collectiveEvents.resize(numCollectives * iterations);
  for (unsigned t = 0; t < iterations; ++t) {
    for (size_t i = 0; i < numTasks; ++i)
      result.computeEvents[t * numTasks + i] = {i, t, 0, 0};
    for (size_t c = 0; c < numCollectives; ++c)
      result.collectiveEvents[t * numCollectives + c] = {
          c, t, step.collectives[c].channel, 0, 0, 0};
  }
}

void Simulation::markDirty(unsigned channel) {
  if (channelDirty[channel])
    return;
  channelDirty[channel] = true;
  dirtyChannels.push_back(channel);
}

void Simulation::issueAll(llvm::ArrayRef<size_t> collectives,
                          unsigned iteration) {
  for (size_t c : collectives) {
    const CollectiveTask &collective = step.collectives[c];
    size_t instance = iteration * numCollectives + c;
    result.collectiveEvents[instance].issueUs = now;
    int64_t priority =
        collective.priority.value_or(std::numeric_limits<int64_t>::max());
    readyQueues[collective.channel].push({priority, sequence++, instance});
    markDirty(collective.channel);
  }
}

size_t Simulation::countPendingGates(size_t taskInstance) const {
  size_t iteration = taskInstance / numTasks;
  size_t pending = 0;
  for (const Gate &gate : gatesOfTask[taskInstance % numTasks]) {
    if (gate.offset > iteration)
      continue;
    size_t instance = (iteration - gate.offset) * numCollectives + gate.other;
    pending += !collectiveDone[instance];
  }
  return pending;
}

void Simulation::dispatch() {
  if (!computeBusy && nextTask < numTasks * iterations) {
    if (!gatesCounted) {
      pendingGates = countPendingGates(nextTask);
      gatesCounted = true;
    }
    if (pendingGates == 0) {
      double before = progressRate();
      computeBusy = true;
      ComputeEvent &event = result.computeEvents[nextTask];
      event.startUs = now;
      double duration = step.computeTasks[nextTask % numTasks].durationUs;
      timedEvents.push(
          {now + duration, sequence++, EventKind::ComputeEnd, nextTask});
      rescheduleLatencies(before);
    }
  }
  for (unsigned channel : dirtyChannels) {
    channelDirty[channel] = false;
    MinHeap<ReadyEntry> &queue = readyQueues[channel];
    if (channelBusy[channel] || queue.empty())
      continue;
    size_t instance = queue.top().instance;
    queue.pop();
    channelBusy[channel] = true;
    result.collectiveEvents[instance].startUs = now;
    double end = now + collectiveOf(instance).cost.latencyUs / progressRate();
    timedEvents.push({end, sequence++, EventKind::LatencyEnd, instance,
                      latencyVersion[instance]});
    if (options.progressWhileComputing < 1)
      inLatency.push_back({instance, end});
  }
  dirtyChannels.clear();
}

void Simulation::rescheduleLatencies(double before) {
  double after = progressRate();
  if (after == before)
    return;
  for (auto &[instance, end] : inLatency) {
    end = now + (end - now) * before / after;
    timedEvents.push({end, sequence++, EventKind::LatencyEnd, instance,
                      ++latencyVersion[instance]});
  }
}

void Simulation::finishComputeTask(size_t taskInstance) {
  double before = progressRate();
  computeBusy = false;
  rescheduleLatencies(before);
  result.computeEvents[taskInstance].endUs = now;
  unsigned iteration = taskInstance / numTasks;
  size_t index = taskInstance % numTasks;
  issueAll(issued[index + 1], iteration);
  if (index + 1 == numTasks && iteration + 1 < iterations)
    issueAll(issued[0], iteration + 1);
  nextTask = taskInstance + 1;
  gatesCounted = false;
}

void Simulation::enterBandwidthPhase(size_t instance) {
  double work = collectiveOf(instance).cost.bandwidthUs;
  if (work <= 0) {
    complete(instance);
    return;
  }
  ++activeBandwidth;
  bandwidthJobs.push({virtualTime + work, instance});
}

void Simulation::complete(size_t instance) {
  const CollectiveTask &collective = collectiveOf(instance);
  result.collectiveEvents[instance].endUs = now;
  collectiveDone[instance] = true;
  channelBusy[collective.channel] = false;
  markDirty(collective.channel);
  if (!gatesCounted)
    return;
  size_t iteration = instance / numCollectives;
  for (const Gate &gate : gatesOfCollective[instance % numCollectives])
    if ((iteration + gate.offset) * numTasks + gate.other == nextTask)
      --pendingGates;
}

void Simulation::handle(const TimedEvent &event) {
  switch (event.kind) {
  case EventKind::ComputeEnd:
    finishComputeTask(event.id);
    return;
  case EventKind::LatencyEnd:
    if (event.version != latencyVersion[event.id])
      return;
    if (options.progressWhileComputing < 1)
      llvm::erase_if(inLatency, [&](const std::pair<size_t, double> &job) {
        return job.first == event.id;
      });
    enterBandwidthPhase(event.id);
    return;
  }
}

TimelineResult Simulation::run() {
  issueAll(issued[0], 0);
  bool shared = options.sharing == ChannelSharing::Shared;
  while (true) {
    dispatch();
    double nextTimed = timedEvents.empty() ? kInfinity : timedEvents.top().time;
    // Real time per unit of virtual time while the job set and the rate
    // are unchanged.
    double slowdown =
        (shared ? static_cast<double>(activeBandwidth) : 1.0) / progressRate();
    double nextFinish =
        bandwidthJobs.empty()
            ? kInfinity
            : now + (bandwidthJobs.top().finish - virtualTime) * slowdown;
    if (nextTimed == kInfinity && nextFinish == kInfinity)
      break;
    if (nextFinish <= nextTimed) {
      now = nextFinish;
      virtualTime = bandwidthJobs.top().finish;
    } else {
      if (activeBandwidth > 0)
        virtualTime += (nextTimed - now) / slowdown;
      now = nextTimed;
    }
    while (!timedEvents.empty() && timedEvents.top().time <= now) {
      TimedEvent event = timedEvents.top();
      timedEvents.pop();
      handle(event);
    }
    // Jobs whose virtual finish is reached up to rounding end now.
    double tolerance = 1e-12 * std::max(1.0, std::fabs(virtualTime));
    while (!bandwidthJobs.empty() &&
           bandwidthJobs.top().finish <= virtualTime + tolerance) {
      size_t instance = bandwidthJobs.top().instance;
      bandwidthJobs.pop();
      --activeBandwidth;
      complete(instance);
    }
  }
  assert(nextTask == numTasks * iterations && "compute never finished");
  assert(llvm::all_of(collectiveDone, [](bool done) { return done; }) &&
         "a collective never ran");
  return std::move(result);
}

/// Sum of the durations of the given collective events.
double sumDurations(llvm::ArrayRef<CollectiveEvent> events) {
  double sum = 0;
  for (const CollectiveEvent &event : events)
    sum += event.endUs - event.startUs;
  return sum;
}

double totalCompute(const StepDescription &step) {
  double sum = 0;
  for (const ComputeTask &task : step.computeTasks)
    sum += task.durationUs;
  return sum;
}

} // namespace

llvm::Expected<TimelineResult>
comm::simulateStep(const StepDescription &step,
                   const SimulationOptions &options) {
  if (llvm::Error error = verifyStep(step, options, /*steady=*/false))
    return std::move(error);
  if (llvm::Error error = checkTotalTime(step, /*iterations=*/1))
    return std::move(error);
  TimelineResult result =
      Simulation(step, options, /*iterations=*/1, /*steady=*/false).run();
  double end = 0;
  if (!result.computeEvents.empty())
    end = result.computeEvents.back().endUs;
  for (const CollectiveEvent &event : result.collectiveEvents)
    end = std::max(end, event.endUs);
  result.stepUs = end;
  result.computeUs = totalCompute(step);
  result.communicationUs = sumDurations(result.collectiveEvents);
  result.exposedCommunicationUs =
      std::max(0.0, result.stepUs - result.computeUs);
  return result;
}

llvm::Expected<TimelineResult>
comm::simulateSteadyState(const StepDescription &step,
                          const SimulationOptions &options,
                          const SteadyStateOptions &steadyState) {
  if (steadyState.measuredIterations < 1)
    return fieldError("steadyState.measuredIterations",
                      "expected at least one measured iteration");
  if (llvm::Error error = verifyStep(step, options, /*steady=*/true))
    return std::move(error);
  unsigned first = steadyState.warmupIterations;
  unsigned measured = steadyState.measuredIterations;
  // One more iteration than measured: its start ends the last measured one.
  unsigned iterations = first + measured + 1;
  if (llvm::Error error = checkTotalTime(step, iterations))
    return std::move(error);
  TimelineResult result =
      Simulation(step, options, iterations, /*steady=*/true).run();
  size_t numTasks = step.computeTasks.size();
  size_t numCollectives = step.collectives.size();
  auto iterationStart = [&](unsigned iteration) {
    return result.computeEvents[iteration * numTasks].startUs;
  };
  result.stepUs = (iterationStart(first + measured) - iterationStart(first)) /
                  static_cast<double>(measured);
  result.computeUs = totalCompute(step);
  result.communicationUs = sumDurations(llvm::ArrayRef(result.collectiveEvents)
                                            .slice(first * numCollectives,
                                                   measured * numCollectives)) /
                           static_cast<double>(measured);
  result.exposedCommunicationUs =
      std::max(0.0, result.stepUs - result.computeUs);
  return result;
}

double comm::getOneChannelLowerBoundUs(const StepDescription &step) {
  std::vector<double> computeEndUs;
  computeEndUs.reserve(step.computeTasks.size());
  double computeUs = 0.0;
  for (const ComputeTask &task : step.computeTasks)
    computeEndUs.push_back(computeUs += task.durationUs);
  // Each collective's earliest possible issue time and its cost.
  std::vector<std::pair<double, double>> work;
  work.reserve(step.collectives.size());
  for (const CollectiveTask &collective : step.collectives) {
    std::optional<size_t> after = collective.issuedAfter;
    double readyUs =
        after && *after < computeEndUs.size() ? computeEndUs[*after] : 0.0;
    work.push_back({readyUs, collective.cost.totalUs()});
  }
  // Collectives listed in issue order need no sort.
  auto byReadyTime = [](const std::pair<double, double> &a,
                        const std::pair<double, double> &b) {
    return a.first < b.first;
  };
  if (!llvm::is_sorted(work, byReadyTime))
    llvm::stable_sort(work, byReadyTime);
  double boundUs = computeUs, laterUs = 0.0;
  for (const auto &[readyUs, costUs] : llvm::reverse(work)) {
    laterUs += costUs;
    boundUs = std::max(boundUs, readyUs + laterUs);
  }
  return boundUs;
}
