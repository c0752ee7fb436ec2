//===- TimelineSimulatorTest.cpp - Tests of the timeline simulator --------===//
//
// Hand-built step graphs with hand-computed timelines, error reporting, and
// large random graphs checked for consistency (never for wall-clock time).
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/TimelineSimulator.h"

#include "llvm/ADT/STLExtras.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <random>

using namespace mlir::comm;

namespace {

ComputeTask task(double durationUs, TaskPhase phase = TaskPhase::Other,
                 int64_t layer = -1) {
  ComputeTask result;
  result.durationUs = durationUs;
  result.phase = phase;
  result.layer = layer;
  return result;
}

/// A collective issued after task `issuedAfter` (none: at the start).
CollectiveTask collective(std::optional<size_t> issuedAfter, double bandwidthUs,
                          double latencyUs = 0, unsigned channel = 0) {
  CollectiveTask result;
  result.issuedAfter = issuedAfter;
  result.cost = CollectiveCost{latencyUs, bandwidthUs};
  result.channel = channel;
  return result;
}

SimulationOptions channels(unsigned count, ChannelSharing sharing) {
  return SimulationOptions{count, sharing};
}

TimelineResult simulate(const StepDescription &step,
                        const SimulationOptions &options = {}) {
  llvm::Expected<TimelineResult> result = simulateStep(step, options);
  EXPECT_TRUE(bool(result)) << llvm::toString(result.takeError());
  return result ? std::move(*result) : TimelineResult();
}

std::string simulationError(const StepDescription &step,
                            const SimulationOptions &options = {},
                            bool steady = false) {
  if (steady)
    return llvm::toString(simulateSteadyState(step, options).takeError());
  return llvm::toString(simulateStep(step, options).takeError());
}

/// A step of two collectives issued at the start, on channels 0 and 1, of
/// {bandwidth, latency} `first` and `second`.
StepDescription startingTogether(std::pair<double, double> first,
                                 std::pair<double, double> second) {
  return {{},
          {collective(std::nullopt, first.first, first.second, 0),
           collective(std::nullopt, second.first, second.second, 1)}};
}

/// A copy of `collective` that blocks compute until it ends.
CollectiveTask blocking(CollectiveTask collective) {
  collective.blocking = true;
  return collective;
}

/// A copy of `collective` waited for before compute task `task`.
CollectiveTask waitedBefore(size_t task, CollectiveTask collective) {
  collective.waitBefore = task;
  return collective;
}

/// The issue, start and end of a collective event.
using CollectiveTimes = std::array<double, 3>;

/// Every figure of a single-step timeline: the step, compute, communication
/// and exposed communication times, the start of every compute task, and the
/// times of every collective.
struct Timeline {
  std::array<double, 4> totals;
  std::vector<double> computeStarts;
  std::vector<CollectiveTimes> collectives;
};

/// Expects `result` to be `expected`, figure for figure.
void expectTimeline(const TimelineResult &result, const Timeline &expected) {
  EXPECT_EQ((std::array<double, 4>{result.stepUs, result.computeUs,
                                   result.communicationUs,
                                   result.exposedCommunicationUs}),
            expected.totals)
      << "step, compute, communication, exposed";
  std::vector<double> computeStarts;
  for (const ComputeEvent &event : result.computeEvents)
    computeStarts.push_back(event.startUs);
  EXPECT_EQ(computeStarts, expected.computeStarts) << "compute starts";
  std::vector<CollectiveTimes> collectives;
  for (const CollectiveEvent &event : result.collectiveEvents)
    collectives.push_back({event.issueUs, event.startUs, event.endUs});
  EXPECT_EQ(collectives, expected.collectives)
      << "collectives' issue, start, end";
}

/// Expects the steady state of `step` to take `stepUs` an iteration, of
/// which `exposedUs` exposed communication.
void expectSteadyState(const StepDescription &step, double stepUs,
                       double exposedUs) {
  llvm::Expected<TimelineResult> result =
      simulateSteadyState(step, SimulationOptions());
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  EXPECT_DOUBLE_EQ(result->stepUs, stepUs);
  EXPECT_DOUBLE_EQ(result->exposedCommunicationUs, exposedUs);
}

//===----------------------------------------------------------------------===//
// Single step
//===----------------------------------------------------------------------===//

// The totals in the expected timelines: {step, compute, communication,
// exposed}, where communication sums the collectives' durations from their
// start and exposed is step - compute.

// Collectives slow down while compute runs (progressWhileComputing, a
// host whose cores its ranks' compute and communication share): a
// collective of 10 us of latency started with a task of 20 us at half rate
// does 10 us of work in 20 us; beside a task of 10 us, 5 us of it, then the
// other 5 at full rate. Bandwidth likewise, and a collective started on an
// idle host is not slowed.
TEST(TimelineSimulator, ProgressWhileComputing) {
  SimulationOptions half{1, ChannelSharing::Shared, 0.5};
  TimelineResult latency =
      simulate({{task(20)}, {collective(std::nullopt, 0, 10)}}, half);
  EXPECT_DOUBLE_EQ(latency.collectiveEvents[0].endUs, 20);
  TimelineResult shorter =
      simulate({{task(10)}, {collective(std::nullopt, 0, 10)}}, half);
  EXPECT_DOUBLE_EQ(shorter.collectiveEvents[0].endUs, 15);
  TimelineResult bandwidth =
      simulate({{task(10)}, {collective(std::nullopt, 10)}}, half);
  EXPECT_DOUBLE_EQ(bandwidth.collectiveEvents[0].endUs, 15);
  // Issued after the task: the host is idle, no slowdown.
  TimelineResult after = simulate({{task(10)}, {collective(0, 4, 6)}}, half);
  EXPECT_DOUBLE_EQ(after.collectiveEvents[0].endUs, 20);
  // Issued by a task that another one follows at once: all of its latency
  // runs beside compute, 10 us of work in 20 us.
  TimelineResult starting =
      simulate({{task(2), task(30)}, {collective(0, 0, 10)}}, half);
  EXPECT_DOUBLE_EQ(starting.collectiveEvents[0].endUs, 22);
  // At rate 1 nothing changes.
  TimelineResult full =
      simulate({{task(20)}, {collective(std::nullopt, 4, 6)}},
               SimulationOptions{1, ChannelSharing::Shared, 1.0});
  EXPECT_DOUBLE_EQ(full.collectiveEvents[0].endUs, 10);
  EXPECT_NE(simulationError({{task(1)}, {}},
                            SimulationOptions{1, ChannelSharing::Shared, 0}),
            "");
}

TEST(TimelineSimulator, OverlapHidesCommunication) {
  TimelineResult result =
      simulate({{task(100), task(100)}, {collective(0, 50)}});
  // Compute 0-100, 100-200; the collective 100-150 under task 1.
  expectTimeline(result, {{200, 200, 50, 0}, {0, 100}, {{100, 100, 150}}});
}

TEST(TimelineSimulator, BlockingDoesNotOverlap) {
  TimelineResult result =
      simulate({{task(100), task(100)}, {blocking(collective(0, 50))}});
  // Task 1 waits for the collective: 0-100, collective 100-150, 150-250.
  expectTimeline(result, {{250, 200, 50, 50}, {0, 150}, {{100, 100, 150}}});
}

TEST(TimelineSimulator, BlockingAtStartStallsFirstTask) {
  TimelineResult result =
      simulate({{task(100)}, {blocking(collective(std::nullopt, 30, 5))}});
  // Collective 0-35 (5 latency + 30 bandwidth), then the task 35-135.
  expectTimeline(result, {{135, 100, 35, 35}, {35}, {{0, 0, 35}}});
}

TEST(TimelineSimulator, WaitPointStalls) {
  TimelineResult result = simulate({{task(100), task(100), task(100)},
                                    {waitedBefore(2, collective(0, 150))}});
  // Task 1 runs 100-200 under the collective (100-250); task 2 waits for it:
  // 250-350. Exposed: 50.
  expectTimeline(result,
                 {{350, 300, 150, 50}, {0, 100, 250}, {{100, 100, 250}}});
}

TEST(TimelineSimulator, TailAfterLastComputeIsExposed) {
  TimelineResult result = simulate({{task(100)}, {collective(0, 30, 5)}});
  // Collective 100-135 after the only task.
  expectTimeline(result, {{135, 100, 35, 35}, {0}, {{100, 100, 135}}});
}

TEST(TimelineSimulator, OneChannelRunsCollectivesInIssueOrder) {
  TimelineResult result = simulate(
      {{task(10), task(10)}, {collective(0, 100), collective(1, 100)}});
  // First 10-110; the second is issued at 20 and waits for the channel:
  // 110-210. Durations count from start, not issue: 100 + 100.
  expectTimeline(
      result, {{210, 20, 200, 190}, {0, 10}, {{10, 10, 110}, {20, 110, 210}}});
}

TEST(TimelineSimulator, SharedChannelsSplitBandwidth) {
  TimelineResult result = simulate(startingTogether({100, 10}, {100, 10}),
                                   channels(2, ChannelSharing::Shared));
  // Both: latency 0-10 in parallel, then the 100 us of bandwidth work each
  // at half rate: end at 10 + 2*100 = 210.
  expectTimeline(result, {{210, 0, 420, 210}, {}, {{0, 0, 210}, {0, 0, 210}}});
}

TEST(TimelineSimulator, IndependentChannelsDoNotShare) {
  TimelineResult result = simulate(startingTogether({100, 10}, {100, 10}),
                                   channels(2, ChannelSharing::Independent));
  // Each alone: 10 + 100.
  expectTimeline(result, {{110, 0, 220, 110}, {}, {{0, 0, 110}, {0, 0, 110}}});
}

TEST(TimelineSimulator, SharedRateChangesWhenACollectiveEnds) {
  TimelineResult result = simulate(startingTogether({100, 0}, {300, 0}),
                                   channels(2, ChannelSharing::Shared));
  // Half rate each until the first has done its 100: t = 200; the second
  // has 300 - 100 = 200 left at full rate: 400.
  expectTimeline(result, {{400, 0, 600, 400}, {}, {{0, 0, 200}, {0, 0, 400}}});
}

TEST(TimelineSimulator, SharedRateChangesWhenACollectiveStarts) {
  TimelineResult result = simulate(
      {{task(50)},
       {collective(std::nullopt, 100, 0, 0), collective(0, 300, 0, 1)}},
      channels(2, ChannelSharing::Shared));
  // 0-50: the first alone, 50 done. From 50 both at half rate: the first's
  // remaining 50 take 100 us, ending at 150, when the second has done 50;
  // its remaining 250 at full rate end at 400.
  expectTimeline(result,
                 {{400, 50, 500, 350}, {0}, {{0, 0, 150}, {50, 50, 400}}});
}

TEST(TimelineSimulator, LatencyIsNotShared) {
  TimelineResult result = simulate(startingTogether({100, 100}, {100, 0}),
                                   channels(2, ChannelSharing::Shared));
  // The second has the bandwidth to itself while the first is in its
  // latency phase: 0-100. The first then transfers alone: 100-200.
  expectTimeline(result, {{200, 0, 300, 200}, {}, {{0, 0, 200}, {0, 0, 100}}});
}

TEST(TimelineSimulator, PrioritiesReorder) {
  StepDescription step{
      {task(10)},
      {collective(std::nullopt, 100), collective(0, 10), collective(0, 10)}};
  // Without priorities: issue order. The channel is busy 0-100; then
  // collective 1 100-110, collective 2 110-120.
  TimelineResult fifo = simulate(step);
  expectTimeline(fifo, {{120, 10, 120, 110},
                        {0},
                        {{0, 0, 100}, {10, 100, 110}, {10, 110, 120}}});

  step.collectives[0].priority = 0;
  step.collectives[1].priority = 5;
  step.collectives[2].priority = 1;
  TimelineResult byPriority = simulate(step);
  // Collective 2 is more urgent: 100-110, then collective 1 110-120.
  expectTimeline(byPriority, {{120, 10, 120, 110},
                              {0},
                              {{0, 0, 100}, {10, 110, 120}, {10, 100, 110}}});
  EXPECT_EQ(byPriority.stepUs, fifo.stepUs);
}

TEST(TimelineSimulator, CollectivesWithoutPriorityComeLast) {
  StepDescription step{{},
                       {collective(std::nullopt, 10),
                        collective(std::nullopt, 10),
                        collective(std::nullopt, 10)}};
  step.collectives[2].priority = 7;
  // All three are ready at 0: the channel picks the one with a priority,
  // then the others in issue order.
  expectTimeline(simulate(step),
                 {{30, 0, 30, 30}, {}, {{0, 10, 20}, {0, 20, 30}, {0, 0, 10}}});
}

TEST(TimelineSimulator, FreeCollectivesOnOneRank) {
  TimelineResult result =
      simulate({{task(10), task(10)}, {blocking(collective(0, 0))}});
  expectTimeline(result, {{20, 20, 0, 0}, {0, 10}, {{10, 10, 10}}});
}

TEST(TimelineSimulator, EmptyStep) {
  expectTimeline(simulate(StepDescription()), {{0, 0, 0, 0}, {}, {}});
}

TEST(TimelineSimulator, ErrorsNameTheField) {
  StepDescription step;
  step.computeTasks = {task(10), task(10)};
  step.collectives = {collective(0, 10)};

  StepDescription bad = step;
  bad.collectives[0].channel = 2;
  EXPECT_EQ(simulationError(bad, channels(2, ChannelSharing::Shared)),
            "collectives[0].channel: channel 2 out of 2");

  bad = step;
  bad.collectives[0].waitBefore = 0;
  EXPECT_EQ(simulationError(bad),
            "collectives[0].waitBefore: the wait must come after the issue");

  bad = step;
  bad.collectives[0].waitBefore = 3;
  EXPECT_EQ(simulationError(bad),
            "collectives[0].waitBefore: no compute task 3 (there are 2)");

  bad = step;
  bad.collectives[0].issuedAfter = 2;
  EXPECT_EQ(simulationError(bad),
            "collectives[0].issuedAfter: no compute task 2 (there are 2)");

  bad = step;
  bad.collectives[0].blocking = true;
  bad.collectives[0].waitBefore = 1;
  EXPECT_EQ(simulationError(bad), "collectives[0].waitBefore: a blocking "
                                  "collective has no separate wait point");

  bad = step;
  bad.collectives[0].cost.bandwidthUs = -1;
  EXPECT_EQ(simulationError(bad), "collectives[0].cost.bandwidthUs: expected "
                                  "a finite non-negative time");

  bad = step;
  bad.computeTasks[1].durationUs = -5;
  EXPECT_EQ(simulationError(bad), "computeTasks[1].durationUs: expected a "
                                  "finite non-negative duration");

  bad = step;
  bad.computeTasks[0].phase = TaskPhase::Forward;
  EXPECT_EQ(simulationError(bad, {}, /*steady=*/true),
            "computeTasks[0].layer: a forward task needs a non-negative "
            "layer id");

  bad = step;
  bad.collectives[0].layers = {4};
  EXPECT_EQ(simulationError(bad, {}, /*steady=*/true),
            "collectives[0].layers: layer 4 has no forward task");
  // Layers mean nothing in a single step.
  EXPECT_TRUE(bool(simulateStep(bad, {})));

  EXPECT_EQ(simulationError(StepDescription(), {}, /*steady=*/true),
            "computeTasks: steady state needs compute tasks");
}

//===----------------------------------------------------------------------===//
// Steady state
//===----------------------------------------------------------------------===//

/// ByteScheduler's example: three layers, forward F0 F1 F2, backward B2 B1
/// B0, each 1 us; the gradient of layer l (3 us of bandwidth) is issued after
/// Bl. Under FIFO the first layer's gradient, needed first by the next
/// iteration, is sent last.
StepDescription threeLayerStep() {
  StepDescription step;
  for (int64_t layer = 0; layer < 3; ++layer)
    step.computeTasks.push_back(task(1, TaskPhase::Forward, layer));
  for (int64_t layer = 2; layer >= 0; --layer)
    step.computeTasks.push_back(task(1, TaskPhase::Backward, layer));
  for (int64_t layer = 2; layer >= 0; --layer) {
    // Backward of layer l is task 3 + (2 - l).
    CollectiveTask gradient = collective(static_cast<size_t>(5 - layer), 3);
    gradient.layers = {layer};
    step.collectives.push_back(gradient);
  }
  return step;
}

TEST(TimelineSimulator, SteadyStatePrioritiesBeatFifo) {
  StepDescription step = threeLayerStep();
  llvm::Expected<TimelineResult> fifo =
      simulateSteadyState(step, SimulationOptions());
  ASSERT_TRUE(bool(fifo)) << llvm::toString(fifo.takeError());
  // FIFO, iteration t starting at S: F S..S+3, B2 ..S+4, g2 S+4..S+7,
  // B1 ..S+5, B0 ..S+6, g1 S+7..S+10, g0 S+10..S+13; F0 of the next
  // iteration waits for g0: period 13.
  EXPECT_DOUBLE_EQ(fifo->stepUs, 13);
  EXPECT_DOUBLE_EQ(fifo->computeUs, 6);
  EXPECT_DOUBLE_EQ(fifo->exposedCommunicationUs, 7);
  EXPECT_DOUBLE_EQ(fifo->communicationUs, 9);

  // Priority = layer: when g2 ends, g0 goes before g1. Iteration 1 starts at
  // 10 (g0 ends 7 + 3); F1 waits for g1 (ends 13): F0 10-11, F1 13-14,
  // F2 14-15, B2 15-16, B1 16-17, B0 17-18; g2 16-19, g0 19-22, g1 22-25;
  // the next F0 starts at 22: period 12.
  for (CollectiveTask &gradient : step.collectives)
    gradient.priority = gradient.layers.front();
  llvm::Expected<TimelineResult> byPriority =
      simulateSteadyState(step, SimulationOptions());
  ASSERT_TRUE(bool(byPriority)) << llvm::toString(byPriority.takeError());
  EXPECT_DOUBLE_EQ(byPriority->stepUs, 12);
  EXPECT_DOUBLE_EQ(byPriority->exposedCommunicationUs, 6);

  // The forward of layer 1 waits only for layer 1's gradient.
  const std::vector<ComputeEvent> &events = byPriority->computeEvents;
  EXPECT_EQ(events[6].iteration, 1u);
  EXPECT_DOUBLE_EQ(events[6].startUs, 10); // F0 of iteration 1.
  EXPECT_DOUBLE_EQ(events[7].startUs, 13); // F1 of iteration 1.
  EXPECT_EQ(byPriority->iterations, 2u + 4u + 1u);
}

TEST(TimelineSimulator, SteadyStateWithoutCommunication) {
  expectSteadyState(
      {{task(3, TaskPhase::Forward, 0), task(4, TaskPhase::Backward, 0)}, {}},
      7, 0);
}

TEST(TimelineSimulator, SteadyStateWaitsAtIterationEndWithoutLayers) {
  // The next iteration's first task waits for the collective: 10 + 25.
  expectSteadyState({{task(10)}, {collective(0, 25)}}, 35, 25);
}

TEST(TimelineSimulator, SteadyStateOverlapsGradientsWithNextForward) {
  // F0 (layer 0) 10, F1 (layer 1) 10, B1 10, B0 10; the gradient of layer 1
  // (15 us) is issued after B1 and only needed before the next F1.
  StepDescription step;
  step.computeTasks = {
      task(10, TaskPhase::Forward, 0), task(10, TaskPhase::Forward, 1),
      task(10, TaskPhase::Backward, 1), task(10, TaskPhase::Backward, 0)};
  step.collectives = {collective(2, 15)};
  step.collectives[0].layers = {1};
  // Issued at S+30, ends S+45, next F1 starts at S+50: nothing exposed.
  expectSteadyState(step, 40, 0);
}

//===----------------------------------------------------------------------===//
// Large random graphs
//===----------------------------------------------------------------------===//

/// A random step: `n` tasks, `n` collectives on `numChannels` channels with
/// random issue points, wait points, priorities and costs.
StepDescription randomStep(size_t n, unsigned numChannels, unsigned seed,
                           bool withLayers) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> duration(0.0, 100.0);
  std::uniform_int_distribution<unsigned> channel(0, numChannels - 1);
  std::uniform_int_distribution<int64_t> priority(0, 50);
  std::uniform_int_distribution<int> coin(0, 3);
  StepDescription step;
  size_t layers = n / 2;
  for (size_t i = 0; i < n; ++i) {
    // First half forward (layer i), second half backward (layer n - 1 - i).
    bool forward = i < layers;
    step.computeTasks.push_back(
        task(coin(rng) == 0 ? 0.0 : duration(rng),
             withLayers ? (forward ? TaskPhase::Forward : TaskPhase::Backward)
                        : TaskPhase::Other,
             static_cast<int64_t>(forward ? i : n - 1 - i)));
  }
  for (size_t c = 0; c < n; ++c) {
    std::uniform_int_distribution<size_t> after(0, n - 1);
    size_t issuedAfter = after(rng);
    CollectiveTask collectiveTask =
        collective(issuedAfter, coin(rng) == 0 ? 0.0 : duration(rng),
                   duration(rng) / 10, channel(rng));
    if (coin(rng) == 0)
      collectiveTask.priority = priority(rng);
    int kind = coin(rng);
    if (kind == 0)
      collectiveTask.blocking = true;
    else if (kind == 1)
      collectiveTask.waitBefore =
          std::uniform_int_distribution<size_t>(issuedAfter + 1, n)(rng);
    if (withLayers && issuedAfter >= layers)
      collectiveTask.layers = {static_cast<int64_t>(n - 1 - issuedAfter)};
    step.collectives.push_back(collectiveTask);
  }
  return step;
}

/// Checks the invariants that every simulated timeline satisfies.
void checkConsistent(const StepDescription &step, const TimelineResult &result,
                     const SimulationOptions &options) {
  size_t n = step.computeTasks.size();
  size_t m = step.collectives.size();
  ASSERT_EQ(result.computeEvents.size(), n * result.iterations);
  ASSERT_EQ(result.collectiveEvents.size(), m * result.iterations);
  constexpr double tolerance = 1e-6;

  // Compute runs in program order, one task at a time, for its duration.
  double previousEnd = 0;
  for (const ComputeEvent &event : result.computeEvents) {
    EXPECT_GE(event.startUs, previousEnd - tolerance);
    EXPECT_NEAR(event.endUs - event.startUs,
                step.computeTasks[event.task].durationUs, tolerance);
    previousEnd = event.endUs;
  }

  std::map<unsigned, std::vector<const CollectiveEvent *>> byChannel;
  for (const CollectiveEvent &event : result.collectiveEvents) {
    const CollectiveTask &collectiveTask = step.collectives[event.collective];
    size_t base = event.iteration * n;
    // Issued when its task ended.
    double expectedIssue =
        collectiveTask.issuedAfter
            ? result.computeEvents[base + *collectiveTask.issuedAfter].endUs
        : event.iteration == 0 ? 0.0
                               : result.computeEvents[base - 1].endUs;
    EXPECT_NEAR(event.issueUs, expectedIssue, tolerance);
    EXPECT_GE(event.startUs, event.issueUs - tolerance);
    // Never faster than alone; exactly alone with independent channels.
    double alone = collectiveTask.cost.totalUs();
    EXPECT_GE(event.endUs - event.startUs, alone - tolerance);
    if (options.sharing == ChannelSharing::Independent) {
      EXPECT_NEAR(event.endUs - event.startUs, alone, tolerance);
    }
    // Wait points hold.
    std::optional<size_t> wait = collectiveTask.waitBefore;
    if (collectiveTask.blocking)
      wait = *collectiveTask.issuedAfter + 1;
    if (wait && *wait < n) {
      EXPECT_GE(result.computeEvents[base + *wait].startUs,
                event.endUs - tolerance);
    }
    byChannel[collectiveTask.channel].push_back(&event);
  }

  // A channel runs one collective at a time and, with priorities, never
  // starts one while a more urgent one was already waiting.
  for (auto &[channel, events] : byChannel) {
    llvm::sort(events, [](const CollectiveEvent *a, const CollectiveEvent *b) {
      return a->startUs < b->startUs;
    });
    for (size_t i = 1; i < events.size(); ++i)
      EXPECT_GE(events[i]->startUs, events[i - 1]->endUs - tolerance);
  }

  // Work conservation under sharing: whenever some collective is in its
  // bandwidth phase, bandwidth work is done at rate 1, so the total work
  // equals the length of the union of the bandwidth phases.
  if (options.sharing == ChannelSharing::Shared) {
    std::vector<std::pair<double, double>> phases;
    double work = 0;
    for (const CollectiveEvent &event : result.collectiveEvents) {
      const CollectiveCost &cost = step.collectives[event.collective].cost;
      work += cost.bandwidthUs;
      if (cost.bandwidthUs > 0)
        phases.push_back({event.startUs + cost.latencyUs, event.endUs});
    }
    llvm::sort(phases);
    double covered = 0, reach = -1;
    for (auto [begin, end] : phases) {
      begin = std::max(begin, reach);
      if (end > begin)
        covered += end - begin;
      reach = std::max(reach, end);
    }
    EXPECT_NEAR(covered, work, 1e-9 * work + tolerance);
  }
}

/// The priority rule on a small graph (quadratic check): when a collective
/// starts on a channel, no collective of that channel with a strictly more
/// urgent priority was already waiting.
void checkPriorities(const StepDescription &step,
                     const TimelineResult &result) {
  auto urgency = [&](const CollectiveEvent &event) {
    return step.collectives[event.collective].priority.value_or(
        std::numeric_limits<int64_t>::max());
  };
  for (const CollectiveEvent &a : result.collectiveEvents) {
    for (const CollectiveEvent &b : result.collectiveEvents) {
      if (a.channel == b.channel && b.issueUs < a.startUs &&
          b.startUs > a.startUs) {
        EXPECT_GE(urgency(b), urgency(a));
      }
    }
  }
}

/// Simulates `step` with `options` and checks the timeline's invariants.
TimelineResult simulateConsistent(const StepDescription &step,
                                  const SimulationOptions &options) {
  TimelineResult result = simulate(step, options);
  checkConsistent(step, result, options);
  return result;
}

TEST(TimelineSimulator, LargeRandomStepIsConsistent) {
  for (ChannelSharing sharing :
       {ChannelSharing::Shared, ChannelSharing::Independent}) {
    StepDescription step = randomStep(100000, 4, 42, /*withLayers=*/false);
    TimelineResult result = simulateConsistent(step, channels(4, sharing));
    double lastEnd = 0;
    for (const CollectiveEvent &event : result.collectiveEvents)
      lastEnd = std::max(lastEnd, event.endUs);
    EXPECT_DOUBLE_EQ(result.stepUs,
                     std::max(lastEnd, result.computeEvents.back().endUs));
    EXPECT_NEAR(result.exposedCommunicationUs, result.stepUs - result.computeUs,
                1e-6);
  }
}

TEST(TimelineSimulator, OneChannelLowerBoundIsExactWithoutStalls) {
  // Issued at 10 and 20, 100 us each: the channel runs 10-110 and 110-210.
  StepDescription step{{task(10), task(10)},
                       {collective(0, 100), collective(1, 100)}};
  EXPECT_DOUBLE_EQ(getOneChannelLowerBoundUs(step), 210.0);
  EXPECT_DOUBLE_EQ(simulate(step).stepUs, 210.0);
  // Listed out of issue order, the bound is the same.
  std::swap(step.collectives[0], step.collectives[1]);
  EXPECT_DOUBLE_EQ(getOneChannelLowerBoundUs(step), 210.0);
  // Compute longer than the communication bounds the step.
  step.computeTasks.push_back(task(500));
  EXPECT_DOUBLE_EQ(getOneChannelLowerBoundUs(step), 520.0);
}

TEST(TimelineSimulator, OneChannelLowerBoundOfRandomSteps) {
  for (unsigned seed = 0; seed < 20; ++seed) {
    StepDescription step = randomStep(300, 1, seed, /*withLayers=*/false);
    // Waits, blocking collectives and priorities: a bound, never above.
    TimelineResult stalled = simulate(step);
    double boundUs = getOneChannelLowerBoundUs(step);
    EXPECT_LE(boundUs, stalled.stepUs + 1e-6) << "seed " << seed;
    EXPECT_GE(boundUs, stalled.computeUs - 1e-6) << "seed " << seed;
    // Nothing stalls compute: the bound is the step time.
    for (CollectiveTask &collective : step.collectives) {
      collective.blocking = false;
      collective.waitBefore.reset();
    }
    TimelineResult unstalled = simulate(step);
    EXPECT_NEAR(getOneChannelLowerBoundUs(step), unstalled.stepUs, 1e-6)
        << "seed " << seed;
  }
}

TEST(TimelineSimulator, SmallRandomStepsFollowPriorities) {
  for (unsigned seed = 0; seed < 5; ++seed) {
    StepDescription step = randomStep(500, 3, seed, /*withLayers=*/false);
    checkPriorities(
        step, simulateConsistent(step, channels(3, ChannelSharing::Shared)));
  }
}

TEST(TimelineSimulator, LargeRandomSteadyStateIsConsistent) {
  StepDescription step = randomStep(20000, 2, 7, /*withLayers=*/true);
  SimulationOptions options = channels(2, ChannelSharing::Shared);
  llvm::Expected<TimelineResult> result =
      simulateSteadyState(step, options, SteadyStateOptions{1, 2});
  ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  checkConsistent(step, *result, options);
  EXPECT_EQ(result->iterations, 4u);
  EXPECT_GE(result->stepUs, result->computeUs - 1e-6);

  // Forward tasks of iteration t + 1 start after the collectives of
  // iteration t that carry their layer.
  size_t n = step.computeTasks.size();
  size_t m = step.collectives.size();
  std::map<int64_t, size_t> forwardOf;
  for (size_t i = 0; i < n; ++i)
    if (step.computeTasks[i].phase == TaskPhase::Forward)
      forwardOf[step.computeTasks[i].layer] = i;
  for (unsigned t = 0; t + 1 < result->iterations; ++t) {
    for (size_t c = 0; c < m; ++c) {
      for (int64_t layer : step.collectives[c].layers) {
        EXPECT_GE(result->computeEvents[(t + 1) * n + forwardOf[layer]].startUs,
                  result->collectiveEvents[t * m + c].endUs - 1e-6);
      }
    }
  }
}

} // namespace
