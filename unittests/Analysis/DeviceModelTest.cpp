//===- DeviceModelTest.cpp - Tests of the roofline device model -----------===//
//
// Roofline estimates against hand-computed values, presets, JSON errors.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/DeviceModel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace mlir::comm;

namespace {

TEST(DeviceModel, Presets) {
  EXPECT_EQ(DeviceModel::presetNames().size(), 4u);
  for (llvm::StringRef name : DeviceModel::presetNames()) {
    llvm::Expected<DeviceModel> device = DeviceModel::preset(name);
    ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
    EXPECT_EQ(device->name, name);
    EXPECT_EQ(llvm::toString(device->verify()), "");
    // Same units in memory and in JSON: the round trip is exact.
    std::string text = llvm::formatv("{0}", device->toJSON()).str();
    llvm::Expected<DeviceModel> back = DeviceModel::fromJSON(text);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(*back, *device);
  }
  std::string error = llvm::toString(DeviceModel::parse("tpu-v9").takeError());
  EXPECT_NE(error.find("'tpu-v9'"), std::string::npos) << error;
}

TEST(DeviceModel, ComputeBound) {
  DeviceModel v100 = llvm::cantFail(DeviceModel::preset("v100"));
  // 1.57e9 FLOP / 15.7e12 FLOP/s = 1e-4 s = 100 us; 1e6 B / 900e9 B/s =
  // 1.11 us. The larger: 100 us.
  EXPECT_NEAR(v100.rooflineUs(1.57e9, 1e6), 100.0, 1e-9);
  // Tensor cores: 1.25e9 FLOP / 125e12 FLOP/s = 10 us.
  EXPECT_NEAR(v100.rooflineUs(1.25e9, 1e6, /*tensorCores=*/true), 10.0, 1e-9);
}

TEST(DeviceModel, A100) {
  DeviceModel a100 = llvm::cantFail(DeviceModel::preset("a100"));
  // 1.95e9 FLOP / 19.5e12 FLOP/s = 100 us; 1.555e6 B / 1555e9 B/s = 1 us.
  EXPECT_NEAR(a100.rooflineUs(1.95e9, 1.555e6), 100.0, 1e-9);
  // Dense FP16/BF16 tensor cores: 3.12e9 FLOP / 312e12 FLOP/s = 10 us.
  EXPECT_NEAR(a100.rooflineUs(3.12e9, 1.555e6, /*tensorCores=*/true), 10.0,
              1e-9);
  // Memory bound: 1.555e9 B / 1555e9 B/s = 1000 us.
  EXPECT_NEAR(a100.rooflineUs(1e6, 1.555e9), 1000.0, 1e-9);
}

TEST(DeviceModel, MemoryBound) {
  DeviceModel v100 = llvm::cantFail(DeviceModel::preset("v100"));
  // 9e6 B / 900e9 B/s = 10 us; 1e6 FLOP / 15.7e12 FLOP/s = 0.064 us.
  EXPECT_NEAR(v100.rooflineUs(1e6, 9e6), 10.0, 1e-9);
}

TEST(DeviceModel, NoTensorCoresFallsBackToFp32) {
  DeviceModel p40 = llvm::cantFail(DeviceModel::preset("p40"));
  // 1.2e9 FLOP / 12e12 FLOP/s = 100 us with or without tensorCores.
  EXPECT_NEAR(p40.rooflineUs(1.2e9, 0, /*tensorCores=*/true), 100.0, 1e-9);
}

TEST(DeviceModel, LaunchOverhead) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(
      R"({"name": "toy", "peak_tflops": 1, "memory_gbps": 1,
          "launch_overhead_us": 5})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  // 5 us + max(1e6 FLOP / 1e12 FLOP/s = 1 us, 2e3 B / 1e9 B/s = 2 us).
  EXPECT_NEAR(device->rooflineUs(1e6, 2e3), 7.0, 1e-12);
  // An empty op costs the overhead alone.
  EXPECT_NEAR(device->rooflineUs(0, 0), 5.0, 1e-12);
}

// channel_slowdown is 1 unless given, and survives toJSON.
TEST(DeviceModel, ChannelSlowdown) {
  DeviceModel v100 = llvm::cantFail(DeviceModel::preset("v100"));
  EXPECT_EQ(v100.channelSlowdown, 1.0);
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(
      R"({"peak_tflops": 1, "memory_gbps": 1, "channel_slowdown": 1.25})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(device->channelSlowdown, 1.25);
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, *device);
}

TEST(DeviceModel, LocalWorkAndBridgeRoundTrip) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(R"({
      "peak_tflops": 1, "memory_gbps": 1,
      "local_work": {"accumulate_ns_per_element": 0.5,
                     "select_ns_per_element": {"threshold": 1.5, "topk": 2,
                                               "chunk": 0.75},
                     "scatter_ns_per_element": 0.25,
                     "scatter_ns_per_entry": 30,
                     "dense_ns_per_element": 0.125},
      "bridge": {"hook_us": 12, "momentum_ns_per_element": 1.25,
                 "mask_ns_per_element": 2.5, "blocking_call_us": 1800}})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  const LocalWorkRates &rates = device->localWork;
  EXPECT_EQ(rates.accumulateNs, 0.5);
  EXPECT_EQ(rates.thresholdSelectNs, 1.5);
  EXPECT_EQ(rates.topkSelectNs, 2.0);
  EXPECT_EQ(rates.chunkSelectNs, 0.75);
  EXPECT_EQ(rates.scatterNs, 0.25);
  EXPECT_EQ(rates.scatterNsPerEntry, 30.0);
  EXPECT_EQ(rates.denseNs, 0.125);
  EXPECT_EQ(device->bridge.hookUs, 12.0);
  EXPECT_EQ(device->bridge.momentumNs, 1.25);
  EXPECT_EQ(device->bridge.maskNs, 2.5);
  EXPECT_EQ(device->bridge.blockingCallUs, 1800.0);
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, *device);
  // The presets measure nothing: their local work is memory traffic.
  DeviceModel v100 = llvm::cantFail(DeviceModel::preset("v100"));
  EXPECT_EQ(v100.localWork, LocalWorkRates());
  EXPECT_EQ(v100.bridge, BridgeCosts());
}

TEST(DeviceModel, HostCpuBound) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(R"({
      "peak_tflops": 1, "memory_gbps": 1,
      "host_cpu": {"cores": 2, "ranks": 4, "step_us": 1500,
                   "ns_per_sent_byte": 0.25, "timed_ranks": 1}})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  const HostCpu &host = device->hostCpu;
  ASSERT_TRUE(host.isDescribed());
  EXPECT_EQ(host.stepUs, 1500.0);
  EXPECT_EQ(host.nsPerSentByte, 0.25);
  EXPECT_EQ(host.timedRanks, 1.0);
  // MPI's own collectives' bytes cost what the ring's do unless measured.
  EXPECT_FALSE(host.nsPerGatheredByte);
  EXPECT_EQ(host.getNsPerGatheredByte(), 0.25);
  // Four ranks on two cores: 10 ms of CPU a rank takes the cores 20 ms.
  EXPECT_EQ(host.boundUs(10000), 20000.0);
  // Durations timed as the step runs them: half a core each while all four
  // ranks are busy.
  HostCpu sameSharing = host;
  sameSharing.timedRanks = 0;
  EXPECT_EQ(sameSharing.busyShare(), 0.5);
  // Two ranks on eight cores: a whole core each; the bound is a quarter.
  HostCpu roomy{8, 2, 0, 0};
  EXPECT_EQ(roomy.busyShare(), 1.0);
  EXPECT_EQ(roomy.boundUs(10000), 2500.0);
  // Durations timed with one rank alone are CPU time, whatever the ranks
  // that share the cores in the step; the bound still counts them all.
  HostCpu timedAlone{2, 16, 0, 0, /*timedRanks=*/1};
  EXPECT_EQ(timedAlone.busyShare(), 1.0);
  EXPECT_EQ(timedAlone.boundUs(10000), 80000.0);
  HostCpu timedAtFour{2, 16, 0, 0, /*timedRanks=*/4};
  EXPECT_EQ(timedAtFour.busyShare(), 0.5);
  // Ranks in step share the cores: 16 on 2 run each CPU duration 8 times as
  // long as one rank alone, 4 times as long as 4 ranks timed it; where the
  // durations were timed under the step's own sharing, or the ranks fit the
  // cores, as timed. Only durations timed apart from the sharing (a
  // profile) leave the step thread's own work out.
  EXPECT_EQ(timedAlone.lockstepStretch(), 8.0);
  EXPECT_EQ(timedAtFour.lockstepStretch(), 4.0);
  EXPECT_EQ(sameSharing.lockstepStretch(), 1.0);
  EXPECT_EQ(roomy.lockstepStretch(), 1.0);
  EXPECT_EQ((HostCpu{8, 2, 0, 0, /*timedRanks=*/1}).lockstepStretch(), 1.0);
  EXPECT_TRUE(timedAlone.stepCpuOnStepThread());
  EXPECT_FALSE(sameSharing.stepCpuOnStepThread());
  // Not described: no bound, no sharing.
  EXPECT_FALSE(HostCpu().isDescribed());
  EXPECT_EQ(HostCpu().boundUs(10000), 0.0);
  EXPECT_EQ(HostCpu().lockstepStretch(), 1.0);
  EXPECT_FALSE(HostCpu().stepCpuOnStepThread());
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(reloaded->hostCpu, host);
}

TEST(DeviceModel, HostCpuGatheredRate) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(R"({
      "peak_tflops": 1, "memory_gbps": 1,
      "host_cpu": {"cores": 2, "ranks": 4, "ns_per_sent_byte": 0.5,
                   "ns_per_gathered_byte": 1.25}})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(device->hostCpu.getNsPerGatheredByte(), 1.25);
  // It survives toJSON, and a device without it writes none.
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  EXPECT_NE(text.find("\"ns_per_gathered_byte\":1.25"), std::string::npos)
      << text;
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, *device);
  DeviceModel without = *device;
  without.hostCpu.nsPerGatheredByte.reset();
  EXPECT_FALSE(without == *device);
  text.clear();
  llvm::raw_string_ostream(text) << without.toJSON();
  EXPECT_EQ(text.find("ns_per_gathered_byte"), std::string::npos) << text;
}

TEST(DeviceModel, HostCpuScale) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(R"({
      "peak_tflops": 1, "memory_gbps": 1,
      "host_cpu": {"cores": 2, "ranks": 16, "cpu_scale": 1.5}})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(device->hostCpu.getCpuScale(), 1.5);
  // It survives toJSON; a device without it writes none and scales by 1,
  // as does one that describes no host, whatever it holds.
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  EXPECT_NE(text.find("\"cpu_scale\":1.5"), std::string::npos) << text;
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, *device);
  DeviceModel without = *device;
  without.hostCpu.cpuScale.reset();
  EXPECT_FALSE(without == *device);
  EXPECT_EQ(without.hostCpu.getCpuScale(), 1.0);
  text.clear();
  llvm::raw_string_ostream(text) << without.toJSON();
  EXPECT_EQ(text.find("cpu_scale"), std::string::npos) << text;
  HostCpu undescribed;
  undescribed.cpuScale = 2.0;
  EXPECT_EQ(undescribed.getCpuScale(), 1.0);
}

TEST(DeviceModel, HostCpuLocalScaleAndCollectives) {
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(R"({
      "peak_tflops": 1, "memory_gbps": 1,
      "host_cpu": {"cores": 2, "ranks": 16, "cpu_scale": 1.8,
                   "local_cpu_scale": 1.2, "ns_per_sent_byte": 1,
                   "ns_per_gathered_byte": 2,
                   "us_per_gathered_collective": 300}})");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  const HostCpu &host = device->hostCpu;
  EXPECT_EQ(host.getCpuScale(), 1.8);
  EXPECT_EQ(host.getLocalCpuScale(), 1.2);
  // 1000 bytes in the ring at 1 ns, 3000 in 5 of MPI's collectives at 2 ns
  // and 300 us each.
  EXPECT_DOUBLE_EQ(host.getTransportUs(4000, 3000, 5), 1.0 + 6.0 + 1500.0);
  std::string text;
  llvm::raw_string_ostream(text) << device->toJSON();
  EXPECT_NE(text.find("\"local_cpu_scale\":1.2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"us_per_gathered_collective\":300"), std::string::npos)
      << text;
  llvm::Expected<DeviceModel> reloaded = DeviceModel::fromJSON(text);
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, *device);
  // Without them: the local work scales as the compute does, and a
  // collective costs its bytes only; neither is written.
  DeviceModel without = *device;
  without.hostCpu.localCpuScale.reset();
  without.hostCpu.usPerGatheredCollective.reset();
  EXPECT_FALSE(without == *device);
  EXPECT_EQ(without.hostCpu.getLocalCpuScale(), 1.8);
  EXPECT_DOUBLE_EQ(without.hostCpu.getTransportUs(4000, 3000, 5), 7.0);
  text.clear();
  llvm::raw_string_ostream(text) << without.toJSON();
  EXPECT_EQ(text.find("local_cpu_scale"), std::string::npos) << text;
  EXPECT_EQ(text.find("us_per_gathered_collective"), std::string::npos) << text;
  HostCpu undescribed;
  undescribed.localCpuScale = 2.0;
  EXPECT_EQ(undescribed.getLocalCpuScale(), 1.0);
}

TEST(DeviceModel, BadFieldsAreNamed) {
  struct Case {
    const char *json;
    const char *expected;
  };
  Case cases[] = {
      {R"({"peak_tflops": 0, "memory_gbps": 1})",
       "expected a positive number at device.peak_tflops"},
      {R"({"peak_tflops": 1})", "missing value at device.memory_gbps"},
      {R"({"peak_tflops": 1, "memory_gbps": "fast"})",
       "expected number at device.memory_gbps"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "launch_overhead_us": -1})",
       "expected a non-negative number at device.launch_overhead_us"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "peak_tensor_tflops": -2})",
       "expected a non-negative number at device.peak_tensor_tflops"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "channel_slowdown": 0.5})",
       "expected a number of at least 1 at device.channel_slowdown"},
      {R"([1, 2])", "expected object"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "local_work": {"accumulate_ns_per_element": -1}})",
       "expected a non-negative number at "
       "device.local_work.accumulate_ns_per_element"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "local_work": {"select_ns_per_element": {"topk": -2}}})",
       "expected a non-negative number at "
       "device.local_work.select_ns_per_element.topk"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "local_work": {"select_ns_per_element": 3}})",
       "expected object at device.local_work.select_ns_per_element"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "bridge": []})",
       "expected object at device.bridge"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "bridge": {"mask_ns_per_element": "slow"}})",
       "expected number at device.bridge.mask_ns_per_element"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "bridge": {"blocking_call_us": -3}})",
       "expected a non-negative number at device.bridge.blocking_call_us"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "host_cpu": {"ranks": 4}})",
       "host_cpu needs both cores and ranks at device.host_cpu.cores"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4, "ns_per_sent_byte": -1}})",
       "expected a non-negative number at device.host_cpu.ns_per_sent_byte"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4, "ns_per_gathered_byte": -2}})",
       "expected a non-negative number at "
       "device.host_cpu.ns_per_gathered_byte"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4, "timed_ranks": -1}})",
       "expected a non-negative number at device.host_cpu.timed_ranks"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4, "cpu_scale": 0}})",
       "expected a positive number at device.host_cpu.cpu_scale"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4, "local_cpu_scale": -1}})",
       "expected a positive number at device.host_cpu.local_cpu_scale"},
      {R"({"peak_tflops": 1, "memory_gbps": 1,
           "host_cpu": {"cores": 2, "ranks": 4,
                        "us_per_gathered_collective": -5}})",
       "expected a non-negative number at "
       "device.host_cpu.us_per_gathered_collective"},
      {R"({"peak_tflops": 1, "memory_gbps": 1, "host_cpu": 2})",
       "expected object at device.host_cpu"},
  };
  for (const Case &c : cases) {
    std::string error =
        llvm::toString(DeviceModel::fromJSON(c.json).takeError());
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << error << "'";
  }
}

} // namespace
