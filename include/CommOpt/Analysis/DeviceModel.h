//===- DeviceModel.h - Roofline model of a compute device -------*- C++ -*-===//
//
// Peak arithmetic rate and memory bandwidth of one accelerator, used to
// estimate the time of compute ops that come without a measured cost. Loaded
// from JSON or from a named preset (datasheet figures, see
// docs/CostModel.md).
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_DEVICEMODEL_H
#define COMMOPT_ANALYSIS_DEVICEMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::comm {

/// Measured times of the local work a collective does on a device (the
/// passes of the runtime's sparse allreduce and dense unpacking), per
/// element of the collective unless said otherwise, in nanoseconds; each
/// phase matches a commrt trace phase (commrt.h). 0: not measured, and the
/// phase is priced as the memory traffic docs/CostModel.md counts for it, at
/// the device's memory bandwidth.
struct LocalWorkRates {
  /// acc = grad + residual (COMMRT_PHASE_ACCUMULATE).
  double accumulateNs = 0;
  /// The selection of each scheme (COMMRT_PHASE_SELECT): threshold's and
  /// top-k's radix passes and collection, chunk's norms.
  double thresholdSelectNs = 0;
  double topkSelectNs = 0;
  double chunkSelectNs = 0;
  /// The result (COMMRT_PHASE_SCATTER): per element (zeros, AVG's
  /// division), plus per entry received (a pair added in, or an element of
  /// a chosen chunk copied and cleared).
  double scatterNs = 0;
  double scatterNsPerEntry = 0;
  /// A dense collective's passes on the ranks beside the reduction
  /// (COMMRT_PHASE_PACK and COMMRT_PHASE_UNPACK: AVG's division, packing)
  /// where no wire type narrows it; a narrowed one's are the cluster's
  /// wire_s_per_byte.
  double denseNs = 0;

  bool operator==(const LocalWorkRates &other) const;
};

/// What the Python training bridge (python/commopt) itself costs on the
/// host that drives a device, on the compute thread; 0 for lowered code,
/// which has no bridge.
struct BridgeCosts {
  /// Each gradient's hook, in microseconds.
  double hookUs = 0;
  /// Momentum correction of a sparse gradient in its hook (u = m u + g),
  /// per element, in nanoseconds.
  double momentumNs = 0;
  /// Momentum factor masking after the sparse allreduce's wait, per
  /// element, in nanoseconds.
  double maskNs = 0;
  /// What a blocking collective costs the step thread beyond the runtime's
  /// call, in microseconds: handing the call to the thread that runs it
  /// (with a timeout) and being woken when it returns.
  double blockingCallUs = 0;

  bool operator==(const BridgeCosts &other) const;
};

/// The host CPU that ranks share where they compute on it (a CPU device) or
/// drive their devices from: what a step costs it beyond the modelled work.
/// A host whose ranks need more CPU in a step than its cores give is the
/// step's bound however the communication overlaps (docs/CostModel.md,
/// section 3.1). 0 cores: not described, and no bound.
struct HostCpu {
  /// The cores the host has for its ranks, and how many ranks share them.
  double cores = 0;
  double ranks = 0;
  /// CPU a rank spends in a step beyond its compute and its collectives'
  /// local work (the bridge's step, waking for waits), in microseconds.
  double stepUs = 0;
  /// The transport's CPU per byte a rank sends, in nanoseconds.
  double nsPerSentByte = 0;
  /// How many ranks shared the cores while the step's durations (the
  /// profile's compute, the rates that price local work) were timed; 0:
  /// `ranks`, as where the bridge's traces of the same runs gave them. A
  /// duration timed while ranks shared the cores is longer than its CPU
  /// time; one timed alone (commopt-export's profile: 1) is its CPU time.
  double timedRanks = 0;
  /// The transport's CPU per byte a rank sends through MPI's own
  /// nonblocking collectives (CollectiveCost::gatheredBytes), in
  /// nanoseconds; none: nsPerSentByte.
  std::optional<double> nsPerGatheredByte;
  /// How many times the CPU it took where it was timed the same work takes
  /// while `ranks` ranks share the cores: they also share the caches and
  /// the memory's bandwidth, and each switch between them costs. Scales
  /// the CPU the model counts from timed durations (compute, the
  /// collectives' local work, stepUs), not the transport's per-byte rates,
  /// which are measured under the sharing, nor the timeline, whose lockstep
  /// stretch already runs each rank's compute on its share of the cores
  /// throughout. None: 1.
  std::optional<double> cpuScale;
  /// The transport's CPU for each of MPI's own nonblocking collectives a
  /// rank runs (CollectiveCost::gatheredCollectives), whatever its bytes:
  /// its messages to and from every peer, the tests of its waits; in
  /// microseconds. None: 0 (nsPerGatheredByte then holds it, spread over
  /// the bytes it was measured with).
  std::optional<double> usPerGatheredCollective;
  /// cpuScale for the collectives' local work (the runtime's passes over
  /// rows and pairs, memory-bound C++ loops), which the sharing slows less
  /// than the profile's compute (commopt-calibrate measures it on such a
  /// pass). None: cpuScale.
  std::optional<double> localCpuScale;

  bool isDescribed() const { return cores > 0 && ranks > 0; }
  double getNsPerGatheredByte() const {
    return nsPerGatheredByte.value_or(nsPerSentByte);
  }
  /// cpuScale where the host is described, else 1.
  double getCpuScale() const {
    return isDescribed() ? cpuScale.value_or(1.0) : 1.0;
  }
  /// localCpuScale where the host is described and gives it, else
  /// getCpuScale().
  double getLocalCpuScale() const {
    return isDescribed() ? localCpuScale.value_or(getCpuScale()) : 1.0;
  }
  /// The transport's CPU for a collective that sends `sentBytes`, of which
  /// `gatheredBytes` in the `gatheredCollectives` of MPI's own collectives,
  /// in microseconds.
  double getTransportUs(double sentBytes, double gatheredBytes,
                        double gatheredCollectives) const;
  /// The CPU time per microsecond of a modelled duration: the part of a core
  /// a busy thread had while the durations were timed, min(1, cores /
  /// timed ranks), with `ranks` where timedRanks is 0.
  double busyShare() const;
  /// The step time a rank that needs `cpuUs` of CPU in a step cannot beat:
  /// every rank of the host needs as much, and the cores serve them all.
  double boundUs(double cpuUs) const;
  /// How many times as long a modelled duration of CPU work takes in the
  /// step as it took when it was timed: the collectives keep data-parallel
  /// ranks in step, so they compute at the same time and, where they
  /// outnumber the cores, each runs on cores / ranks of one.
  /// busyShare() x max(1, ranks / cores): 1 where the durations were timed
  /// under the sharing they run under (`timed_ranks` 0), 1 without a host.
  double lockstepStretch() const;
  /// Whether the step thread does `stepUs` beside the modelled durations:
  /// where they were timed apart from the training bridge (a profile,
  /// `timed_ranks` set), the bridge's own work between them is not in them.
  /// Durations taken from the bridge's traces of the same runs hold it.
  bool stepCpuOnStepThread() const { return isDescribed() && timedRanks > 0; }

  bool operator==(const HostCpu &other) const;
};

/// A compute device in the roofline model.
struct DeviceModel {
  /// Preset or file name, for reports.
  std::string name;
  /// Where the figures come from (free text).
  std::string source;
  /// Peak FP32 rate without tensor cores, in TFLOP/s (10^12 FLOP/s).
  double peakTflops = 0;
  /// Peak dense FP16/BF16 tensor-core rate in TFLOP/s; 0 when the device has
  /// no tensor cores.
  double peakTensorTflops = 0;
  /// Memory bandwidth in GB/s (10^9 bytes per second).
  double memoryGBps = 0;
  /// Fixed cost added to every estimated op (kernel launch), in
  /// microseconds.
  double launchOverheadUs = 0;
  /// How many times as long a collective's local work (a sparse allreduce's
  /// selection and residual) takes when a communication channel runs it
  /// beside compute as when the calling thread (stream) runs it, blocking;
  /// at least 1.
  double channelSlowdown = 1;
  /// How fast the runtime's collectives progress while this device computes,
  /// relative to while it does not, in (0, 1]: 1 where communication has
  /// engines of its own beside compute (GPUs, NICs); less on a host whose
  /// cores its ranks' compute and communication threads share.
  double computeOverlap = 1;
  /// Measured local work of collectives (JSON `local_work`).
  LocalWorkRates localWork;
  /// The training bridge's costs (JSON `bridge`).
  BridgeCosts bridge;
  /// The host's cores and what a step costs them (JSON `host_cpu`).
  HostCpu hostCpu;

  /// Time of an op that performs `flops` floating-point operations and moves
  /// `bytes` bytes to or from memory: launchOverheadUs + max(flops / peak,
  /// bytes / bandwidth), in microseconds. With `tensorCores`, the peak is the
  /// tensor-core rate when the device has one.
  double rooflineUs(double flops, double bytes, bool tensorCores = false) const;

  /// Checks that the rates are positive and finite, the overhead is
  /// non-negative and the channel slowdown at least 1; the error names the
  /// JSON field.
  llvm::Error verify() const;

  /// Parses a device description from JSON text (format in
  /// docs/CostModel.md). Errors name the offending field.
  static llvm::Expected<DeviceModel> fromJSON(llvm::StringRef text);
  /// Reads and parses a device description file.
  static llvm::Expected<DeviceModel> loadFile(llvm::StringRef path);
  /// Returns the named preset, or an error listing the known names.
  static llvm::Expected<DeviceModel> preset(llvm::StringRef name);
  /// Names of all presets.
  static llvm::ArrayRef<llvm::StringRef> presetNames();
  /// Returns the preset called `nameOrPath` if there is one, otherwise loads
  /// the file at that path.
  static llvm::Expected<DeviceModel> parse(llvm::StringRef nameOrPath);

  /// Serialises the description; `fromJSON` of it gives back an equal model.
  llvm::json::Value toJSON() const;

  bool operator==(const DeviceModel &other) const;
};

/// Reads a device description from a parsed JSON value, reporting the first
/// problem at `path`.
bool fromJSON(const llvm::json::Value &value, DeviceModel &device,
              llvm::json::Path path);

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_DEVICEMODEL_H
