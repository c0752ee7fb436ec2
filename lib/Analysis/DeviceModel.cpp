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
                            "expected a number of at least 1");
}

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
  };
}

bool DeviceModel::operator==(const DeviceModel &other) const {
  return name == other.name && source == other.source &&
         peakTflops == other.peakTflops &&
         peakTensorTflops == other.peakTensorTflops &&
         memoryGBps == other.memoryGBps &&
         launchOverheadUs == other.launchOverheadUs &&
         channelSlowdown == other.channelSlowdown;
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
