//===- DeviceStagingTest.cpp - Staging and the pointer cache, one process -===//
//
// The parts of the MPI backend's device route (DeviceStaging.h) that need
// no other rank: the cache of device allocations against a fake driver that
// frees and reuses addresses, runStaged's order against a queue whose
// copies take time on a thread of their own, and which buffers of a plan
// are read and written.
//
//===----------------------------------------------------------------------===//

#include "DeviceStaging.h"
#include "FakeDeviceQueue.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <vector>

using namespace commrt;
using commrt::testing::FakeDeviceQueue;

namespace {

/// A driver's view of device allocations, which the test frees and makes
/// anew, and how often the cache asked it.
struct FakeDriver {
  struct Allocation {
    size_t bytes;
    uint64_t id;
  };
  std::map<uintptr_t, Allocation> allocations;
  uint64_t nextId = 1;
  int describes = 0, idQueries = 0;

  void allocate(uintptr_t begin, size_t bytes) {
    allocations[begin] = {bytes, nextId++};
  }
  void release(uintptr_t begin) { allocations.erase(begin); }

  const std::pair<const uintptr_t, Allocation> *find(const void *pointer) {
    const auto address = reinterpret_cast<uintptr_t>(pointer);
    for (const auto &entry : allocations)
      if (address >= entry.first && address < entry.first + entry.second.bytes)
        return &entry;
    return nullptr;
  }

  PointerCache cache() {
    return PointerCache(
        [this](const void *pointer, PointerInfo &info) {
          ++describes;
          info = PointerInfo();
          if (const auto *found = find(pointer)) {
            info.onDevice = true;
            info.device = 0;
            info.begin = found->first;
            info.bytes = found->second.bytes;
            info.bufferId = found->second.id;
          }
          return COMMRT_SUCCESS;
        },
        [this](const void *pointer, uint64_t &id) {
          ++idQueries;
          const auto *found = find(pointer);
          id = found ? found->second.id : 0;
          return COMMRT_SUCCESS;
        });
  }
};

const void *at(uintptr_t address) {
  return reinterpret_cast<const void *>(address);
}

std::vector<bool> onDevice(const std::vector<PointerInfo> &infos) {
  std::vector<bool> flags;
  for (const PointerInfo &info : infos)
    flags.push_back(info.onDevice);
  return flags;
}

TEST(PointerCacheTest, OneIdQueryPerAllocationAndCall) {
  FakeDriver driver;
  driver.allocate(0x10000, 0x1000);
  PointerCache cache = driver.cache();
  // Three buffers in one allocation, and a host buffer.
  const std::vector<const void *> buffers = {at(0x10000), at(0x10400),
                                             at(0x20000), at(0x10800)};
  std::vector<PointerInfo> infos;
  ASSERT_EQ(cache.locate(buffers, infos), COMMRT_SUCCESS);
  EXPECT_EQ(onDevice(infos), (std::vector<bool>{true, true, false, true}));
  // The first buffer's lookup serves the other two.
  EXPECT_EQ(driver.describes, 2);
  EXPECT_EQ(driver.idQueries, 0);
  EXPECT_EQ(cache.size(), 1u);

  driver.describes = 0;
  ASSERT_EQ(cache.locate(buffers, infos), COMMRT_SUCCESS);
  EXPECT_EQ(onDevice(infos), (std::vector<bool>{true, true, false, true}));
  // The host buffer is looked up again; the allocation is checked once.
  EXPECT_EQ(driver.describes, 1);
  EXPECT_EQ(driver.idQueries, 1);
}

TEST(PointerCacheTest, MemoryFreedAndReusedIsLookedUpAnew) {
  FakeDriver driver;
  driver.allocate(0x10000, 0x1000);
  PointerCache cache = driver.cache();
  std::vector<PointerInfo> infos;
  ASSERT_EQ(cache.locate({at(0x10100)}, infos), COMMRT_SUCCESS);
  const uint64_t firstId = infos[0].bufferId;

  // Freed, and the same addresses allocated again: a new id.
  driver.release(0x10000);
  driver.allocate(0x10000, 0x800);
  driver.describes = 0;
  ASSERT_EQ(cache.locate({at(0x10100)}, infos), COMMRT_SUCCESS);
  EXPECT_TRUE(infos[0].onDevice);
  EXPECT_NE(infos[0].bufferId, firstId);
  EXPECT_EQ(infos[0].bytes, 0x800u);
  EXPECT_EQ(driver.describes, 1);
  EXPECT_EQ(cache.size(), 1u);

  // Freed and not reused: host memory (for the driver, nothing) now.
  driver.release(0x10000);
  ASSERT_EQ(cache.locate({at(0x10100)}, infos), COMMRT_SUCCESS);
  EXPECT_FALSE(infos[0].onDevice);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(PointerCacheTest, AnAllocationOverTwoCachedOnesReplacesBoth) {
  FakeDriver driver;
  driver.allocate(0x10000, 0x1000);
  driver.allocate(0x11000, 0x1000);
  PointerCache cache = driver.cache();
  std::vector<PointerInfo> infos;
  ASSERT_EQ(cache.locate({at(0x10000), at(0x11000)}, infos), COMMRT_SUCCESS);
  EXPECT_EQ(cache.size(), 2u);
  driver.release(0x10000);
  driver.release(0x11000);
  driver.allocate(0x10800, 0x1000);
  ASSERT_EQ(cache.locate({at(0x11000)}, infos), COMMRT_SUCCESS);
  EXPECT_EQ(infos[0].begin, 0x10800u);
  EXPECT_EQ(cache.size(), 1u);
  // The part of the first old allocation outside the new one is host memory
  // now, and not taken from the cache.
  ASSERT_EQ(cache.locate({at(0x10100)}, infos), COMMRT_SUCCESS);
  EXPECT_FALSE(infos[0].onDevice);
}

/// A queue that hands its work to one the lane keeps: its destruction does
/// not wait for the work, as a CUDA stream's queue does not.
class ForwardingQueue final : public StagingQueue {
public:
  explicit ForwardingQueue(StagingQueue &target) : target(target) {}
  commrt_status copyToHost(void *to, const void *from, size_t bytes) override {
    return target.copyToHost(to, from, bytes);
  }
  commrt_status copyToDevice(void *to, const void *from,
                             size_t bytes) override {
    return target.copyToDevice(to, from, bytes);
  }
  commrt_status reduce(const void *from, void *into, int64_t count) override {
    return target.reduce(from, into, count);
  }
  commrt_status convert(const std::vector<Conversion> &conversions,
                        commrt_dtype from, commrt_dtype to,
                        double scale) override {
    return target.convert(conversions, from, to, scale);
  }
  commrt_status mark(int64_t &marker) override { return target.mark(marker); }
  commrt_status reached(int64_t marker, bool &done) override {
    return target.reached(marker, done);
  }
  commrt_status waitFor(int64_t marker) override {
    return target.waitFor(marker);
  }

private:
  StagingQueue &target;
};

/// A lane whose queue copies on a thread of its own, taking time: a copy
/// that runStaged did not wait for would be seen unfinished.
class SlowLane final : public DeviceLane {
public:
  commrt_status markCaller(std::function<commrt_status()> &orderLane) override {
    orderLane = [] { return COMMRT_SUCCESS; };
    return COMMRT_SUCCESS;
  }
  commrt_status queue(commrt_dtype dtype, commrt_reduce reduce,
                      std::unique_ptr<StagingQueue> &made) override {
    made = std::make_unique<ForwardingQueue>(work);
    return COMMRT_SUCCESS;
  }
  StagingBuffers &staging() override { return host; }
  commrt_status scratch(Slot, size_t, void *&) override {
    return fail(COMMRT_ERROR_BACKEND, "no scratch in this test");
  }

private:
  FakeDeviceQueue work{COMMRT_F32, COMMRT_SUM, /*usPerKiB=*/200,
                       commrt::testing::Clock::now()};
  StagingBuffers host{[](size_t bytes) { return std::malloc(bytes); },
                      [](void *buffer) { std::free(buffer); }};
};

TEST(RunStagedTest, CopiesInBeforeAndOutAfterTheHostWork) {
  SlowLane lane;
  std::vector<float> device(4096, 1.0f), input(64, 5.0f), host(16, 2.0f),
      output(4096, 0.0f);
  std::vector<StagedBuffer> buffers = {
      {device.data(), device.size() * 4, /*onDevice=*/true, /*in=*/true,
       /*out=*/true},
      {host.data(), host.size() * 4, false, true, true},
      {input.data(), input.size() * 4, true, true, false},
      {output.data(), output.size() * 4, true, false, true}};
  std::vector<void *> seen;
  ASSERT_EQ(runStaged(buffers, lane,
                      [&](const std::vector<void *> &pointers) {
                        seen = pointers;
                        auto *staged = static_cast<float *>(pointers[0]);
                        // Every copy in has finished.
                        for (size_t i = 0; i < device.size(); ++i)
                          if (staged[i] != 1.0f)
                            return fail(COMMRT_ERROR_BACKEND,
                                        "copy in unfinished at ", i);
                        if (static_cast<float *>(pointers[2])[63] != 5.0f)
                          return fail(COMMRT_ERROR_BACKEND,
                                      "input not copied in");
                        for (size_t i = 0; i < device.size(); ++i) {
                          staged[i] = 3.0f;
                          static_cast<float *>(pointers[3])[i] = 4.0f;
                        }
                        static_cast<float *>(pointers[2])[0] = 9.0f;
                        static_cast<float *>(pointers[1])[0] = 7.0f;
                        return COMMRT_SUCCESS;
                      }),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // Device buffers were staged; the host buffer was used where it is.
  EXPECT_NE(seen[0], device.data());
  EXPECT_EQ(seen[1], host.data());
  EXPECT_NE(seen[2], input.data());
  // Every copy out finished before it returned.
  EXPECT_EQ(device, std::vector<float>(4096, 3.0f));
  EXPECT_EQ(output, std::vector<float>(4096, 4.0f));
  EXPECT_EQ(host[0], 7.0f);
  // An input only is not written back.
  EXPECT_EQ(input[0], 5.0f);
}

TEST(RunStagedTest, AFailureOnTheHostCopiesNothingBack) {
  SlowLane lane;
  std::vector<float> device(16, 1.0f);
  ASSERT_EQ(runStaged({{device.data(), 64, true, true, true}}, lane,
                      [](const std::vector<void *> &pointers) {
                        static_cast<float *>(pointers[0])[0] = 2.0f;
                        return fail(COMMRT_ERROR_BACKEND, "planted");
                      }),
            COMMRT_ERROR_BACKEND);
  EXPECT_EQ(device[0], 1.0f);
}

TEST(StagedBuffersTest, WhatEachPlanKindReadsAndWrites) {
  Plan plan;
  float a[10], b[7], shard[5];
  plan.buffers = {a, b};
  plan.counts = {10, 7};
  plan.total = 17;
  plan.shard = shard;
  const std::vector<bool> placement = {true, false, true};

  std::vector<StagedBuffer> allreduce = stagedBuffersOf(plan, 4, placement);
  ASSERT_EQ(allreduce.size(), 2u);
  EXPECT_TRUE(allreduce[0].in && allreduce[0].out && allreduce[0].onDevice);
  EXPECT_FALSE(allreduce[1].onDevice);
  EXPECT_EQ(allreduce[1].bytes, 28u);

  plan.kind = PlanKind::ReduceScatter;
  std::vector<StagedBuffer> scatter = stagedBuffersOf(plan, 4, placement);
  ASSERT_EQ(scatter.size(), 3u);
  EXPECT_TRUE(scatter[0].in && !scatter[0].out);
  // ceil(17 / 4) elements.
  EXPECT_EQ(scatter[2].bytes, 20u);
  EXPECT_TRUE(!scatter[2].in && scatter[2].out && scatter[2].onDevice);

  plan.kind = PlanKind::AllGather;
  std::vector<StagedBuffer> gather = stagedBuffersOf(plan, 4, placement);
  EXPECT_TRUE(!gather[0].in && gather[0].out);
  EXPECT_TRUE(gather[2].in && !gather[2].out);

  std::vector<void *> host = {b, a, a};
  Plan hosted = onHost(plan, host);
  EXPECT_EQ(hosted.buffers[0], b);
  EXPECT_EQ(hosted.shard, a);
}

} // namespace
