//===- commopt-cluster-fuzzer.cpp - Fuzzes the cluster description reader -===//
//
// libFuzzer target of the cluster description reader
// (ClusterModel::fromJSON in lib/Analysis/ClusterModel.cpp, docs/Cluster.md):
// each input is the text of a cluster description, as a `cluster=` option's
// file holds it. A description that reads must also pass verify(), read back
// equal from the JSON that toJSON() writes for it (plans and reports embed
// that JSON), and price every collective and simulate a small step, one
// step and the steady state, on its channels, as the passes do. A broken
// promise aborts; errors from bad descriptions are expected.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/TimelineSimulator.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::comm;

/// Message sizes from nothing to the largest a collective may hold.
static constexpr double kBytes[] = {0.0, 1.0, 4096.0, 0x1p20, 0x1p30, 0x1p62};

/// Prices every collective of `cluster` at every size in kBytes.
static void priceCollectives(const ClusterModel &cluster) {
  for (double bytes : kBytes) {
    for (AllreduceAlgorithm algorithm :
         {AllreduceAlgorithm::Ring, AllreduceAlgorithm::Tree,
          AllreduceAlgorithm::Hierarchical})
      (void)allreduceCost(cluster, bytes, algorithm);
    (void)reduceScatterCost(cluster, bytes);
    (void)allgatherCost(cluster, bytes);
    (void)allToAllCost(cluster, bytes);
    (void)broadcastCost(cluster, bytes);
    SparseGradient gradient;
    gradient.denseElements = static_cast<int64_t>(bytes / 4);
    gradient.density = 0.001;
    for (SparseExchangeScheme scheme :
         {SparseExchangeScheme::Allgather, SparseExchangeScheme::Hash,
          SparseExchangeScheme::Chunk})
      (void)sparseAllreduceCost(cluster, scheme, gradient);
  }
}

/// A two-layer step whose gradients are reduced on the first and the last
/// channel of `cluster`, simulated once and in steady state.
static void simulate(const ClusterModel &cluster) {
  StepDescription step;
  step.computeTasks = {{100.0, "forward 0", TaskPhase::Forward, 0},
                       {100.0, "forward 1", TaskPhase::Forward, 1},
                       {200.0, "backward 1", TaskPhase::Backward, 1},
                       {200.0, "backward 0", TaskPhase::Backward, 0},
                       {10.0, "update", TaskPhase::Other, -1}};
  CollectiveTask first;
  first.label = "grad 1";
  first.cost = allreduceCost(cluster, 0x1p20);
  first.issuedAfter = 2;
  first.channel = 0;
  first.layers = {1};
  CollectiveTask last = first;
  last.label = "grad 0";
  last.cost = allreduceCost(cluster, 0x1p26);
  last.issuedAfter = 3;
  last.waitBefore = 4;
  last.channel = cluster.channels - 1;
  last.priority = 0;
  last.layers = {0};
  step.collectives = {first, last};
  SimulationOptions options = SimulationOptions::fromCluster(cluster);
  llvm::consumeError(simulateStep(step, options).takeError());
  llvm::consumeError(simulateSteadyState(step, options).takeError());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<ClusterModel> cluster = ClusterModel::fromJSON(text);
  if (!cluster) {
    llvm::consumeError(cluster.takeError());
    return 0;
  }
  if (llvm::Error error = cluster->verify())
    llvm::report_fatal_error(
        llvm::Twine("a cluster that reads does not verify: ") +
        llvm::toString(std::move(error)));

  std::string printed;
  llvm::raw_string_ostream(printed) << cluster->toJSON();
  llvm::Expected<ClusterModel> again = ClusterModel::fromJSON(printed);
  if (!again)
    llvm::report_fatal_error(
        llvm::Twine("toJSON wrote a cluster that does not read: ") +
        llvm::toString(again.takeError()) + "\n" + printed);
  if (!(*again == *cluster))
    llvm::report_fatal_error(llvm::Twine("toJSON wrote another cluster: ") +
                             printed);

  priceCollectives(*cluster);
  simulate(*cluster);
  return 0;
}
