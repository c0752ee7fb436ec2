//===- ClusterModel.cpp - Description of a training cluster ---------------===//
//
// JSON reading and writing, validation and the named presets of the cluster
// description. docs/CostModel.md gives the source of every preset figure.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"

#include "Description.h"

#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <limits>
#include <map>
#include <vector>

using namespace mlir;
using namespace mlir::comm;
using llvm::json::Path;

namespace {
/// The value of the "format" field of a cluster description file.
constexpr llvm::StringLiteral kFormat = "commopt-cluster";
/// The only file format version so far.
constexpr int64_t kVersion = 1;
/// Microseconds per second.
constexpr double kUsPerSecond = 1e6;
/// The error of a channel count above kMaxClusterChannels.
constexpr llvm::StringLiteral kTooManyChannels =
    "expected at most 64 channels, the runtime's COMMRT_MAX_CHANNELS";
} // namespace

//===----------------------------------------------------------------------===//
// Enums and link levels
//===----------------------------------------------------------------------===//

namespace {
constexpr detail::EnumSpelling<AllreduceAlgorithm> kAlgorithmSpellings[] = {
    {AllreduceAlgorithm::Ring, "ring"},
    {AllreduceAlgorithm::Tree, "tree"},
    {AllreduceAlgorithm::Hierarchical, "hierarchical"},
};

constexpr detail::EnumSpelling<ChannelSharing> kSharingSpellings[] = {
    {ChannelSharing::Shared, "shared"},
    {ChannelSharing::Independent, "independent"},
};

constexpr detail::EnumSpelling<CollectiveBackend> kBackendSpellings[] = {
    {CollectiveBackend::Nccl, "nccl"},
    {CollectiveBackend::Mpi, "mpi"},
};
} // namespace

llvm::StringRef
comm::stringifyAllreduceAlgorithm(AllreduceAlgorithm algorithm) {
  return detail::stringifyEnum(kAlgorithmSpellings, algorithm);
}

std::optional<AllreduceAlgorithm>
comm::symbolizeAllreduceAlgorithm(llvm::StringRef text) {
  return detail::symbolizeEnum(kAlgorithmSpellings, text);
}

llvm::StringRef comm::stringifyChannelSharing(ChannelSharing sharing) {
  return detail::stringifyEnum(kSharingSpellings, sharing);
}

std::optional<ChannelSharing>
comm::symbolizeChannelSharing(llvm::StringRef text) {
  return detail::symbolizeEnum(kSharingSpellings, text);
}

llvm::StringRef comm::stringifyCollectiveBackend(CollectiveBackend backend) {
  return detail::stringifyEnum(kBackendSpellings, backend);
}

double LinkLevel::secondsPerByte(double betaUsPerByte) {
  // x / 1e6 * 1e6 is one ulp off x for some x (4.192 Gbit/s); a neighbour
  // of the quotient then gives x back. Multiplying by 1e6 skips some
  // doubles, for which no candidate fits; representableBeta never yields
  // one.
  double quotient = betaUsPerByte / kUsPerSecond;
  if (!std::isfinite(quotient) || quotient * kUsPerSecond == betaUsPerByte)
    return quotient;
  double below = quotient, above = quotient;
  for (int step = 0; step < 3; ++step) {
    below = std::nextafter(below, -std::numeric_limits<double>::infinity());
    if (below * kUsPerSecond == betaUsPerByte)
      return below;
    above = std::nextafter(above, std::numeric_limits<double>::infinity());
    if (above * kUsPerSecond == betaUsPerByte)
      return above;
  }
  return quotient;
}

double LinkLevel::representableBeta(double betaUsPerByte) {
  return secondsPerByte(betaUsPerByte) * kUsPerSecond;
}

LinkLevel LinkLevel::fromBandwidth(double alphaUs, double gigabitsPerSecond) {
  // 8 bits per byte; 1 Gbit/s moves 1e9 / 8 bytes per second.
  return LinkLevel{alphaUs, representableBeta(8.0 * kUsPerSecond /
                                              (gigabitsPerSecond * 1e9))};
}

double LinkLevel::bandwidthGbps() const {
  return 8.0 * kUsPerSecond / (betaUsPerByte * 1e9);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Reports the first broken invariant of `level` below `path`.
static bool verifyLevel(const LinkLevel &level, Path path) {
  if (!detail::checkNonNegative(level.alphaUs, path, "alpha_us") ||
      !detail::checkPositive(level.betaUsPerByte, path, "beta_s_per_byte"))
    return false;
  Path regimes = path.field("regimes");
  for (auto [index, regime] : llvm::enumerate(level.regimes)) {
    Path at = regimes.index(index);
    if (!detail::checkPositive(regime.upToBytes, at, "up_to_bytes") ||
        !detail::checkNonNegative(regime.alphaUs, at, "alpha_us") ||
        !detail::checkPositive(regime.betaUsPerByte, at, "beta_s_per_byte"))
      return false;
    if (index > 0 && !detail::checkField(regime.upToBytes >
                                             level.regimes[index - 1].upToBytes,
                                         at, "up_to_bytes",
                                         "expected sizes in increasing order"))
      return false;
  }
  return true;
}

/// Reports a channel count out of [1, kMaxClusterChannels] below `path`.
static bool verifyChannels(int64_t channels, Path path) {
  return detail::checkField(channels >= 1, path, "channels",
                            "expected a positive integer") &&
         detail::checkField(channels <= kMaxClusterChannels, path, "channels",
                            kTooManyChannels);
}

/// Reports a `staging` section whose figures are out of range, or that
/// comes with another backend than MPI (the NCCL backend reads device
/// memory itself).
static bool verifyStaging(const ClusterModel &cluster, Path path) {
  const DeviceStaging &staging = cluster.staging;
  if (staging == DeviceStaging())
    return true;
  Path field = path.field("staging");
  return detail::checkField(cluster.backend == CollectiveBackend::Mpi, path,
                            "staging",
                            "device buffers are staged by the MPI backend "
                            "only: set \"backend\": \"mpi\"") &&
         detail::checkPositive(staging.copyGBps, field, "copy_gbps") &&
         detail::checkNonNegative(staging.launchUs, field, "launch_us") &&
         detail::checkPositive(staging.pieceBytes, field, "piece_bytes");
}

/// Reports the first broken invariant among the rank and channel counts of
/// `cluster` below `path`. Field names are those of the JSON form.
static bool verifyCounts(const ClusterModel &cluster, Path path) {
  // MPI and NCCL count ranks in an int.
  return detail::checkField(
             cluster.ranks >= 1 &&
                 cluster.ranks <= std::numeric_limits<int32_t>::max(),
             path, "ranks",
             "expected a positive integer no larger than 2147483647") &&
         detail::checkField(cluster.ranksPerNode >= 1, path, "ranks_per_node",
                            "expected a positive integer") &&
         detail::checkField(cluster.ranks % cluster.ranksPerNode == 0, path,
                            "ranks_per_node", "must divide ranks") &&
         verifyChannels(cluster.channels, path) &&
         detail::checkNonNegative(cluster.wireUsPerByte, path,
                                  "wire_s_per_byte") &&
         detail::checkNonNegative(cluster.collectiveOverheadUs, path,
                                  "collective_overhead_us") &&
         verifyStaging(cluster, path);
}

/// Reports an `alternate` of `cluster` that is not the other backend, has
/// an alternate of its own, or differs from it in ranks, nodes or channels
/// (which an alternate takes from its cluster).
static bool verifyAlternate(const ClusterModel &cluster, Path path) {
  if (!cluster.alternate)
    return true;
  const ClusterModel &alternate = *cluster.alternate;
  Path field = path.field("alternate");
  return detail::checkField(alternate.backend != cluster.backend, field,
                            "backend",
                            "expected the other backend than the cluster's: "
                            "an alternate is a second transport") &&
         detail::checkField(!alternate.alternate, field, "alternate",
                            "an alternate has no alternate of its own") &&
         detail::checkField(alternate.ranks == cluster.ranks &&
                                alternate.ranksPerNode ==
                                    cluster.ranksPerNode &&
                                alternate.channels == cluster.channels &&
                                alternate.sharing == cluster.sharing,
                            path, "alternate",
                            "an alternate has its cluster's ranks, nodes and "
                            "channels");
}

/// Reports the first broken invariant of `cluster` below `path`.
static bool verifyCluster(const ClusterModel &cluster, Path path) {
  Path levels = path.field("levels");
  return verifyCounts(cluster, path) &&
         verifyLevel(cluster.intra, levels.field("intra")) &&
         verifyLevel(cluster.inter, levels.field("inter")) &&
         verifyAlternate(cluster, path) &&
         (!cluster.alternate ||
          verifyCluster(*cluster.alternate, path.field("alternate")));
}

llvm::Error ClusterModel::verify() const {
  Path::Root root("cluster");
  if (verifyCluster(*this, Path(root)))
    return llvm::Error::success();
  return root.getError();
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

namespace mlir::comm {
// Enum readers, found by argument-dependent lookup from json::ObjectMapper.

static bool fromJSON(const llvm::json::Value &value,
                     AllreduceAlgorithm &algorithm, Path path) {
  return detail::readEnum(value, algorithm, path, kAlgorithmSpellings,
                          "expected \"ring\", \"tree\" or \"hierarchical\"");
}

static bool fromJSON(const llvm::json::Value &value, ChannelSharing &sharing,
                     Path path) {
  return detail::readEnum(value, sharing, path, kSharingSpellings,
                          "expected \"shared\" or \"independent\"");
}

static bool fromJSON(const llvm::json::Value &value, CollectiveBackend &backend,
                     Path path) {
  return detail::readEnum(value, backend, path, kBackendSpellings,
                          "expected \"nccl\" or \"mpi\"");
}

/// Reads a `staging` section, found by json::ObjectMapper.
static bool fromJSON(const llvm::json::Value &value, DeviceStaging &staging,
                     Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  // A section given describes staging: its rate must be too.
  return mapper && mapper.map("copy_gbps", staging.copyGBps) &&
         mapper.mapOptional("launch_us", staging.launchUs) &&
         mapper.mapOptional("piece_bytes", staging.pieceBytes) &&
         detail::checkPositive(staging.copyGBps, path, "copy_gbps");
}
} // namespace mlir::comm

/// Reads the alpha and beta of a level or a regime at `path`: "alpha_us"
/// and exactly one of "beta_s_per_byte" and "bandwidth_gbps".
static bool readAlphaBeta(llvm::json::ObjectMapper &mapper, Path path,
                          double &alphaUs, double &betaUsPerByte) {
  std::optional<double> betaSeconds, gbps;
  if (!mapper.map("alpha_us", alphaUs) ||
      !mapper.map("beta_s_per_byte", betaSeconds) ||
      !mapper.map("bandwidth_gbps", gbps))
    return false;
  if (betaSeconds.has_value() == gbps.has_value()) {
    path.report("expected exactly one of beta_s_per_byte and bandwidth_gbps");
    return false;
  }
  if (gbps && !detail::checkPositive(*gbps, path, "bandwidth_gbps"))
    return false;
  betaUsPerByte = gbps ? LinkLevel::fromBandwidth(alphaUs, *gbps).betaUsPerByte
                       : *betaSeconds * kUsPerSecond;
  return true;
}

namespace mlir::comm {
/// Reads one regime of a level, found by json::ObjectMapper.
static bool fromJSON(const llvm::json::Value &value, SizeRegime &regime,
                     Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("up_to_bytes", regime.upToBytes) &&
         readAlphaBeta(mapper, path, regime.alphaUs, regime.betaUsPerByte);
}
} // namespace mlir::comm

/// Reads one level: its alpha and beta, and its optional "regimes".
static bool readLevel(const llvm::json::Value &value, LinkLevel &level,
                      Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  LinkLevel read;
  if (!mapper ||
      !readAlphaBeta(mapper, path, read.alphaUs, read.betaUsPerByte) ||
      !mapper.mapOptional("regimes", read.regimes))
    return false;
  level = std::move(read);
  return verifyLevel(level, path);
}

namespace {
/// The fields of a cluster that its alternate takes from it.
constexpr llvm::StringLiteral kClusterOnlyFields[] = {
    "format",   "version",         "ranks",    "ranks_per_node",
    "channels", "channel_sharing", "alternate"};
} // namespace

/// Reads a cluster description at `path` into `cluster`; with `outer`, the
/// `alternate` of `outer`, which has no header and takes the ranks, nodes
/// and channels of `outer`.
static bool readCluster(const llvm::json::Value &value, ClusterModel &cluster,
                        Path path, const ClusterModel *outer) {
  llvm::json::ObjectMapper mapper(value, path);
  if (!mapper)
    return false;
  ClusterModel result;
  int64_t channels = 1;
  double wireSecondsPerByte = 0;
  if (outer) {
    for (llvm::StringRef field : kClusterOnlyFields)
      if (!detail::checkField(!value.getAsObject()->get(field), path, field,
                              "is the cluster's: leave it out of the "
                              "alternate"))
        return false;
    result.ranks = outer->ranks;
    result.ranksPerNode = outer->ranksPerNode;
    result.sharing = outer->sharing;
    channels = outer->channels;
    if (!mapper.map("backend", result.backend))
      return false;
  } else if (!detail::readDescriptionHeader(mapper, path, kFormat,
                                            "expected \"commopt-cluster\"") ||
             !mapper.map("ranks", result.ranks) ||
             !mapper.map("ranks_per_node", result.ranksPerNode) ||
             !mapper.mapOptional("channels", channels) ||
             !mapper.mapOptional("channel_sharing", result.sharing) ||
             !mapper.mapOptional("backend", result.backend)) {
    return false;
  }
  if (!mapper.mapOptional("name", result.name) ||
      !mapper.mapOptional("source", result.source) ||
      !mapper.mapOptional("allreduce", result.algorithm) ||
      !mapper.mapOptional("wire_s_per_byte", wireSecondsPerByte) ||
      !mapper.mapOptional("collective_overhead_us",
                          result.collectiveOverheadUs) ||
      !mapper.mapOptional("staging", result.staging))
    return false;
  if (!verifyChannels(channels, path))
    return false;
  result.channels = static_cast<unsigned>(channels);
  result.wireUsPerByte = wireSecondsPerByte * kUsPerSecond;
  if (!verifyCounts(result, path))
    return false;

  // A level that the cluster never uses (intra with one rank per node, inter
  // with one node) may be left out; it then takes the other level's figures.
  Path levelsPath = path.field("levels");
  const llvm::json::Value *levelsValue = value.getAsObject()->get("levels");
  if (!levelsValue) {
    levelsPath.report("missing value");
    return false;
  }
  const llvm::json::Object *levels = levelsValue->getAsObject();
  if (!levels) {
    levelsPath.report("expected object");
    return false;
  }
  bool needIntra = result.ranksPerNode > 1;
  bool needInter = result.nodes() > 1;
  const llvm::json::Value *intra = levels->get("intra");
  const llvm::json::Value *inter = levels->get("inter");
  if ((needIntra || !inter) && !intra) {
    levelsPath.field("intra").report("missing value");
    return false;
  }
  if ((needInter || !intra) && !inter) {
    levelsPath.field("inter").report("missing value");
    return false;
  }
  if (intra && !readLevel(*intra, result.intra, levelsPath.field("intra")))
    return false;
  if (inter && !readLevel(*inter, result.inter, levelsPath.field("inter")))
    return false;
  if (!intra)
    result.intra = result.inter;
  if (!inter)
    result.inter = result.intra;
  if (const llvm::json::Value *alternate =
          value.getAsObject()->get("alternate");
      alternate && !outer) {
    auto read = std::make_shared<ClusterModel>();
    if (!readCluster(*alternate, *read, path.field("alternate"), &result))
      return false;
    result.alternate = std::move(read);
    if (!verifyAlternate(result, path))
      return false;
  }
  cluster = std::move(result);
  return true;
}

bool comm::fromJSON(const llvm::json::Value &value, ClusterModel &cluster,
                    Path path) {
  return readCluster(value, cluster, path, /*outer=*/nullptr);
}

llvm::Expected<ClusterModel> ClusterModel::fromJSON(llvm::StringRef text) {
  return detail::parseDescription<ClusterModel>(text, "cluster");
}

ClusterModel ClusterModel::forGroup(llvm::ArrayRef<int64_t> gridShape,
                                    llvm::ArrayRef<int64_t> axes) const {
  // A grid without processes has no groups (the dialect rejects one): all
  // ranks, as for a grid of unknown shape.
  if (llvm::any_of(gridShape, [](int64_t size) { return size <= 0; }))
    return *this;
  // Row-major strides of the grid.
  llvm::SmallVector<int64_t> strides(gridShape.size(), 1);
  for (size_t axis = gridShape.size(); axis-- > 1;)
    strides[axis - 1] = strides[axis] * gridShape[axis];
  // The group of rank 0; every other group is a translate of it.
  std::vector<int64_t> members = {0};
  for (int64_t axis : axes) {
    std::vector<int64_t> grown;
    grown.reserve(members.size() * gridShape[axis]);
    for (int64_t member : members)
      for (int64_t coordinate = 0; coordinate < gridShape[axis]; ++coordinate)
        grown.push_back(member + coordinate * strides[axis]);
    members = std::move(grown);
  }
  std::map<int64_t, int64_t> perNode;
  for (int64_t member : members)
    ++perNode[member / ranksPerNode];
  int64_t shared = perNode.begin()->second;
  for (const auto &[node, count] : perNode)
    if (count != shared)
      shared = 1;

  ClusterModel group = *this;
  group.ranks = static_cast<int64_t>(members.size());
  group.ranksPerNode = group.ranks % shared == 0 ? shared : 1;
  if (alternate)
    group.alternate =
        std::make_shared<ClusterModel>(alternate->forGroup(gridShape, axes));
  return group;
}

llvm::Expected<ClusterModel> ClusterModel::loadFile(llvm::StringRef path) {
  return detail::loadDescription<ClusterModel>(path, "cluster");
}

LinkLevel LinkLevel::forBytes(double bytes) const {
  for (const SizeRegime &regime : regimes)
    if (bytes <= regime.upToBytes)
      return LinkLevel{regime.alphaUs, regime.betaUsPerByte, {}};
  return LinkLevel{alphaUs, betaUsPerByte, {}};
}

ClusterModel ClusterModel::forBytes(double bytes) const {
  ClusterModel sized = *this;
  sized.intra = intra.forBytes(bytes);
  sized.inter = inter.forBytes(bytes);
  return sized;
}

llvm::json::Value ClusterModel::toJSON() const {
  auto level = [](const LinkLevel &l) {
    llvm::json::Object object{
        {"alpha_us", l.alphaUs},
        {"beta_s_per_byte", LinkLevel::secondsPerByte(l.betaUsPerByte)}};
    if (!l.regimes.empty()) {
      llvm::json::Array regimes;
      for (const SizeRegime &regime : l.regimes)
        regimes.push_back(llvm::json::Object{
            {"up_to_bytes", regime.upToBytes},
            {"alpha_us", regime.alphaUs},
            {"beta_s_per_byte",
             LinkLevel::secondsPerByte(regime.betaUsPerByte)}});
      object["regimes"] = std::move(regimes);
    }
    return object;
  };
  llvm::json::Object object{
      {"format", kFormat},
      {"version", kVersion},
      {"name", name},
      {"source", source},
      {"ranks", ranks},
      {"ranks_per_node", ranksPerNode},
      {"allreduce", stringifyAllreduceAlgorithm(algorithm)},
      {"channels", static_cast<int64_t>(channels)},
      {"channel_sharing", stringifyChannelSharing(sharing)},
      {"levels",
       llvm::json::Object{{"intra", level(intra)}, {"inter", level(inter)}}},
  };
  // Written where measured, so that other descriptions read as before.
  if (wireUsPerByte != 0)
    object["wire_s_per_byte"] = LinkLevel::secondsPerByte(wireUsPerByte);
  if (collectiveOverheadUs != 0)
    object["collective_overhead_us"] = collectiveOverheadUs;
  if (backend != CollectiveBackend::Nccl)
    object["backend"] = stringifyCollectiveBackend(backend);
  if (staging.isDescribed())
    object["staging"] = llvm::json::Object{{"copy_gbps", staging.copyGBps},
                                           {"launch_us", staging.launchUs},
                                           {"piece_bytes", staging.pieceBytes}};
  if (alternate) {
    llvm::json::Object second = std::move(*alternate->toJSON().getAsObject());
    for (llvm::StringRef field : kClusterOnlyFields)
      second.erase(field);
    // Written always: the alternate's backend is never the default's.
    second["backend"] = stringifyCollectiveBackend(alternate->backend);
    object["alternate"] = std::move(second);
  }
  return object;
}

bool ClusterModel::operator==(const ClusterModel &other) const {
  return name == other.name && source == other.source && ranks == other.ranks &&
         ranksPerNode == other.ranksPerNode && intra == other.intra &&
         inter == other.inter && algorithm == other.algorithm &&
         channels == other.channels && sharing == other.sharing &&
         wireUsPerByte == other.wireUsPerByte &&
         collectiveOverheadUs == other.collectiveOverheadUs &&
         backend == other.backend && staging == other.staging &&
         (alternate && other.alternate ? *alternate == *other.alternate
                                       : !alternate && !other.alternate);
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

namespace {
/// MG-WFBP's fitted time of a whole 16-worker allreduce, T(M) = a + b * M
/// (M in bytes), from the p_alpha_beta tables in MG-WFBP's
/// distributed_optimizer.py.
constexpr double kMgwfbpIb56AUs = 0.00023583677659915685 * kUsPerSecond;
constexpr double kMgwfbpIb56BSeconds = 4.0594787739537565e-10;
constexpr double kMgwfbp10GbeAUs = 0.0009080981007148093 * kUsPerSecond;
constexpr double kMgwfbp10GbeBSeconds = 7.395651186836712e-10;

/// The per-step alpha and beta of a ring allreduce over `p` ranks that
/// reproduce a fitted whole-allreduce time a + b * M exactly:
/// 2(p-1) alpha = a and 2(p-1)/p beta = b.
LinkLevel ringLevelFromFit(double aUs, double bSecondsPerByte, int64_t p) {
  double steps = 2.0 * static_cast<double>(p - 1);
  return LinkLevel{aUs / steps, LinkLevel::representableBeta(
                                    bSecondsPerByte * kUsPerSecond *
                                    static_cast<double>(p) / steps)};
}

/// Per-step latency of a 56 Gb/s InfiniBand ring, from MG-WFBP's fit.
LinkLevel ib56Measured() {
  return ringLevelFromFit(kMgwfbpIb56AUs, kMgwfbpIb56BSeconds, 16);
}

/// Estimated intra-node PCIe 3.0 x16 link: nominal 15.75 GB/s per direction
/// (126 Gbit/s); the 5 us per-step latency is an estimate.
LinkLevel pcie3Estimated() { return LinkLevel::fromBandwidth(5.0, 126.0); }

/// Estimated NVLink 2.0 link of a V100 in a DGX-1: 6 links x 25 GB/s per
/// direction = 150 GB/s (1200 Gbit/s), nominal; 2 us per-step latency is an
/// estimate.
LinkLevel nvlinkV100Estimated() {
  return LinkLevel::fromBandwidth(2.0, 1200.0);
}

/// 100 Gb/s InfiniBand: nominal bandwidth, the per-step latency of MG-WFBP's
/// 56 Gb fit.
LinkLevel ib100Estimated() {
  return LinkLevel::fromBandwidth(ib56Measured().alphaUs, 100.0);
}

/// A flat 16-rank ring that reproduces MG-WFBP's 10 GbE fit.
LinkLevel ethernet10Measured() {
  return ringLevelFromFit(kMgwfbp10GbeAUs, kMgwfbp10GbeBSeconds, 16);
}

/// One preset: its name and its figures. A level that the cluster never
/// uses (intra with one rank per node, inter with one node) repeats the
/// other, as a description that leaves it out reads.
struct ClusterPreset {
  llvm::StringLiteral name;
  llvm::StringLiteral source;
  int64_t ranks;
  int64_t ranksPerNode;
  LinkLevel (*intra)();
  LinkLevel (*inter)();
  AllreduceAlgorithm algorithm;
  unsigned channels;

  /// The model this preset describes.
  ClusterModel build() const {
    ClusterModel cluster;
    cluster.name = name.str();
    cluster.source = source.str();
    cluster.ranks = ranks;
    cluster.ranksPerNode = ranksPerNode;
    cluster.intra = intra();
    cluster.inter = inter();
    cluster.algorithm = algorithm;
    cluster.channels = channels;
    return cluster;
  }
};

constexpr ClusterPreset kPresets[] = {
    {"gradientflow-64",
     "GradientFlow's 64-GPU baseline (8 nodes x 8 GPUs, 56 Gb/s "
     "InfiniBand); inter-node figures from MG-WFBP's 56 Gb IB fit, "
     "intra-node PCIe 3.0 x16 estimated from nominal bandwidth",
     64, 8, pcie3Estimated, ib56Measured, AllreduceAlgorithm::Ring, 2},
    {"ib100-512",
     "512 GPUs (64 nodes x 8) on 100 Gb/s InfiniBand: inter-node "
     "bandwidth nominal 100 Gbit/s, per-step latency from MG-WFBP's "
     "56 Gb IB fit, intra-node NVLink 2.0 estimated from nominal "
     "bandwidth",
     512, 8, nvlinkV100Estimated, ib100Estimated,
     AllreduceAlgorithm::Hierarchical, 2},
    {"nvlink-8",
     "one 8-GPU V100 NVLink server (DGX-1 class), NVLink 2.0 "
     "estimated from nominal bandwidth",
     8, 8, nvlinkV100Estimated, nvlinkV100Estimated, AllreduceAlgorithm::Ring,
     2},
    {"ethernet10-16",
     "MG-WFBP's 16-worker 10 GbE allreduce fit (a = 0.908 ms, "
     "b = 7.40e-10 s/B), as a flat ring that reproduces it",
     16, 1, ethernet10Measured, ethernet10Measured, AllreduceAlgorithm::Ring,
     1},
    {"ib56-16",
     "MG-WFBP's 16-worker 56 Gb InfiniBand allreduce fit "
     "(a = 0.236 ms, b = 4.06e-10 s/B), as a flat ring that "
     "reproduces it",
     16, 1, ib56Measured, ib56Measured, AllreduceAlgorithm::Ring, 1},
};
} // namespace

llvm::ArrayRef<llvm::StringRef> ClusterModel::presetNames() {
  static const llvm::SmallVector<llvm::StringRef> names =
      detail::presetNamesOf(kPresets);
  return names;
}

llvm::Expected<ClusterModel> ClusterModel::preset(llvm::StringRef name) {
  return detail::buildPreset<ClusterModel>(kPresets, name, "cluster");
}

llvm::Expected<ClusterModel> ClusterModel::parse(llvm::StringRef nameOrPath) {
  return detail::parsePresetOrFile<ClusterModel>(nameOrPath, "cluster");
}
