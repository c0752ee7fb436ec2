//===- PlanningClusterTest.cpp - The shared cluster cache -----------------===//
//
// Every pass of one comm-optimize run asks loadSharedCluster for its
// cluster: a description is parsed once, and again only when its file
// changes.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/PlanningCluster.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <thread>
#include <vector>

using namespace mlir::comm;

namespace {

/// A cluster description file with `ranks` ranks, removed at the end.
class ClusterFile {
public:
  ClusterFile() {
    llvm::SmallString<128> created;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("cluster", "json", created));
    path = std::string(created);
  }
  ~ClusterFile() { llvm::sys::fs::remove(path); }

  void write(int ranks) {
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    ASSERT_FALSE(error) << error.message();
    os << R"({"format": "commopt-cluster", "ranks": )" << ranks
       << R"(, "ranks_per_node": 1, "levels": {"intra": {"alpha_us": 1,
           "beta_s_per_byte": 1e-10}, "inter": {"alpha_us": 5,
           "beta_s_per_byte": 1e-9}}})";
  }

  std::string path;
};

TEST(LoadSharedClusterTest, PresetIsParsedOnce) {
  auto first = loadSharedCluster(kDefaultClusterName);
  auto second = loadSharedCluster(kDefaultClusterName);
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  ASSERT_TRUE(static_cast<bool>(second)) << llvm::toString(second.takeError());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ((*first)->name, kDefaultClusterName);
}

TEST(LoadSharedClusterTest, FileIsParsedAgainOnlyWhenItChanges) {
  ClusterFile file;
  file.write(8);
  auto first = loadSharedCluster(file.path);
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  EXPECT_EQ((*first)->ranks, 8);
  auto again = loadSharedCluster(file.path);
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(first->get(), again->get());

  file.write(16);
  auto changed = loadSharedCluster(file.path);
  ASSERT_TRUE(static_cast<bool>(changed));
  EXPECT_NE(first->get(), changed->get());
  EXPECT_EQ((*changed)->ranks, 16);
  // The earlier description stays valid for whoever holds it.
  EXPECT_EQ((*first)->ranks, 8);
}

TEST(LoadSharedClusterTest, ErrorsAreNotKept) {
  ClusterFile file;
  file.write(0);
  auto bad = loadSharedCluster(file.path);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("ranks"), std::string::npos);
  file.write(4);
  auto fixed = loadSharedCluster(file.path);
  ASSERT_TRUE(static_cast<bool>(fixed)) << llvm::toString(fixed.takeError());
  EXPECT_EQ((*fixed)->ranks, 4);

  auto missing = loadSharedCluster("no-such-cluster-preset-or-file");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_NE(
      llvm::toString(missing.takeError()).find("neither a cluster preset"),
      std::string::npos);
}

TEST(LoadSharedClusterTest, ThreadsShareOneDescription) {
  ClusterFile file;
  file.write(32);
  auto reference = loadSharedCluster(file.path);
  ASSERT_TRUE(static_cast<bool>(reference));
  std::vector<const ClusterModel *> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] {
      auto loaded = loadSharedCluster(file.path);
      if (loaded)
        seen[i] = loaded->get();
      else
        llvm::consumeError(loaded.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const ClusterModel *model : seen)
    EXPECT_EQ(model, reference->get());
}

} // namespace
