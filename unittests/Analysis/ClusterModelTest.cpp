//===- ClusterModelTest.cpp - Tests of the cluster description ------------===//
//
// Presets, JSON loading and its error messages, and the JSON round trip.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

using namespace mlir::comm;

namespace {

/// A valid two-level description: 16 ranks, 4 per node.
llvm::json::Object baseCluster() {
  return llvm::json::Object{
      {"format", "commopt-cluster"},
      {"version", 1},
      {"name", "test-16"},
      {"ranks", 16},
      {"ranks_per_node", 4},
      {"allreduce", "hierarchical"},
      {"channels", 3},
      {"channel_sharing", "independent"},
      {"backend", "mpi"},
      {"levels",
       llvm::json::Object{
           {"intra",
            llvm::json::Object{{"alpha_us", 2.0}, {"bandwidth_gbps", 100.0}}},
           {"inter", llvm::json::Object{{"alpha_us", 10.0},
                                        {"beta_s_per_byte", 1e-9}}}}}};
}

std::string print(llvm::json::Value value) {
  return llvm::formatv("{0}", value).str();
}

/// Parses `baseCluster()` changed by `edit`; returns the error text, or ""
/// when it parsed.
std::string errorAfter(const std::function<void(llvm::json::Object &)> &edit) {
  llvm::json::Object object = baseCluster();
  edit(object);
  llvm::Expected<ClusterModel> cluster =
      ClusterModel::fromJSON(print(std::move(object)));
  if (cluster)
    return "";
  return llvm::toString(cluster.takeError());
}

llvm::json::Object &level(llvm::json::Object &cluster, llvm::StringRef name) {
  return *cluster.getObject("levels")->getObject(name);
}

/// Writes `text` to a fresh temporary file and returns its path.
std::string writeTemporary(llvm::StringRef text) {
  llvm::SmallString<128> path;
  int fd;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("cluster", "json", fd, path));
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return path.str().str();
}

TEST(ClusterModel, PresetsAreValid) {
  ASSERT_EQ(ClusterModel::presetNames().size(), 5u);
  for (llvm::StringRef name : ClusterModel::presetNames()) {
    llvm::Expected<ClusterModel> cluster = ClusterModel::preset(name);
    ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
    EXPECT_EQ(cluster->name, name);
    EXPECT_FALSE(cluster->source.empty());
    EXPECT_EQ(llvm::toString(cluster->verify()), "");
  }
}

TEST(ClusterModel, PresetShapes) {
  ClusterModel gf = llvm::cantFail(ClusterModel::preset("gradientflow-64"));
  EXPECT_EQ(gf.ranks, 64);
  EXPECT_EQ(gf.ranksPerNode, 8);
  EXPECT_EQ(gf.nodes(), 8);
  EXPECT_EQ(&gf.flatLevel(), &gf.inter);

  ClusterModel nv = llvm::cantFail(ClusterModel::preset("nvlink-8"));
  EXPECT_EQ(nv.nodes(), 1);
  EXPECT_EQ(&nv.flatLevel(), &nv.intra);

  ClusterModel big = llvm::cantFail(ClusterModel::preset("ib100-512"));
  EXPECT_EQ(big.ranks, 512);
  EXPECT_EQ(big.ranksPerNode, 8);
  EXPECT_NEAR(big.inter.bandwidthGbps(), 100.0, 1e-9);

  // MG-WFBP's 56 Gb IB fit: a = 235.8368 us over 2(16-1) = 30 ring steps
  // gives 7.8612 us per step; b = 4.0595e-10 s/B over 2*15/16 = 1.875 gives
  // 2.1651e-10 s/B = 2.1651e-4 us/B.
  ClusterModel ib = llvm::cantFail(ClusterModel::preset("ib56-16"));
  EXPECT_NEAR(ib.inter.alphaUs, 235.83677659915685 / 30, 1e-12);
  EXPECT_NEAR(ib.inter.betaUsPerByte, 4.0594787739537565e-4 / 1.875, 1e-15);
}

TEST(ClusterModel, PresetsRoundTripThroughJSON) {
  for (llvm::StringRef name : ClusterModel::presetNames()) {
    ClusterModel cluster = llvm::cantFail(ClusterModel::preset(name));
    std::string text = print(cluster.toJSON());
    llvm::Expected<ClusterModel> back = ClusterModel::fromJSON(text);
    ASSERT_TRUE(bool(back))
        << name.str() << ": " << llvm::toString(back.takeError());
    EXPECT_EQ(back->name, cluster.name);
    EXPECT_EQ(back->source, cluster.source);
    EXPECT_EQ(back->ranks, cluster.ranks);
    EXPECT_EQ(back->ranksPerNode, cluster.ranksPerNode);
    EXPECT_EQ(back->algorithm, cluster.algorithm);
    EXPECT_EQ(back->channels, cluster.channels);
    EXPECT_EQ(back->sharing, cluster.sharing);
    // beta travels in s/B and is stored in us/B, and reads back exactly.
    EXPECT_EQ(back->intra.alphaUs, cluster.intra.alphaUs);
    EXPECT_EQ(back->intra.betaUsPerByte, cluster.intra.betaUsPerByte);
    EXPECT_EQ(back->inter.alphaUs, cluster.inter.alphaUs);
    EXPECT_EQ(back->inter.betaUsPerByte, cluster.inter.betaUsPerByte);
  }
}

/// `cluster` written by toJSON and read back.
ClusterModel roundTrip(const ClusterModel &cluster) {
  llvm::Expected<ClusterModel> back =
      ClusterModel::fromJSON(print(cluster.toJSON()));
  if (!back) {
    ADD_FAILURE() << llvm::toString(back.takeError());
    return ClusterModel();
  }
  return *back;
}

/// baseCluster() with the intra level given by `field` = `value`.
std::string clusterWithIntra(llvm::StringRef field, double value) {
  llvm::json::Object object = baseCluster();
  level(object, "intra") =
      llvm::json::Object{{"alpha_us", 2.0}, {field, value}};
  return print(std::move(object));
}

TEST(ClusterModel, BetaRoundTripsExactly) {
  // The model keeps beta in us/B, the file in s/B, and x / 1e6 * 1e6 is
  // one ulp off x for some x: 4.192 Gbit/s was one (commopt-cluster-fuzzer).
  std::vector<double> gbps = {4.192, 1.0,    10.0,   25.0,  56.0,  100.0,
                              126.0, 1200.0, 1e-300, 1e300, 0.001, 3.0};
  std::vector<double> seconds = {1e-9,
                                 6.6666666666666663e-12,
                                 1e-310,
                                 std::numeric_limits<double>::denorm_min(),
                                 std::numeric_limits<double>::min(),
                                 1e295,
                                 std::numeric_limits<double>::max() / 1e6};
  std::mt19937_64 random(20261125);
  std::uniform_real_distribution<double> mantissa(1.0, 10.0);
  std::uniform_int_distribution<int> exponent(-12, 6);
  std::uniform_int_distribution<uint64_t> bits(
      0x0010000000000000ull, 0x7fefffffffffffffull); // positive normals
  for (int i = 0; i < 4000; ++i) {
    double value = mantissa(random) * std::pow(10.0, exponent(random));
    gbps.push_back(value);
    seconds.push_back(value * 1e-9);
    double any;
    uint64_t word = bits(random);
    std::memcpy(&any, &word, sizeof(any));
    if (std::isfinite(any * 1e6))
      seconds.push_back(any);
    if (std::isfinite(1e-3 / any) && 1e-3 / any > 0)
      gbps.push_back(any);
  }
  size_t checked = 0;
  auto check = [&](llvm::StringRef field, double value) {
    llvm::Expected<ClusterModel> cluster =
        ClusterModel::fromJSON(clusterWithIntra(field, value));
    if (!cluster) {
      // Out of range (a beta that overflows, or rounds to 0).
      llvm::consumeError(cluster.takeError());
      return;
    }
    ++checked;
    double beta = cluster->intra.betaUsPerByte;
    EXPECT_EQ(LinkLevel::representableBeta(beta), beta)
        << field.str() << " " << llvm::formatv("{0:e17}", value).str();
    EXPECT_EQ(LinkLevel::secondsPerByte(beta) * 1e6, beta)
        << field.str() << " " << llvm::formatv("{0:e17}", value).str();
    ClusterModel back = roundTrip(*cluster);
    EXPECT_EQ(back.intra.betaUsPerByte, beta)
        << field.str() << " " << llvm::formatv("{0:e17}", value).str();
    EXPECT_TRUE(back == *cluster)
        << field.str() << " " << llvm::formatv("{0:e17}", value).str();
  };
  for (double value : gbps)
    check("bandwidth_gbps", value);
  for (double value : seconds)
    check("beta_s_per_byte", value);
  EXPECT_GT(checked, 8000u);

  // A file's beta_s_per_byte is kept as read, times 1e6.
  llvm::Expected<ClusterModel> exact =
      ClusterModel::fromJSON(clusterWithIntra("beta_s_per_byte", 1e-9));
  ASSERT_TRUE(bool(exact)) << llvm::toString(exact.takeError());
  EXPECT_EQ(exact->intra.betaUsPerByte, 1e-9 * 1e6);
}

TEST(ClusterModel, RepresentableBetaIsNearAndStable) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<uint64_t> bits(0x0010000000000000ull,
                                               0x7fefffffffffffffull);
  for (int i = 0; i < 10000; ++i) {
    uint64_t word = bits(random);
    double beta;
    std::memcpy(&beta, &word, sizeof(beta));
    double representable = LinkLevel::representableBeta(beta);
    if (beta / 1e6 < std::numeric_limits<double>::min())
      continue; // subnormal seconds per byte keep fewer digits
    EXPECT_LE(std::abs(representable - beta), 4e-16 * beta) << beta;
    EXPECT_EQ(LinkLevel::representableBeta(representable), representable);
    EXPECT_EQ(LinkLevel::secondsPerByte(representable) * 1e6, representable);
  }
}

TEST(ClusterModel, PresetBetasRoundTripExactly) {
  for (llvm::StringRef name : ClusterModel::presetNames()) {
    ClusterModel cluster = llvm::cantFail(ClusterModel::preset(name));
    EXPECT_TRUE(roundTrip(cluster) == cluster) << name.str();
  }
}

TEST(ClusterModel, LoadsGoodFile) {
  std::string path = writeTemporary(print(baseCluster()));
  llvm::Expected<ClusterModel> cluster = ClusterModel::loadFile(path);
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  EXPECT_EQ(cluster->name, "test-16");
  EXPECT_EQ(cluster->ranks, 16);
  EXPECT_EQ(cluster->ranksPerNode, 4);
  EXPECT_EQ(cluster->algorithm, AllreduceAlgorithm::Hierarchical);
  EXPECT_EQ(cluster->channels, 3u);
  EXPECT_EQ(cluster->sharing, ChannelSharing::Independent);
  EXPECT_EQ(cluster->backend, CollectiveBackend::Mpi);
  EXPECT_EQ(cluster->intra.alphaUs, 2.0);
  // 100 Gbit/s = 12.5e9 B/s: 1 / 12.5e9 s/B = 8e-11 s/B = 8e-5 us/B.
  EXPECT_NEAR(cluster->intra.betaUsPerByte, 8e-5, 1e-18);
  EXPECT_EQ(cluster->inter.alphaUs, 10.0);
  // 1e-9 s/B = 1e-3 us/B.
  EXPECT_NEAR(cluster->inter.betaUsPerByte, 1e-3, 1e-18);

  // parse() takes the same path.
  llvm::Expected<ClusterModel> parsed = ClusterModel::parse(path);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(*parsed, *cluster);
  llvm::sys::fs::remove(path);
}

TEST(ClusterModel, DefaultsAndOptionalLevels) {
  // One node: the inter level may be left out, and takes intra's figures.
  llvm::Expected<ClusterModel> cluster = ClusterModel::fromJSON(R"({
    "ranks": 8, "ranks_per_node": 8,
    "levels": {"intra": {"alpha_us": 1, "bandwidth_gbps": 800}}})");
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  EXPECT_EQ(cluster->algorithm, AllreduceAlgorithm::Ring);
  EXPECT_EQ(cluster->channels, 1u);
  EXPECT_EQ(cluster->sharing, ChannelSharing::Shared);
  EXPECT_EQ(cluster->backend, CollectiveBackend::Nccl);
  EXPECT_EQ(cluster->inter, cluster->intra);
  // The default backend is left out of the JSON form, another is written.
  EXPECT_EQ(print(cluster->toJSON()).find("backend"), std::string::npos);
  ClusterModel onMpi = *cluster;
  onMpi.backend = CollectiveBackend::Mpi;
  EXPECT_FALSE(onMpi == *cluster);
  llvm::Expected<ClusterModel> reloaded =
      ClusterModel::fromJSON(print(onMpi.toJSON()));
  ASSERT_TRUE(bool(reloaded)) << llvm::toString(reloaded.takeError());
  EXPECT_EQ(*reloaded, onMpi);
}

TEST(ClusterModel, ParseNamesPresetOrFile) {
  llvm::Expected<ClusterModel> cluster = ClusterModel::parse("nvlink-8");
  ASSERT_TRUE(bool(cluster)) << llvm::toString(cluster.takeError());
  EXPECT_EQ(cluster->name, "nvlink-8");

  std::string unknown = llvm::toString(ClusterModel::parse("nope").takeError());
  EXPECT_NE(unknown.find("'nope'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("gradientflow-64"), std::string::npos) << unknown;

  std::string preset = llvm::toString(ClusterModel::preset("nope").takeError());
  EXPECT_NE(preset.find("unknown cluster preset 'nope'"), std::string::npos)
      << preset;
}

TEST(ClusterModel, MissingFileNamesPath) {
  std::string error = llvm::toString(
      ClusterModel::loadFile("/nonexistent/cluster.json").takeError());
  EXPECT_NE(error.find("/nonexistent/cluster.json"), std::string::npos)
      << error;
}

TEST(ClusterModel, SyntaxError) {
  std::string error =
      llvm::toString(ClusterModel::fromJSON("{\"ranks\": ").takeError());
  EXPECT_NE(error.find("invalid cluster description"), std::string::npos)
      << error;
}

/// Every bad field gives an error that names it.
TEST(ClusterModel, BadFieldsAreNamed) {
  struct Case {
    std::function<void(llvm::json::Object &)> edit;
    const char *expected;
  };
  Case cases[] = {
      {[](llvm::json::Object &o) { o["ranks"] = 0; },
       "expected a positive integer no larger than 2147483647 at "
       "cluster.ranks"},
      {[](llvm::json::Object &o) {
         o["ranks"] = std::numeric_limits<int64_t>::max();
         o["ranks_per_node"] = 1;
       },
       "expected a positive integer no larger than 2147483647 at "
       "cluster.ranks"},
      {[](llvm::json::Object &o) { o["ranks"] = "many"; },
       "expected integer at cluster.ranks"},
      {[](llvm::json::Object &o) { o.erase("ranks"); },
       "missing value at cluster.ranks"},
      {[](llvm::json::Object &o) { o["ranks_per_node"] = 3; },
       "must divide ranks at cluster.ranks_per_node"},
      {[](llvm::json::Object &o) { o["ranks_per_node"] = -4; },
       "expected a positive integer at cluster.ranks_per_node"},
      {[](llvm::json::Object &o) { o["channels"] = 0; },
       "expected a positive integer at cluster.channels"},
      {[](llvm::json::Object &o) { o["wire_s_per_byte"] = -1e-9; },
       "expected a non-negative number at cluster.wire_s_per_byte"},
      {[](llvm::json::Object &o) { o["wire_s_per_byte"] = "slow"; },
       "expected number at cluster.wire_s_per_byte"},
      {[](llvm::json::Object &o) { o["allreduce"] = "butterfly"; },
       "at cluster.allreduce"},
      {[](llvm::json::Object &o) { o["channel_sharing"] = "fair"; },
       "at cluster.channel_sharing"},
      {[](llvm::json::Object &o) { o["backend"] = "gloo"; },
       "expected \"nccl\" or \"mpi\" at cluster.backend"},
      {[](llvm::json::Object &o) {
         o["staging"] = llvm::json::Object{{"copy_gbps", 0.0}};
       },
       "expected a positive number at cluster.staging.copy_gbps"},
      {[](llvm::json::Object &o) {
         o["staging"] = llvm::json::Object{{"launch_us", 5.0}};
       },
       "missing value at cluster.staging.copy_gbps"},
      {[](llvm::json::Object &o) {
         o["staging"] =
             llvm::json::Object{{"copy_gbps", 20.0}, {"launch_us", -1.0}};
       },
       "expected a non-negative number at cluster.staging.launch_us"},
      {[](llvm::json::Object &o) {
         o["staging"] =
             llvm::json::Object{{"copy_gbps", 20.0}, {"piece_bytes", 0.0}};
       },
       "expected a positive number at cluster.staging.piece_bytes"},
      {[](llvm::json::Object &o) {
         o["backend"] = "nccl";
         o["staging"] = llvm::json::Object{{"copy_gbps", 20.0}};
       },
       "device buffers are staged by the MPI backend only: set "
       "\"backend\": \"mpi\" at cluster.staging"},
      {[](llvm::json::Object &o) { o["format"] = "other"; },
       "at cluster.format"},
      {[](llvm::json::Object &o) { o["version"] = 2; }, "at cluster.version"},
      {[](llvm::json::Object &o) { o.erase("levels"); },
       "missing value at cluster.levels"},
      {[](llvm::json::Object &o) { o.getObject("levels")->erase("inter"); },
       "missing value at cluster.levels.inter"},
      {[](llvm::json::Object &o) { o.getObject("levels")->erase("intra"); },
       "missing value at cluster.levels.intra"},
      {[](llvm::json::Object &o) { level(o, "inter")["alpha_us"] = -1.0; },
       "expected a non-negative number at cluster.levels.inter.alpha_us"},
      {[](llvm::json::Object &o) { level(o, "inter").erase("alpha_us"); },
       "missing value at cluster.levels.inter.alpha_us"},
      {[](llvm::json::Object &o) {
         level(o, "inter")["beta_s_per_byte"] = 0.0;
       },
       "expected a positive number at cluster.levels.inter.beta_s_per_byte"},
      {[](llvm::json::Object &o) {
         level(o, "intra")["bandwidth_gbps"] = -5.0;
       },
       "expected a positive number at cluster.levels.intra.bandwidth_gbps"},
      {[](llvm::json::Object &o) {
         level(o, "intra")["beta_s_per_byte"] = 1e-10;
       },
       "exactly one of beta_s_per_byte and bandwidth_gbps at "
       "cluster.levels.intra"},
      {[](llvm::json::Object &o) {
         level(o, "inter").erase("beta_s_per_byte");
       },
       "exactly one of beta_s_per_byte and bandwidth_gbps at "
       "cluster.levels.inter"},
  };
  EXPECT_EQ(errorAfter([](llvm::json::Object &) {}), "");
  for (const Case &c : cases) {
    std::string error = errorAfter(c.edit);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << error << "'";
  }
}

/// Two regimes below the inter level's own figures: up to 64 KiB and up to
/// 1 MiB.
llvm::json::Array twoRegimes() {
  return llvm::json::Array{llvm::json::Object{{"up_to_bytes", 65536.0},
                                              {"alpha_us", 40.0},
                                              {"beta_s_per_byte", 4e-9}},
                           llvm::json::Object{{"up_to_bytes", 1048576.0},
                                              {"alpha_us", 25.0},
                                              {"bandwidth_gbps", 2.0}}};
}

TEST(ClusterModel, StagingRoundTripsAndDefaultsToNone) {
  llvm::Expected<ClusterModel> plain =
      ClusterModel::fromJSON(print(baseCluster()));
  ASSERT_TRUE(static_cast<bool>(plain)) << llvm::toString(plain.takeError());
  EXPECT_FALSE(plain->staging.isDescribed());
  EXPECT_EQ(print(plain->toJSON()).find("staging"), std::string::npos);

  llvm::json::Object object = baseCluster();
  object["staging"] =
      llvm::json::Object{{"copy_gbps", 24.5}, {"launch_us", 6.0}};
  llvm::Expected<ClusterModel> staged =
      ClusterModel::fromJSON(print(std::move(object)));
  ASSERT_TRUE(static_cast<bool>(staged)) << llvm::toString(staged.takeError());
  EXPECT_EQ(staged->staging.copyGBps, 24.5);
  EXPECT_EQ(staged->staging.launchUs, 6.0);
  EXPECT_EQ(staged->staging.pieceBytes, double(1 << 20));
  llvm::Expected<ClusterModel> again =
      ClusterModel::fromJSON(print(staged->toJSON()));
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(*again, *staged);
  EXPECT_FALSE(*again == *plain);
}

/// `baseCluster()` (MPI) with an NCCL alternate of its own links.
llvm::json::Object clusterWithAlternate() {
  llvm::json::Object object = baseCluster();
  object["alternate"] = llvm::json::Object{
      {"backend", "nccl"},
      {"allreduce", "ring"},
      {"source", "measured apart"},
      {"collective_overhead_us", 12.0},
      {"levels",
       llvm::json::Object{
           {"intra",
            llvm::json::Object{{"alpha_us", 20.0}, {"bandwidth_gbps", 800.0}}},
           {"inter", llvm::json::Object{{"alpha_us", 30.0},
                                        {"beta_s_per_byte", 1e-10}}}}}};
  return object;
}

TEST(ClusterModel, AlternateTakesTheClustersRanksAndRoundTrips) {
  llvm::Expected<ClusterModel> cluster =
      ClusterModel::fromJSON(print(clusterWithAlternate()));
  ASSERT_TRUE(static_cast<bool>(cluster))
      << llvm::toString(cluster.takeError());
  ASSERT_TRUE(cluster->alternate);
  const ClusterModel &nccl = *cluster->alternate;
  EXPECT_EQ(nccl.backend, CollectiveBackend::Nccl);
  EXPECT_EQ(nccl.ranks, 16);
  EXPECT_EQ(nccl.ranksPerNode, 4);
  EXPECT_EQ(nccl.channels, 3u);
  EXPECT_EQ(nccl.sharing, ChannelSharing::Independent);
  EXPECT_EQ(nccl.algorithm, AllreduceAlgorithm::Ring);
  EXPECT_EQ(nccl.inter.alphaUs, 30.0);
  EXPECT_EQ(nccl.collectiveOverheadUs, 12.0);
  EXPECT_FALSE(nccl.alternate);
  EXPECT_EQ(cluster->onTransport(CollectiveBackend::Mpi), &*cluster);
  EXPECT_EQ(cluster->onTransport(CollectiveBackend::Nccl), &nccl);
  EXPECT_EQ(nccl.onTransport(CollectiveBackend::Mpi), nullptr);
  EXPECT_EQ(llvm::toString(cluster->verify()), "");

  std::string printed = print(cluster->toJSON());
  llvm::Expected<ClusterModel> again = ClusterModel::fromJSON(printed);
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(*again, *cluster);
  ClusterModel other = *cluster;
  auto changed = std::make_shared<ClusterModel>(nccl);
  changed->inter.alphaUs = 31.0;
  other.alternate = changed;
  EXPECT_FALSE(other == *cluster);
  other.alternate = nullptr;
  EXPECT_FALSE(other == *cluster);

  // A group's alternate is the alternate's group: a row of a 4x4 grid stays
  // in one node on both transports.
  ClusterModel row = cluster->forGroup({4, 4}, {1});
  ASSERT_TRUE(row.alternate);
  EXPECT_EQ(row.ranks, 4);
  EXPECT_EQ(row.alternate->ranks, 4);
  EXPECT_EQ(row.alternate->ranksPerNode, 4);
  EXPECT_EQ(row.alternate->inter.alphaUs, 30.0);
}

TEST(ClusterModel, BadAlternatesAreNamed) {
  struct Case {
    std::function<void(llvm::json::Object &)> edit;
    const char *expected;
  };
  auto alternate = [](llvm::json::Object &o) -> llvm::json::Object & {
    return *o.getObject("alternate");
  };
  Case cases[] = {
      {[&](llvm::json::Object &o) { alternate(o)["backend"] = "mpi"; },
       "expected the other backend than the cluster's: an alternate is a "
       "second transport at cluster.alternate.backend"},
      {[&](llvm::json::Object &o) { alternate(o).erase("backend"); },
       "missing value at cluster.alternate.backend"},
      {[&](llvm::json::Object &o) { alternate(o)["ranks"] = 16; },
       "is the cluster's: leave it out of the alternate at "
       "cluster.alternate.ranks"},
      {[&](llvm::json::Object &o) { alternate(o)["channels"] = 2; },
       "at cluster.alternate.channels"},
      {[&](llvm::json::Object &o) {
         alternate(o)["alternate"] = llvm::json::Object{};
       },
       "at cluster.alternate.alternate"},
      {[&](llvm::json::Object &o) { alternate(o)["format"] = "x"; },
       "at cluster.alternate.format"},
      {[&](llvm::json::Object &o) {
         alternate(o).getObject("levels")->getObject("inter")->erase(
             "alpha_us");
       },
       "missing value at cluster.alternate.levels.inter.alpha_us"},
      {[&](llvm::json::Object &o) {
         alternate(o)["staging"] = llvm::json::Object{{"copy_gbps", 20.0}};
       },
       "device buffers are staged by the MPI backend only: set "
       "\"backend\": \"mpi\" at cluster.alternate.staging"},
      {[&](llvm::json::Object &o) { o["alternate"] = 3; },
       "expected object at cluster.alternate"},
  };
  EXPECT_EQ(
      errorAfter([](llvm::json::Object &o) { o = clusterWithAlternate(); }),
      "");
  for (const Case &c : cases) {
    std::string error = errorAfter([&](llvm::json::Object &o) {
      o = clusterWithAlternate();
      c.edit(o);
    });
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << error << "'";
  }

  // verify() checks a model built in code as the reader does.
  ClusterModel cluster = llvm::cantFail(ClusterModel::preset("nvlink-8"));
  ClusterModel same = cluster;
  cluster.alternate = std::make_shared<ClusterModel>(same);
  std::string error = llvm::toString(cluster.verify());
  EXPECT_NE(error.find("cluster.alternate.backend"), std::string::npos)
      << error;
  same.backend = CollectiveBackend::Mpi;
  same.ranks = 16;
  cluster.alternate = std::make_shared<ClusterModel>(same);
  error = llvm::toString(cluster.verify());
  EXPECT_NE(error.find("its cluster's ranks, nodes and channels at "
                       "cluster.alternate"),
            std::string::npos)
      << error;
}

TEST(ClusterModel, RegimesPriceEachSize) {
  llvm::json::Object object = baseCluster();
  level(object, "inter")["regimes"] = twoRegimes();
  llvm::Expected<ClusterModel> cluster =
      ClusterModel::fromJSON(print(std::move(object)));
  ASSERT_TRUE(static_cast<bool>(cluster))
      << llvm::toString(cluster.takeError());
  ASSERT_EQ(cluster->inter.regimes.size(), 2u);
  EXPECT_TRUE(cluster->intra.regimes.empty());
  EXPECT_TRUE(cluster->hasRegimes());
  // Up to 64 KiB inclusive, the first regime; then the second up to 1 MiB;
  // above, the level's own figures (10 us, 1e-9 s/B).
  LinkLevel small = cluster->inter.forBytes(65536);
  EXPECT_EQ(small.alphaUs, 40.0);
  EXPECT_DOUBLE_EQ(small.betaUsPerByte, 4e-3);
  EXPECT_TRUE(small.regimes.empty());
  LinkLevel medium = cluster->inter.forBytes(65537);
  EXPECT_EQ(medium.alphaUs, 25.0);
  EXPECT_DOUBLE_EQ(medium.bandwidthGbps(), 2.0);
  LinkLevel large = cluster->inter.forBytes(1048577);
  EXPECT_EQ(large.alphaUs, 10.0);
  EXPECT_DOUBLE_EQ(large.betaUsPerByte, 1e-3);
  // The whole cluster for one size: both levels resolved, nothing else
  // changed.
  ClusterModel sized = cluster->forBytes(4096);
  EXPECT_FALSE(sized.hasRegimes());
  EXPECT_EQ(sized.inter.alphaUs, 40.0);
  EXPECT_EQ(sized.intra, cluster->intra);
  EXPECT_EQ(sized.ranks, cluster->ranks);
  // They read back equal.
  llvm::Expected<ClusterModel> reread =
      ClusterModel::fromJSON(print(cluster->toJSON()));
  ASSERT_TRUE(static_cast<bool>(reread)) << llvm::toString(reread.takeError());
  EXPECT_EQ(*reread, *cluster);
}

TEST(ClusterModel, BadRegimesAreNamed) {
  struct Case {
    std::function<void(llvm::json::Array &)> edit;
    const char *expected;
  };
  Case cases[] = {
      {[](llvm::json::Array &a) {
         (*a[1].getAsObject())["up_to_bytes"] = 100.0;
       },
       "expected sizes in increasing order at "
       "cluster.levels.inter.regimes[1].up_to_bytes"},
      {[](llvm::json::Array &a) { (*a[0].getAsObject())["up_to_bytes"] = 0.0; },
       "expected a positive number at "
       "cluster.levels.inter.regimes[0].up_to_bytes"},
      {[](llvm::json::Array &a) { a[0].getAsObject()->erase("up_to_bytes"); },
       "missing value at cluster.levels.inter.regimes[0].up_to_bytes"},
      {[](llvm::json::Array &a) { (*a[0].getAsObject())["alpha_us"] = -1.0; },
       "expected a non-negative number at "
       "cluster.levels.inter.regimes[0].alpha_us"},
      {[](llvm::json::Array &a) {
         a[0].getAsObject()->erase("beta_s_per_byte");
       },
       "exactly one of beta_s_per_byte and bandwidth_gbps at "
       "cluster.levels.inter.regimes[0]"},
      {[](llvm::json::Array &a) { a[1] = "fast"; },
       "expected object at cluster.levels.inter.regimes[1]"},
  };
  for (const Case &c : cases) {
    std::string error = errorAfter([&](llvm::json::Object &o) {
      llvm::json::Array regimes = twoRegimes();
      c.edit(regimes);
      level(o, "inter")["regimes"] = std::move(regimes);
    });
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in '" << error << "'";
  }
  EXPECT_NE(errorAfter([](llvm::json::Object &o) {
              level(o, "inter")["regimes"] = "none";
            }).find("expected array at cluster.levels.inter.regimes"),
            std::string::npos);
}

TEST(ClusterModel, VerifyNamesField) {
  ClusterModel cluster = llvm::cantFail(ClusterModel::preset("nvlink-8"));
  EXPECT_EQ(llvm::toString(cluster.verify()), "");
  cluster.ranksPerNode = 3;
  std::string error = llvm::toString(cluster.verify());
  EXPECT_NE(error.find("cluster.ranks_per_node"), std::string::npos) << error;
  cluster.ranksPerNode = 8;
  cluster.inter.betaUsPerByte = 0;
  error = llvm::toString(cluster.verify());
  EXPECT_NE(error.find("cluster.levels.inter.beta_s_per_byte"),
            std::string::npos)
      << error;
}

TEST(ClusterModel, EnumSpellings) {
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::Ring, AllreduceAlgorithm::Tree,
        AllreduceAlgorithm::Hierarchical})
    EXPECT_EQ(
        symbolizeAllreduceAlgorithm(stringifyAllreduceAlgorithm(algorithm)),
        algorithm);
  for (ChannelSharing sharing :
       {ChannelSharing::Shared, ChannelSharing::Independent})
    EXPECT_EQ(symbolizeChannelSharing(stringifyChannelSharing(sharing)),
              sharing);
  EXPECT_FALSE(symbolizeAllreduceAlgorithm("butterfly"));
}

} // namespace
