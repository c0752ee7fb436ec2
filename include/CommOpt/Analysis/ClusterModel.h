//===- ClusterModel.h - Description of a training cluster -------*- C++ -*-===//
//
// The cluster that every cost query is made against: how many ranks, how
// they are grouped into nodes, the latency and bandwidth of the links inside
// and between nodes, the allreduce algorithm, and how many collectives may be
// in flight at once. Loaded from JSON or from a named preset; see
// docs/CostModel.md for the file format and where each preset's figures come
// from.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_CLUSTERMODEL_H
#define COMMOPT_ANALYSIS_CLUSTERMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::comm {

/// The cluster a plan is made for when neither an option nor the module
/// names one (docs/Cluster.md).
inline constexpr llvm::StringLiteral kDefaultClusterName = "gradientflow-64";

/// How a dense allreduce is carried out.
enum class AllreduceAlgorithm {
  /// Ring reduce-scatter followed by ring allgather over all ranks.
  Ring,
  /// Latency-optimised: a pipelined (double) binary tree for allreduce,
  /// recursive halving/doubling for reduce-scatter and allgather.
  Tree,
  /// Two levels: reduce-scatter inside each node, allreduce of each shard
  /// across nodes, allgather inside each node.
  Hierarchical,
};

/// How collectives that run at the same time on different channels share the
/// network.
enum class ChannelSharing {
  /// Collectives in their bandwidth phase split the bandwidth equally: with k
  /// of them active, each progresses at 1/k of the full rate. Latency is not
  /// shared.
  Shared,
  /// Every channel has the full bandwidth to itself (e.g. channels that use
  /// different links).
  Independent,
};

/// The runtime backend whose collectives carry the sparse exchanges, which
/// run them on different schedules.
enum class CollectiveBackend {
  /// NCCL: rings (ncclAllGather) and grouped point-to-point calls, one
  /// message after another per peer in a ring's order.
  Nccl,
  /// MPI's own nonblocking collectives as Open MPI's libnbc schedules them:
  /// an allgather(v) or all-to-all(v) posts all of a rank's messages at
  /// once; an allreduce of a few bytes runs on a binomial tree.
  Mpi,
};

/// Returns the JSON spelling of an algorithm ("ring", "tree", "hierarchical").
llvm::StringRef stringifyAllreduceAlgorithm(AllreduceAlgorithm algorithm);
/// Parses the JSON spelling of an algorithm.
std::optional<AllreduceAlgorithm> symbolizeAllreduceAlgorithm(llvm::StringRef);
/// Returns the JSON spelling of a sharing mode ("shared", "independent").
llvm::StringRef stringifyChannelSharing(ChannelSharing sharing);
/// Parses the JSON spelling of a sharing mode.
std::optional<ChannelSharing> symbolizeChannelSharing(llvm::StringRef);
/// Returns the JSON spelling of a backend ("nccl", "mpi").
llvm::StringRef stringifyCollectiveBackend(CollectiveBackend backend);

/// The most channels a cluster may have: those the runtime runs collectives
/// on (COMMRT_MAX_CHANNELS), the bound of comm-optimize's `channels`.
inline constexpr unsigned kMaxClusterChannels = 64;

/// The alpha and beta a level has for collectives of up to `upToBytes`
/// bytes (LinkLevel::regimes).
struct SizeRegime {
  /// The largest collective, in bytes, the regime prices.
  double upToBytes = 0;
  double alphaUs = 0;
  double betaUsPerByte = 0;

  bool operator==(const SizeRegime &other) const {
    return upToBytes == other.upToBytes && alphaUs == other.alphaUs &&
           betaUsPerByte == other.betaUsPerByte;
  }
};

/// One level of the network in the alpha-beta (Hockney) model: sending one
/// message of n bytes over it costs alphaUs + n * betaUsPerByte.
struct LinkLevel {
  /// Per-message latency in microseconds.
  double alphaUs = 0;
  /// Transfer time per byte in microseconds (1 / bandwidth).
  double betaUsPerByte = 0;
  /// Piecewise figures by the size of a collective, as commopt-calibrate
  /// fits them where one line does not (small messages pay a transport's
  /// and an algorithm's fixed costs that large ones do not): a collective
  /// of n bytes is priced with the first regime whose upToBytes is at
  /// least n, and with alphaUs and betaUsPerByte above the last one. In
  /// increasing order of upToBytes; empty for one line.
  std::vector<SizeRegime> regimes;

  /// A level given by its latency and its bandwidth in gigabits per second
  /// (10^9 bit/s). Its beta is a representableBeta.
  static LinkLevel fromBandwidth(double alphaUs, double gigabitsPerSecond);
  /// The level's bandwidth in gigabits per second.
  double bandwidthGbps() const;

  /// The seconds per byte that a description file holds for
  /// `betaUsPerByte`: a double s whose s * 1e6, as the reader computes it,
  /// is `betaUsPerByte` exactly, when one exists (always for a
  /// representableBeta); otherwise the nearest to betaUsPerByte / 1e6.
  static double secondsPerByte(double betaUsPerByte);
  /// `betaUsPerByte` if a file can hold it exactly in seconds per byte
  /// (secondsPerByte), else the nearest beta that one can: s * 1e6 for
  /// s = betaUsPerByte / 1e6, one ulp or so off. Every beta the reader
  /// and the presets build is one, so that a cluster written by
  /// ClusterModel::toJSON reads back equal.
  static double representableBeta(double betaUsPerByte);

  /// The level that prices a collective of `bytes` bytes: the figures of
  /// its regime, without regimes.
  LinkLevel forBytes(double bytes) const;

  bool operator==(const LinkLevel &other) const {
    return alphaUs == other.alphaUs && betaUsPerByte == other.betaUsPerByte &&
           regimes == other.regimes;
  }
};

/// Where the collectives' buffers are device memory that the runtime stages
/// through pinned host memory: commrt's MPI backend given device buffers
/// where MPI does not read device memory (commrt.h). A buffer is copied to
/// the host and back whole, except the staged ring's, which moves in pieces
/// whose copies overlap the link (docs/CostModel.md, section 2.8). JSON
/// `staging`; absent (copyGBps 0): nothing is staged.
struct DeviceStaging {
  /// A copy's rate between device and pinned host memory, each way, in GB/s
  /// (10^9 bytes per second; `copy_gbps`).
  double copyGBps = 0;
  /// What every copy and kernel the staging enqueues costs beyond its bytes,
  /// in microseconds (`launch_us`).
  double launchUs = 0;
  /// The staged ring's piece, in bytes (`piece_bytes`; the runtime's is
  /// 1 MiB).
  double pieceBytes = 1 << 20;

  bool isDescribed() const { return copyGBps > 0; }
  /// Microseconds to copy `bytes` bytes one way, launch included; 0 for
  /// none.
  double copyUs(double bytes) const {
    return bytes > 0 ? launchUs + bytes / (copyGBps * 1e3) : 0;
  }
  bool operator==(const DeviceStaging &other) const {
    return copyGBps == other.copyGBps && launchUs == other.launchUs &&
           pieceBytes == other.pieceBytes;
  }
};

/// A data-parallel training cluster as the cost model sees it.
///
/// Ranks are grouped into nodes of `ranksPerNode` consecutive ranks. `intra`
/// describes the links between ranks of one node, `inter` the network between
/// nodes; the inter level's bandwidth is the node's (one NIC per node, shared
/// by all ranks of the node when they communicate at once).
struct ClusterModel {
  /// Preset or file name, for reports.
  std::string name;
  /// Where the figures come from (free text, for reports and docs).
  std::string source;
  /// Number of ranks (data-parallel workers), at least 1.
  int64_t ranks = 1;
  /// Ranks per node; divides `ranks`.
  int64_t ranksPerNode = 1;
  /// Links between ranks of one node.
  LinkLevel intra;
  /// Network between nodes.
  LinkLevel inter;
  /// Algorithm used for allreduce (and the matching reduce-scatter,
  /// allgather and broadcast forms).
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Ring;
  /// Number of communication channels (streams) that may each run one
  /// collective at a time; at least 1.
  unsigned channels = 1;
  /// How concurrently running collectives share bandwidth.
  ChannelSharing sharing = ChannelSharing::Shared;
  /// The backend whose collectives carry the sparse exchanges (`backend`):
  /// the presets are GPU clusters (NCCL); commopt-calibrate writes the
  /// backend it measured.
  CollectiveBackend backend = CollectiveBackend::Nccl;
  /// What a 16-bit wire adds to a collective per byte of the gradients it
  /// narrows (in their own type), beyond sending the wire bytes: packing,
  /// the 16-bit reduction and unpacking on the ranks, in microseconds
  /// (`wire_s_per_byte` in seconds in the JSON form). commopt-calibrate
  /// --wire measures it; the presets leave it 0 (on GPUs these steps are
  /// kernels at memory speed).
  double wireUsPerByte = 0;
  /// What every collective costs within a step beyond its messages as
  /// measured alone (an allreduce started on a channel between compute and
  /// waited at the end), in microseconds (`collective_overhead_us`); the cost
  /// functions add it once per collective they price.
  /// commopt-calibrate measures it; the presets leave it 0.
  double collectiveOverheadUs = 0;
  /// Device buffers staged through host memory (`staging`); only with the
  /// MPI backend.
  DeviceStaging staging;
  /// A second transport the runtime holds beside `backend`, on which a dense
  /// allreduce may run instead (`#comm.transport`; JSON `alternate`): the
  /// other backend's links, algorithm, wire, overhead and staging figures,
  /// with this cluster's ranks, nodes and channels. Null for one transport;
  /// an alternate has none of its own.
  std::shared_ptr<const ClusterModel> alternate;

  /// The cluster a collective carried by `transport` runs on: this one for
  /// its own backend, the alternate for the alternate's; null for a backend
  /// it does not have.
  const ClusterModel *onTransport(CollectiveBackend transport) const {
    if (transport == backend)
      return this;
    return alternate && alternate->backend == transport ? alternate.get()
                                                        : nullptr;
  }

  /// Number of nodes (ranks / ranksPerNode).
  int64_t nodes() const { return ranks / ranksPerNode; }

  /// Whether a level has figures by collective size (LinkLevel::regimes).
  bool hasRegimes() const {
    return !intra.regimes.empty() || !inter.regimes.empty();
  }
  /// The cluster that prices a collective of `bytes` bytes: both levels
  /// with the figures of their regime for that size, without regimes.
  ClusterModel forBytes(double bytes) const;

  /// The level a flat (single-level) algorithm over all ranks is limited by:
  /// the inter-node level when there is more than one node, the intra-node
  /// level otherwise.
  const LinkLevel &flatLevel() const { return nodes() > 1 ? inter : intra; }

  /// The cluster that one process group sees: the ranks of a device grid of
  /// shape `gridShape` laid out in row-major order (rank = linear index of
  /// the coordinates, as `#comm.group` documents), grouped with those that
  /// share their coordinates on every axis not in `axes`. The group has the
  /// product of the listed axes' sizes as ranks; its ranks per node are how
  /// many of its members share a node of this cluster (nodes of
  /// `ranksPerNode` consecutive ranks), 1 when the group's members are spread
  /// unevenly over the nodes (priced as if each were on its own node); the
  /// links, algorithm and channels are this cluster's. A row group of a 2x4
  /// grid on nodes of 4 ranks stays in one node; a column group crosses
  /// them. The alternate's group is the alternate's forGroup. `axes` are in
  /// range and increasing. A `gridShape` with a size of
  /// 0 or less (the dialect rejects one) gives this cluster, as a grid of
  /// unknown shape does.
  ClusterModel forGroup(llvm::ArrayRef<int64_t> gridShape,
                        llvm::ArrayRef<int64_t> axes) const;

  /// Checks the invariants (ranks >= 1, ranksPerNode divides ranks, finite
  /// non-negative alphas, positive finite bandwidths, channels from 1 to
  /// kMaxClusterChannels). The error names the offending field as in the
  /// JSON form, e.g.
  /// "expected a positive number at cluster.levels.inter.beta_s_per_byte".
  llvm::Error verify() const;

  /// Parses a cluster description from JSON text (format in
  /// docs/CostModel.md). Errors name the offending field.
  static llvm::Expected<ClusterModel> fromJSON(llvm::StringRef text);
  /// Reads and parses a cluster description file.
  static llvm::Expected<ClusterModel> loadFile(llvm::StringRef path);
  /// Returns the named preset, or an error listing the known names.
  static llvm::Expected<ClusterModel> preset(llvm::StringRef name);
  /// Names of all presets.
  static llvm::ArrayRef<llvm::StringRef> presetNames();
  /// Returns the preset called `nameOrPath` if there is one, otherwise loads
  /// the file at that path.
  static llvm::Expected<ClusterModel> parse(llvm::StringRef nameOrPath);

  /// Serialises the description; `fromJSON` of the printed value gives back an
  /// equal model.
  llvm::json::Value toJSON() const;

  bool operator==(const ClusterModel &other) const;
};

/// Reads a cluster description from an already parsed JSON value, reporting
/// the first problem at `path` (LLVM's json::fromJSON convention, so that a
/// cluster can be embedded in other JSON documents).
bool fromJSON(const llvm::json::Value &value, ClusterModel &cluster,
              llvm::json::Path path);

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_CLUSTERMODEL_H
