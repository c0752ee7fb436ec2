//===- ClusterModel.cpp - Description of a training cluster ---------------===//
//
// JSON reading and writing, validation and the named presets of the cluster
// description. docs/CostModel.md gives the source of every preset figure.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"

#include "Description.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

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

llvm::StringRef
comm::stringifyAllreduceAlgorithm(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
  case AllreduceAlgorithm::Ring:
    return "ring";
  case AllreduceAlgorithm::Tree:
    return "tree";
  case AllreduceAlgorithm::Hierarchical:
    return "hierarchical";
  }
  llvm_unreachable("unknown allreduce algorithm");
}

std::optional<AllreduceAlgorithm>
comm::symbolizeAllreduceAlgorithm(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<AllreduceAlgorithm>>(text)
      .Case("ring", AllreduceAlgorithm::Ring)
      .Case("tree", AllreduceAlgorithm::Tree)
      .Case("hierarchical", AllreduceAlgorithm::Hierarchical)
      .Default(std::nullopt);
}

llvm::StringRef comm::stringifyChannelSharing(ChannelSharing sharing) {
  switch (sharing) {
  case ChannelSharing::Shared:
    return "shared";
  case ChannelSharing::Independent:
    return "independent";
  }
  llvm_unreachable("unknown channel sharing");
}

std::optional<ChannelSharing>
comm::symbolizeChannelSharing(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<ChannelSharing>>(text)
      .Case("shared", ChannelSharing::Shared)
      .Case("independent", ChannelSharing::Independent)
      .Default(std::nullopt);
}

LinkLevel LinkLevel::fromBandwidth(double alphaUs, double gigabitsPerSecond) {
  // 8 bits per byte; 1 Gbit/s moves 1e9 / 8 bytes per second.
  return LinkLevel{alphaUs, 8.0 * kUsPerSecond / (gigabitsPerSecond * 1e9)};
}

double LinkLevel::bandwidthGbps() const {
  return 8.0 * kUsPerSecond / (betaUsPerByte * 1e9);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Reports the first broken invariant of `level` below `path`.
static bool verifyLevel(const LinkLevel &level, Path path) {
  if (!std::isfinite(level.alphaUs) || level.alphaUs < 0) {
    path.field("alpha_us").report("expected a non-negative number");
    return false;
  }
  if (!std::isfinite(level.betaUsPerByte) || level.betaUsPerByte <= 0) {
    path.field("beta_s_per_byte").report("expected a positive number");
    return false;
  }
  return true;
}

/// Reports the first broken invariant among the rank and channel counts of
/// `cluster` below `path`. Field names are those of the JSON form.
static bool verifyCounts(const ClusterModel &cluster, Path path) {
  // MPI and NCCL count ranks in an int.
  if (cluster.ranks < 1 ||
      cluster.ranks > std::numeric_limits<int32_t>::max()) {
    path.field("ranks").report("expected a positive integer no larger than "
                               "2147483647");
    return false;
  }
  if (cluster.ranksPerNode < 1) {
    path.field("ranks_per_node").report("expected a positive integer");
    return false;
  }
  if (cluster.ranks % cluster.ranksPerNode != 0) {
    path.field("ranks_per_node").report("must divide ranks");
    return false;
  }
  if (cluster.channels < 1) {
    path.field("channels").report("expected a positive integer");
    return false;
  }
  if (cluster.channels > kMaxClusterChannels) {
    path.field("channels").report(kTooManyChannels);
    return false;
  }
  return true;
}

llvm::Error ClusterModel::verify() const {
  Path::Root root("cluster");
  Path path(root);
  Path levels = path.field("levels");
  if (verifyCounts(*this, path) && verifyLevel(intra, levels.field("intra")) &&
      verifyLevel(inter, levels.field("inter")))
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
  std::optional<llvm::StringRef> text = value.getAsString();
  std::optional<AllreduceAlgorithm> parsed =
      text ? symbolizeAllreduceAlgorithm(*text) : std::nullopt;
  if (!parsed) {
    path.report("expected \"ring\", \"tree\" or \"hierarchical\"");
    return false;
  }
  algorithm = *parsed;
  return true;
}

static bool fromJSON(const llvm::json::Value &value, ChannelSharing &sharing,
                     Path path) {
  std::optional<llvm::StringRef> text = value.getAsString();
  std::optional<ChannelSharing> parsed =
      text ? symbolizeChannelSharing(*text) : std::nullopt;
  if (!parsed) {
    path.report("expected \"shared\" or \"independent\"");
    return false;
  }
  sharing = *parsed;
  return true;
}
} // namespace mlir::comm

/// Reads one level: "alpha_us" and exactly one of "beta_s_per_byte" and
/// "bandwidth_gbps".
static bool readLevel(const llvm::json::Value &value, LinkLevel &level,
                      Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  double alphaUs = 0;
  std::optional<double> betaSeconds, gbps;
  if (!mapper || !mapper.map("alpha_us", alphaUs) ||
      !mapper.map("beta_s_per_byte", betaSeconds) ||
      !mapper.map("bandwidth_gbps", gbps))
    return false;
  if (betaSeconds.has_value() == gbps.has_value()) {
    path.report("expected exactly one of beta_s_per_byte and bandwidth_gbps");
    return false;
  }
  if (gbps && (!std::isfinite(*gbps) || *gbps <= 0)) {
    path.field("bandwidth_gbps").report("expected a positive number");
    return false;
  }
  level = gbps ? LinkLevel::fromBandwidth(alphaUs, *gbps)
               : LinkLevel{alphaUs, *betaSeconds * kUsPerSecond};
  return verifyLevel(level, path);
}

bool comm::fromJSON(const llvm::json::Value &value, ClusterModel &cluster,
                    Path path) {
  llvm::json::ObjectMapper mapper(value, path);
  if (!mapper)
    return false;
  ClusterModel result;
  int64_t channels = 1;
  if (!detail::readDescriptionHeader(mapper, path, kFormat,
                                     "expected \"commopt-cluster\""))
    return false;
  if (!mapper.mapOptional("name", result.name) ||
      !mapper.mapOptional("source", result.source) ||
      !mapper.map("ranks", result.ranks) ||
      !mapper.map("ranks_per_node", result.ranksPerNode) ||
      !mapper.mapOptional("allreduce", result.algorithm) ||
      !mapper.mapOptional("channels", channels) ||
      !mapper.mapOptional("channel_sharing", result.sharing))
    return false;
  if (channels < 1) {
    path.field("channels").report("expected a positive integer");
    return false;
  }
  if (channels > kMaxClusterChannels) {
    path.field("channels").report(kTooManyChannels);
    return false;
  }
  result.channels = static_cast<unsigned>(channels);
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
  cluster = std::move(result);
  return true;
}

llvm::Expected<ClusterModel> ClusterModel::fromJSON(llvm::StringRef text) {
  return detail::parseDescription<ClusterModel>(text, "cluster");
}

llvm::Expected<ClusterModel> ClusterModel::loadFile(llvm::StringRef path) {
  return detail::loadDescription<ClusterModel>(path, "cluster");
}

llvm::json::Value ClusterModel::toJSON() const {
  auto level = [](const LinkLevel &l) {
    return llvm::json::Object{
        {"alpha_us", l.alphaUs},
        {"beta_s_per_byte", l.betaUsPerByte / kUsPerSecond}};
  };
  return llvm::json::Object{
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
}

bool ClusterModel::operator==(const ClusterModel &other) const {
  return name == other.name && source == other.source && ranks == other.ranks &&
         ranksPerNode == other.ranksPerNode && intra == other.intra &&
         inter == other.inter && algorithm == other.algorithm &&
         channels == other.channels && sharing == other.sharing;
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
  return LinkLevel{aUs / steps, bSecondsPerByte * kUsPerSecond *
                                    static_cast<double>(p) / steps};
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

ClusterModel makeGradientFlow64() {
  ClusterModel c;
  c.name = "gradientflow-64";
  c.source = "GradientFlow's 64-GPU baseline (8 nodes x 8 GPUs, 56 Gb/s "
             "InfiniBand); inter-node figures from MG-WFBP's 56 Gb IB fit, "
             "intra-node PCIe 3.0 x16 estimated from nominal bandwidth";
  c.ranks = 64;
  c.ranksPerNode = 8;
  c.intra = pcie3Estimated();
  c.inter = ib56Measured();
  c.algorithm = AllreduceAlgorithm::Ring;
  c.channels = 2;
  return c;
}

ClusterModel makeIb100x512() {
  ClusterModel c;
  c.name = "ib100-512";
  c.source = "512 GPUs (64 nodes x 8) on 100 Gb/s InfiniBand: inter-node "
             "bandwidth nominal 100 Gbit/s, per-step latency from MG-WFBP's "
             "56 Gb IB fit, intra-node NVLink 2.0 estimated from nominal "
             "bandwidth";
  c.ranks = 512;
  c.ranksPerNode = 8;
  c.intra = nvlinkV100Estimated();
  c.inter = LinkLevel::fromBandwidth(ib56Measured().alphaUs, 100.0);
  c.algorithm = AllreduceAlgorithm::Hierarchical;
  c.channels = 2;
  return c;
}

ClusterModel makeNvlink8() {
  ClusterModel c;
  c.name = "nvlink-8";
  c.source = "one 8-GPU V100 NVLink server (DGX-1 class), NVLink 2.0 "
             "estimated from nominal bandwidth";
  c.ranks = 8;
  c.ranksPerNode = 8;
  c.intra = nvlinkV100Estimated();
  c.inter = c.intra;
  c.algorithm = AllreduceAlgorithm::Ring;
  c.channels = 2;
  return c;
}

ClusterModel makeEthernet10x16() {
  ClusterModel c;
  c.name = "ethernet10-16";
  c.source = "MG-WFBP's 16-worker 10 GbE allreduce fit (a = 0.908 ms, "
             "b = 7.40e-10 s/B), as a flat ring that reproduces it";
  c.ranks = 16;
  c.ranksPerNode = 1;
  c.inter = ringLevelFromFit(kMgwfbp10GbeAUs, kMgwfbp10GbeBSeconds, 16);
  c.intra = c.inter;
  c.algorithm = AllreduceAlgorithm::Ring;
  c.channels = 1;
  return c;
}

ClusterModel makeIb56x16() {
  ClusterModel c;
  c.name = "ib56-16";
  c.source = "MG-WFBP's 16-worker 56 Gb InfiniBand allreduce fit "
             "(a = 0.236 ms, b = 4.06e-10 s/B), as a flat ring that "
             "reproduces it";
  c.ranks = 16;
  c.ranksPerNode = 1;
  c.inter = ib56Measured();
  c.intra = c.inter;
  c.algorithm = AllreduceAlgorithm::Ring;
  c.channels = 1;
  return c;
}

/// One preset: its name and how to build it.
struct PresetEntry {
  llvm::StringRef name;
  ClusterModel (*make)();
};

constexpr PresetEntry kPresets[] = {
    {"gradientflow-64", makeGradientFlow64},
    {"ib100-512", makeIb100x512},
    {"nvlink-8", makeNvlink8},
    {"ethernet10-16", makeEthernet10x16},
    {"ib56-16", makeIb56x16},
};
} // namespace

llvm::ArrayRef<llvm::StringRef> ClusterModel::presetNames() {
  static const llvm::SmallVector<llvm::StringRef> names = [] {
    llvm::SmallVector<llvm::StringRef> result;
    for (const PresetEntry &entry : kPresets)
      result.push_back(entry.name);
    return result;
  }();
  return names;
}

llvm::Expected<ClusterModel> ClusterModel::preset(llvm::StringRef name) {
  for (const PresetEntry &entry : kPresets)
    if (entry.name == name)
      return entry.make();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(), "unknown cluster preset '%s' (known: %s)",
      name.str().c_str(), llvm::join(presetNames(), ", ").c_str());
}

llvm::Expected<ClusterModel> ClusterModel::parse(llvm::StringRef nameOrPath) {
  return detail::parsePresetOrFile<ClusterModel>(nameOrPath, "cluster");
}
