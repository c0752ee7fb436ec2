//===- NcclShardedTest.cpp - Reduce-scatter and all-gather over NCCL ------===//
//
// One process, one rank: commrt_reduce_scatter and commrt_all_gather under
// the NCCL backend give, bit for bit, what the MPI backend's ring gives for
// the same data, over several buffers whose sizes are not multiples of
// anything, in f32 and over f16 and bf16 wires with a prescale: device
// buffers, host buffers and a host shard (staged), blocking and started on
// a channel. At one rank both backends only pack, pad and unpack, which is
// the part of the NCCL path that is commrt's own; the exchange itself is
// NCCL's. Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "GpuTestUtils.h"
#include "commrt/commrt.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

using commrt::testing::bitsOf;
using commrt::testing::DeviceArray;

namespace {

const std::vector<int64_t> kCounts = {3, 70001, 1, 4096, 129};

/// The buffers of a flat tensor, and its shard, where one backend's calls
/// read and write them.
struct Flat {
  std::vector<std::vector<float>> host;
  std::vector<std::unique_ptr<DeviceArray<float>>> device;
  std::vector<float> hostShard;
  std::unique_ptr<DeviceArray<float>> deviceShard;
  std::vector<void *> buffers;
  std::vector<int64_t> counts = kCounts;
  int64_t total = 0;

  /// `values` in host buffers, or copied to device buffers where
  /// `onDevice`; the shard on the device where `shardOnDevice`.
  Flat(const std::vector<std::vector<float>> &values, bool onDevice,
       bool shardOnDevice)
      : host(values) {
    for (size_t i = 0; i < values.size(); ++i) {
      total += kCounts[i];
      if (onDevice) {
        device.push_back(std::make_unique<DeviceArray<float>>(values[i]));
        buffers.push_back(device.back()->get());
      } else {
        buffers.push_back(host[i].data());
      }
    }
    hostShard.assign(total, 7.0f);
    if (shardOnDevice)
      deviceShard = std::make_unique<DeviceArray<float>>(hostShard);
  }

  void *shard() {
    return deviceShard ? static_cast<void *>(deviceShard->get())
                       : hostShard.data();
  }

  /// The shard's values, after every stream is done.
  std::vector<float> shardValues() {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return deviceShard ? deviceShard->download() : hostShard;
  }

  /// Buffer `i`'s values, after every stream is done.
  std::vector<float> values(size_t i) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return device.empty() ? host[i] : device[i]->download();
  }
};

/// Random normal buffers of kCounts.
std::vector<std::vector<float>> randomBuffers(unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> values;
  for (int64_t count : kCounts) {
    values.emplace_back(count);
    for (float &value : values.back())
      value = normal(random);
  }
  return values;
}

/// What to run: a reduce-scatter, then an all-gather of its shard with
/// fresh values in the buffers, blocking or started on channel 0.
struct ShardedCalls {
  int32_t wire;
  float prescale;
  bool started;

  void reduceScatter(Flat &flat) const {
    int64_t handle = 0;
    int32_t status =
        started
            ? commrt_reduce_scatter_start(
                  0, flat.buffers.data(), flat.counts.data(),
                  static_cast<int32_t>(flat.buffers.size()), flat.shard(),
                  flat.total, COMMRT_F32, COMMRT_AVG, wire, prescale,
                  /*channel=*/0, &handle)
            : commrt_reduce_scatter(0, flat.buffers.data(), flat.counts.data(),
                                    static_cast<int32_t>(flat.buffers.size()),
                                    flat.shard(), flat.total, COMMRT_F32,
                                    COMMRT_AVG, wire, prescale);
    ASSERT_EQ(status, COMMRT_SUCCESS) << commrt_last_error();
    if (started)
      ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  }

  void allGather(Flat &flat) const {
    int64_t handle = 0;
    int32_t status =
        started
            ? commrt_all_gather_start(
                  0, flat.shard(), flat.total, flat.buffers.data(),
                  flat.counts.data(), static_cast<int32_t>(flat.buffers.size()),
                  COMMRT_F32, wire, prescale, /*channel=*/0, &handle)
            : commrt_all_gather(0, flat.shard(), flat.total,
                                flat.buffers.data(), flat.counts.data(),
                                static_cast<int32_t>(flat.buffers.size()),
                                COMMRT_F32, wire, prescale);
    ASSERT_EQ(status, COMMRT_SUCCESS) << commrt_last_error();
    if (started)
      ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  }
};

/// The reduce-scatter's shard and the all-gathered buffers of `calls` on
/// `flat` under `backend`: the buffers are random, the shard is then
/// all-gathered into them.
struct Results {
  std::vector<uint32_t> shard;
  std::vector<std::vector<uint32_t>> gathered;
};
Results run(int32_t backend, const ShardedCalls &calls, bool onDevice,
            bool shardOnDevice) {
  Results results;
  EXPECT_EQ(commrt_init_backend(backend), COMMRT_SUCCESS)
      << commrt_last_error();
  Flat flat(randomBuffers(1), onDevice, shardOnDevice);
  calls.reduceScatter(flat);
  results.shard = bitsOf(flat.shardValues());
  Flat into(randomBuffers(2), onDevice, shardOnDevice);
  if (shardOnDevice)
    into.deviceShard->upload(flat.shardValues());
  else
    into.hostShard = flat.shardValues();
  calls.allGather(into);
  for (size_t i = 0; i < kCounts.size(); ++i)
    results.gathered.push_back(bitsOf(into.values(i)));
  return results;
}

using NcclShardedTest = commrt::testing::NcclBackendTest<int32_t>;

TEST_P(NcclShardedTest, DeviceAndHostBuffersGiveTheRingsResultsBitForBit) {
  const ShardedCalls blocking{GetParam(), 0.5f, /*started=*/false};
  Results reference = run(COMMRT_BACKEND_MPI, blocking, /*onDevice=*/false,
                          /*shardOnDevice=*/false);
  struct Placement {
    bool onDevice, shardOnDevice, started;
  };
  for (Placement placement :
       {Placement{true, true, false}, Placement{false, false, false},
        Placement{true, false, false}, Placement{false, true, true},
        Placement{true, true, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "buffers on the device " << placement.onDevice
                 << ", shard on the device " << placement.shardOnDevice
                 << ", started " << placement.started);
    ShardedCalls calls = blocking;
    calls.started = placement.started;
    Results nccl = run(COMMRT_BACKEND_NCCL, calls, placement.onDevice,
                       placement.shardOnDevice);
    EXPECT_EQ(nccl.shard, reference.shard);
    for (size_t i = 0; i < kCounts.size(); ++i)
      EXPECT_EQ(nccl.gathered[i], reference.gathered[i]) << "buffer " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Wires, NcclShardedTest,
                         ::testing::Values(COMMRT_WIRE_NONE, COMMRT_F16,
                                           COMMRT_BF16));

} // namespace
