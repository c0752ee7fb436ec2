//===- DeviceStaging.cpp - The MPI backend's device buffers ---------------===//

#include "DeviceStaging.h"
#include "RingAllreduce.h"
#include "WireFormat.h"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <optional>

using namespace commrt;

namespace {

/// Staged copies start at multiples of this, as device copies run fastest
/// from aligned addresses.
constexpr size_t kStagedAlignment = 256;

size_t alignedUp(size_t bytes) {
  return (bytes + kStagedAlignment - 1) / kStagedAlignment * kStagedAlignment;
}

std::mutex factoryMutex;
std::function<std::unique_ptr<DeviceAccess>()> &testingFactory() {
  static std::function<std::unique_ptr<DeviceAccess>()> factory;
  return factory;
}

} // namespace

#if !COMMRT_HAVE_NCCL
/// Without CUDA, there is no device memory to take.
std::unique_ptr<DeviceAccess> commrt::makeCudaDeviceAccess() { return nullptr; }
#endif

std::unique_ptr<DeviceAccess> commrt::makeDeviceAccess() {
  {
    std::lock_guard<std::mutex> lock(factoryMutex);
    if (testingFactory())
      return testingFactory()();
  }
  return makeCudaDeviceAccess();
}

void commrt::setDeviceAccessFactoryForTesting(
    std::function<std::unique_ptr<DeviceAccess>()> factory) {
  std::lock_guard<std::mutex> lock(factoryMutex);
  testingFactory() = std::move(factory);
}

commrt_status PointerCache::locate(const std::vector<const void *> &pointers,
                                   std::vector<PointerInfo> &infos) {
  infos.assign(pointers.size(), PointerInfo());
  // Allocations found still valid in this call, by first address.
  std::vector<uintptr_t> validated;
  for (size_t i = 0; i < pointers.size(); ++i) {
    const auto address = reinterpret_cast<uintptr_t>(pointers[i]);
    auto after = allocations.upper_bound(address);
    if (after != allocations.begin()) {
      auto at = std::prev(after);
      const PointerInfo &cached = at->second;
      if (address < cached.begin + cached.bytes) {
        bool valid = std::find(validated.begin(), validated.end(),
                               cached.begin) != validated.end();
        if (!valid) {
          uint64_t id = 0;
          COMMRT_TRY(bufferIdOf(pointers[i], id));
          valid = id == cached.bufferId;
        }
        if (valid) {
          validated.push_back(cached.begin);
          infos[i] = cached;
          continue;
        }
        allocations.erase(at);
      }
    }
    PointerInfo found;
    COMMRT_TRY(describe(pointers[i], found));
    infos[i] = found;
    if (!found.onDevice || found.bytes == 0)
      continue;
    // Earlier allocations that overlap this one were freed.
    auto first = allocations.lower_bound(found.begin);
    if (first != allocations.begin()) {
      auto before = std::prev(first);
      if (before->second.begin + before->second.bytes > found.begin)
        first = before;
    }
    auto last = allocations.lower_bound(found.begin + found.bytes);
    allocations.erase(first, last);
    allocations[found.begin] = found;
    validated.push_back(found.begin);
  }
  return COMMRT_SUCCESS;
}

commrt_status commrt::waitForCallerWork(DeviceLane &lane) {
  std::unique_ptr<StagingQueue> queue;
  COMMRT_TRY(lane.queue(COMMRT_F32, COMMRT_SUM, queue));
  return queue->finish();
}

commrt_status commrt::runStaged(
    const std::vector<StagedBuffer> &buffers, DeviceLane &lane,
    const std::function<commrt_status(const std::vector<void *> &)> &onHost,
    const TraceContext *trace, int ranks) {
  std::vector<size_t> offsets;
  size_t stagedBytes = 0;
  for (const StagedBuffer &buffer : buffers) {
    offsets.push_back(stagedBytes);
    if (buffer.onDevice)
      stagedBytes += alignedUp(buffer.bytes);
  }
  std::vector<void *> hostPointers;
  if (stagedBytes == 0) {
    for (const StagedBuffer &buffer : buffers)
      hostPointers.push_back(buffer.pointer);
    return onHost(hostPointers);
  }

  StagingBuffers &staging = lane.staging();
  COMMRT_TRY(staging.reserve(1, stagedBytes));
  std::unique_ptr<StagingQueue> queue;
  // The reduction is the host's: the queue only copies.
  COMMRT_TRY(lane.queue(COMMRT_F32, COMMRT_SUM, queue));
  // Starts in `phase` the phase `kind` of the traced collective, if any,
  // which ends when `phase` does.
  auto tracePhase = [&](std::optional<TracePhase> &phase,
                        commrt_trace_phase kind) {
    if (trace)
      phase.emplace(*trace, kind, ranks);
  };
  {
    std::optional<TracePhase> stageIn;
    tracePhase(stageIn, COMMRT_PHASE_STAGE_IN);
    bool copiesIn = false;
    for (size_t i = 0; i < buffers.size(); ++i) {
      const StagedBuffer &buffer = buffers[i];
      if (!buffer.onDevice) {
        hostPointers.push_back(buffer.pointer);
        continue;
      }
      hostPointers.push_back(staging[0] + offsets[i]);
      if (buffer.in && buffer.bytes > 0) {
        COMMRT_TRY(queue->copyToHost(hostPointers.back(), buffer.pointer,
                                     buffer.bytes));
        copiesIn = true;
      }
    }
    if (copiesIn)
      COMMRT_TRY(queue->finish());
  }
  COMMRT_TRY(onHost(hostPointers));
  std::optional<TracePhase> stageOut;
  tracePhase(stageOut, COMMRT_PHASE_STAGE_OUT);
  bool copiesOut = false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const StagedBuffer &buffer = buffers[i];
    if (buffer.onDevice && buffer.out && buffer.bytes > 0) {
      COMMRT_TRY(
          queue->copyToDevice(buffer.pointer, hostPointers[i], buffer.bytes));
      copiesOut = true;
    }
  }
  if (!copiesOut)
    return COMMRT_SUCCESS;
  // The staging is the next call's, and the caller reads the results.
  return queue->finish();
}

std::vector<StagedBuffer>
commrt::stagedBuffersOf(const Plan &plan, int ranks,
                        const std::vector<bool> &onDevice) {
  const size_t width = elementSize(plan.dtype);
  const bool buffersIn = plan.kind != PlanKind::AllGather;
  const bool buffersOut = plan.kind != PlanKind::ReduceScatter;
  std::vector<StagedBuffer> staged;
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    staged.push_back({plan.buffers[i], plan.counts[i] * width, onDevice[i],
                      buffersIn, buffersOut});
  if (plan.kind != PlanKind::Allreduce)
    staged.push_back(
        {plan.shard,
         static_cast<size_t>(shardElements(plan.total, ranks)) * width,
         onDevice[plan.buffers.size()],
         /*in=*/plan.kind == PlanKind::AllGather,
         /*out=*/plan.kind == PlanKind::ReduceScatter});
  return staged;
}

Plan commrt::onHost(const Plan &plan, const std::vector<void *> &hostPointers) {
  Plan hosted = plan;
  for (size_t i = 0; i < hosted.buffers.size(); ++i)
    hosted.buffers[i] = hostPointers[i];
  if (hosted.kind != PlanKind::Allreduce)
    hosted.shard = hostPointers[hosted.buffers.size()];
  return hosted;
}
