//===- DeviceModel.cpp - Roofline model of a compute device ---------------===//
//
// The roofline estimate, JSON reading and writing and the device presets;
// docs/CostModel.md gives the datasheet behind every preset.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/DeviceModel.h"

#include "Description.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::comm;
using llvm::json::Path;

namespace {
/// The value of the "format" field of a device description file.
constexpr llvm::StringLiteral kFormat = "commopt-device";
/// The only file format version so far.
constexpr int64_t kVersion = 1;
} // namespace

double DeviceModel::rooflineUs(double flops, double bytes,
                               bool tensorCores) const {
  double tflops =
      tensorCores && peakTensorTflops > 0 ? peakTensorTflops : peakTflops;
  // flops / (T * 1e12) s = flops / (T * 1e6) us;
  // bytes / (G * 1e9) s = bytes / (G * 1e3) us.
  double computeUs = flops / (tflops * 1e6);
  double memoryUs = bytes / (memoryGBps * 1e3);
  return launchOverheadUs + std::max(computeUs, memoryUs);
}

bool LocalWorkRates::operator==(const LocalWorkRates &other) const {
  return accumulateNs == other.accumulateNs &&
         thresholdSelectNs == other.thresholdSelectNs &&
         topkSelectNs == other.topkSelectNs &&
         chunkSelectNs == other.chunkSelectNs && scatterNs == other.scatterNs &&
         scatterNsPerEntry == other.scatterNsPerEntry &&
         denseNs == other.denseNs;
}

bool BridgeCosts::operator==(const BridgeCosts &other) const {
  return hookUs == other.hookUs && momentumNs == other.momentumNs &&
         maskNs == other.maskNs && blockingCallUs == other.blockingCallUs;
}

double HostCpu::busyShare() const {
  if (!isDescribed())
    return 1.0;
  return std::min(1.0, cores / (timedRanks > 0 ? timedRanks : ranks));
}

double HostCpu::boundUs(double cpuUs) const {
  return isDescribed() ? cpuUs * ranks / cores : 0.0;
}

double HostCpu::lockstepStretch() const {
  if (!isDescribed())
    return 1.0;
  return busyShare() * std::max(1.0, ranks / cores);
}

double HostCpu::getTransportUs(double sentBytes, double gatheredBytes,
                               double gatheredCollectives) const {
  return ((sentBytes - gatheredBytes) * nsPerSentByte +
          gatheredBytes * getNsPerGatheredByte()) *
             1e-3 +
         gatheredCollectives * usPerGatheredCollective.value_or(0.0);
}

bool HostCpu::operator==(const HostCpu &other) const {
  return cores == other.cores && ranks == other.ranks &&
         stepUs == other.stepUs && nsPerSentByte == other.nsPerSentByte &&
         timedRanks == other.timedRanks &&
         nsPerGatheredByte == other.nsPerGatheredByte &&
         cpuScale == other.cpuScale &&
         usPerGatheredCollective == other.usPerGatheredCollective &&
         localCpuScale == other.localCpuScale;
}

/// Reports the first negative or non-finite rate of `rates` below `path`
/// (its `local_work` field).
static bool verifyLocalWork(const LocalWorkRates &rates, Path path) {
  Path select = path.field("select_ns_per_element");
  return detail::checkNonNegative(rates.accumulateNs, path,
                                  "accumulate_ns_per_element") &&
         detail::checkNonNegative(rates.thresholdSelectNs, select,
                                  "threshold") &&
         detail::checkNonNegative(rates.topkSelectNs, select, "topk") &&
         detail::checkNonNegative(rates.chunkSelectNs, select, "chunk") &&
         detail::checkNonNegative(rates.scatterNs, path,
                                  "scatter_ns_per_element") &&
         detail::checkNonNegative(rates.scatterNsPerEntry, path,
                                  "scatter_ns_per_entry") &&
         detail::checkNonNegative(rates.denseNs, path, "dense_ns_per_element");
}

/// Likewise for the bridge's costs (its `bridge` field).
static bool verifyBridge(const BridgeCosts &bridge, Path path) {
  return detail::checkNonNegative(bridge.hookUs, path, "hook_us") &&
         detail::checkNonNegative(bridge.momentumNs, path,
                                  "momentum_ns_per_element") &&
         detail::checkNonNegative(bridge.maskNs, path, "mask_ns_per_element") &&
         detail::checkNonNegative(bridge.blockingCallUs, path,
                                  "blocking_call_us");
}

/// Likewise for the host's CPU (its `host_cpu` field): cores and ranks
/// both given or both 0.
static bool verifyHostCpu(const HostCpu &host, Path path) {
  return detail::checkNonNegative(host.cores, path, "cores") &&
         detail::checkNonNegative(host.ranks, path, "ranks") &&
         detail::checkField((host.cores > 0) == (host.ranks > 0), path,
                            host.cores > 0 ? "ranks" : "cores",
                            "expected a positive number: host_cpu needs "
                            "both cores and ranks") &&
         detail::checkNonNegative(host.stepUs, path, "step_us") &&
         detail::checkNonNegative(host.nsPerSentByte, path,
                                  "ns_per_sent_byte") &&
         detail::checkNonNegative(host.getNsPerGatheredByte(), path,
                                  "ns_per_gathered_byte") &&
         detail::checkNonNegative(host.timedRanks, path, "timed_ranks") &&
         detail::checkPositive(host.cpuScale.value_or(1.0), path,
                               "cpu_scale") &&
         detail::checkNonNegative(host.usPerGatheredCollective.value_or(0.0),
                                  path, "us_per_gathered_collective") &&
         detail::checkPositive(host.localCpuScale.value_or(1.0), path,
                               "local_cpu_scale");
}

/// Reports the first broken invariant of `device` below `path`.
static bool verifyDevice(const DeviceModel &device, Path path) {
  return detail::checkPositive(device.peakTflops, path, "peak_tflops") &&
         detail::checkNonNegative(device.peakTensorTflops, path,
                                  "peak_tensor_tflops") &&
         detail::checkPositive(device.memoryGBps, path, "memory_gbps") &&
         detail::checkNonNegative(device.launchOverheadUs, path,
                                  "launch_overhead_us") &&
         detail::checkField(std::isfinite(device.channelSlowdown) &&
                                device.channelSlowdown >= 1,
                            path, "channel_slowdown",
                            "expected a number of at least 1") &&
         detail::checkField(
             device.computeOverlap > 0 && device.computeOverlap <= 1, path,
             "compute_overlap", "expected a number in (0, 1]") &&
         verifyLocalWork(device.localWork, path.field("local_work")) &&
         verifyBridge(device.bridge, path.field("bridge")) &&
         verifyHostCpu(device.hostCpu, path.field("host_cpu"));
}

namespace mlir::comm {
/// Reads a device description's `local_work` object.
static bool fromJSON(const llvm::json::Value &value, LocalWorkRates &rates,
                     Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  if (!mapper ||
      !mapper.mapOptional("accumulate_ns_per_element", rates.accumulateNs))
    return false;
  if (const llvm::json::Value *select =
          value.getAsObject()->get("select_ns_per_element")) {
    llvm::json::ObjectMapper selectMapper(*select,
                                          path.field("select_ns_per_element"));
    if (!selectMapper ||
        !selectMapper.mapOptional("threshold", rates.thresholdSelectNs) ||
        !selectMapper.mapOptional("topk", rates.topkSelectNs) ||
        !selectMapper.mapOptional("chunk", rates.chunkSelectNs))
      return false;
  }
  return mapper.mapOptional("scatter_ns_per_element", rates.scatterNs) &&
         mapper.mapOptional("scatter_ns_per_entry", rates.scatterNsPerEntry) &&
         mapper.mapOptional("dense_ns_per_element", rates.denseNs);
}

/// Reads a device description's `bridge` object.
static bool fromJSON(const llvm::json::Value &value, BridgeCosts &bridge,
                     Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  return mapper && mapper.mapOptional("hook_us", bridge.hookUs) &&
         mapper.mapOptional("momentum_ns_per_element", bridge.momentumNs) &&
         mapper.mapOptional("mask_ns_per_element", bridge.maskNs) &&
         mapper.mapOptional("blocking_call_us", bridge.blockingCallUs);
}

/// Reads a device description's `host_cpu` object.
static bool fromJSON(const llvm::json::Value &value, HostCpu &host, Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  return mapper && mapper.mapOptional("cores", host.cores) &&
         mapper.mapOptional("ranks", host.ranks) &&
         mapper.mapOptional("step_us", host.stepUs) &&
         mapper.mapOptional("ns_per_sent_byte", host.nsPerSentByte) &&
         mapper.mapOptional("ns_per_gathered_byte", host.nsPerGatheredByte) &&
         mapper.mapOptional("timed_ranks", host.timedRanks) &&
         mapper.mapOptional("cpu_scale", host.cpuScale) &&
         mapper.mapOptional("us_per_gathered_collective",
                            host.usPerGatheredCollective) &&
         mapper.mapOptional("local_cpu_scale", host.localCpuScale);
}
} // namespace mlir::comm

llvm::Error DeviceModel::verify() const {
  Path::Root root("device");
  if (verifyDevice(*this, root))
    return llvm::Error::success();
  return root.getError();
}

bool comm::fromJSON(const llvm::json::Value &value, DeviceModel &device,
                    Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  DeviceModel result;
  if (!mapper || !detail::readDescriptionHeader(mapper, path, kFormat,
                                                "expected \"commopt-device\""))
    return false;
  if (!mapper.mapOptional("name", result.name) ||
      !mapper.mapOptional("source", result.source) ||
      !mapper.map("peak_tflops", result.peakTflops) ||
      !mapper.mapOptional("peak_tensor_tflops", result.peakTensorTflops) ||
      !mapper.map("memory_gbps", result.memoryGBps) ||
      !mapper.mapOptional("launch_overhead_us", result.launchOverheadUs) ||
      !mapper.mapOptional("channel_slowdown", result.channelSlowdown) ||
      !mapper.mapOptional("compute_overlap", result.computeOverlap) ||
      !mapper.mapOptional("local_work", result.localWork) ||
      !mapper.mapOptional("bridge", result.bridge) ||
      !mapper.mapOptional("host_cpu", result.hostCpu) ||
      !verifyDevice(result, path))
    return false;
  device = std::move(result);
  return true;
}

llvm::Expected<DeviceModel> DeviceModel::fromJSON(llvm::StringRef text) {
  return detail::parseDescription<DeviceModel>(text, "device");
}

llvm::Expected<DeviceModel> DeviceModel::loadFile(llvm::StringRef path) {
  return detail::loadDescription<DeviceModel>(path, "device");
}

llvm::json::Value DeviceModel::toJSON() const {
  llvm::json::Object host{{"cores", hostCpu.cores},
                          {"ranks", hostCpu.ranks},
                          {"step_us", hostCpu.stepUs},
                          {"ns_per_sent_byte", hostCpu.nsPerSentByte},
                          {"timed_ranks", hostCpu.timedRanks}};
  if (hostCpu.nsPerGatheredByte)
    host["ns_per_gathered_byte"] = *hostCpu.nsPerGatheredByte;
  if (hostCpu.cpuScale)
    host["cpu_scale"] = *hostCpu.cpuScale;
  if (hostCpu.usPerGatheredCollective)
    host["us_per_gathered_collective"] = *hostCpu.usPerGatheredCollective;
  if (hostCpu.localCpuScale)
    host["local_cpu_scale"] = *hostCpu.localCpuScale;
  return llvm::json::Object{
      {"format", kFormat},
      {"version", kVersion},
      {"name", name},
      {"source", source},
      {"peak_tflops", peakTflops},
      {"peak_tensor_tflops", peakTensorTflops},
      {"memory_gbps", memoryGBps},
      {"launch_overhead_us", launchOverheadUs},
      {"channel_slowdown", channelSlowdown},
      {"compute_overlap", computeOverlap},
      {"local_work",
       llvm::json::Object{
           {"accumulate_ns_per_element", localWork.accumulateNs},
           {"select_ns_per_element",
            llvm::json::Object{{"threshold", localWork.thresholdSelectNs},
                               {"topk", localWork.topkSelectNs},
                               {"chunk", localWork.chunkSelectNs}}},
           {"scatter_ns_per_element", localWork.scatterNs},
           {"scatter_ns_per_entry", localWork.scatterNsPerEntry},
           {"dense_ns_per_element", localWork.denseNs}}},
      {"bridge",
       llvm::json::Object{{"hook_us", bridge.hookUs},
                          {"momentum_ns_per_element", bridge.momentumNs},
                          {"mask_ns_per_element", bridge.maskNs},
                          {"blocking_call_us", bridge.blockingCallUs}}},
      {"host_cpu", std::move(host)},
  };
}

bool DeviceModel::operator==(const DeviceModel &other) const {
  return name == other.name && source == other.source &&
         peakTflops == other.peakTflops &&
         peakTensorTflops == other.peakTensorTflops &&
         memoryGBps == other.memoryGBps &&
         launchOverheadUs == other.launchOverheadUs &&
         channelSlowdown == other.channelSlowdown &&
         computeOverlap == other.computeOverlap &&
         localWork == other.localWork && bridge == other.bridge &&
         hostCpu == other.hostCpu;
}

namespace {
/// One preset: its name and its figures.
struct DevicePreset {
  llvm::StringLiteral name;
  llvm::StringLiteral source;
  double peakTflops;
  double peakTensorTflops;
  double memoryGBps;

  /// The model this preset describes.
  DeviceModel build() const {
    DeviceModel device;
    device.name = name.str();
    device.source = source.str();
    device.peakTflops = peakTflops;
    device.peakTensorTflops = peakTensorTflops;
    device.memoryGBps = memoryGBps;
    return device;
  }
};

constexpr DevicePreset kPresets[] = {
    {"v100",
     "NVIDIA Tesla V100 SXM2 datasheet: 15.7 TFLOP/s FP32, 125 TFLOP/s "
     "tensor, 900 GB/s HBM2",
     15.7, 125.0, 900.0},
    {"p40",
     "NVIDIA Tesla P40 datasheet: 12 TFLOP/s FP32, no tensor cores, "
     "346 GB/s GDDR5",
     12.0, 0.0, 346.0},
    // peak_tensor_tflops is the dense FP16/BF16 tensor-core rate, as for
    // the other presets: 312 TFLOP/s on the A100 (its TF32 tensor rate is
    // 156 TFLOP/s, which an FP32 model reaches only with TF32 allowed).
    {"a100",
     "NVIDIA A100 Tensor Core GPU datasheet (40 GB SXM4): 19.5 TFLOP/s "
     "FP32, 312 TFLOP/s dense FP16/BF16 tensor (156 TF32), 1555 GB/s HBM2",
     19.5, 312.0, 1555.0},
    {"h100",
     "NVIDIA H100 SXM5 datasheet: 67 TFLOP/s FP32, 989.5 TFLOP/s dense "
     "FP16/BF16 tensor (half the 1979 quoted with sparsity), 3.35 TB/s HBM3",
     67.0, 989.5, 3350.0},
};
} // namespace

llvm::ArrayRef<llvm::StringRef> DeviceModel::presetNames() {
  static const llvm::SmallVector<llvm::StringRef> names =
      detail::presetNamesOf(kPresets);
  return names;
}

llvm::Expected<DeviceModel> DeviceModel::preset(llvm::StringRef name) {
  return detail::buildPreset<DeviceModel>(kPresets, name, "device");
}

llvm::Expected<DeviceModel> DeviceModel::parse(llvm::StringRef nameOrPath) {
  return detail::parsePresetOrFile<DeviceModel>(nameOrPath, "device");
}
