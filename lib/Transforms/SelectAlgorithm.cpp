//===- SelectAlgorithm.cpp - Choose the allreduce algorithm per collective ===//
//
// Implements `comm-select-algorithm`: every dense collective gets the
// allreduce algorithm (flat ring, tree or hierarchical) that the cost model
// prices lowest for its bytes on the cluster it runs on (its process
// group's, for a grouped collective), or the one the `algorithm` option
// forces. The lowering passes it to the runtime; the step model prices with
// it.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMSELECTALGORITHM
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// "N node(s) of M rank(s)", for diagnostics.
std::string describeLayout(const ClusterModel &cluster) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << cluster.nodes() << (cluster.nodes() == 1 ? " node" : " nodes") << " of "
     << cluster.ranksPerNode
     << (cluster.ranksPerNode == 1 ? " rank" : " ranks");
  return text;
}

struct CommSelectAlgorithmPass
    : public WithCheckedOptions<
          comm::impl::CommSelectAlgorithmBase<CommSelectAlgorithmPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  void runOnOperation() final {
    func::FuncOp func = getOperation();
    PlanningCluster target =
        resolvePlanningCluster(func, cluster, "comm-select-algorithm");
    llvm::Expected<const ClusterModel &> model = clusters.get(target);
    if (!model) {
      func.emitError() << "comm-select-algorithm: "
                       << llvm::toString(model.takeError());
      return signalPassFailure();
    }
    CollectiveClusters pricing(*model);
    bool failed = false;
    func->walk([&](CollectiveOpInterface op) {
      if (!op.isDenseAllreduce())
        return;
      // The runtime reduces a mixed-wire bucket with its ring only.
      if (op.isMixedWire()) {
        op.setAllreduceAlgorithm(AlgorithmKind::ring);
        return;
      }
      const ClusterModel &runsOn = pricing.get(op);
      std::optional<AllreduceAlgorithm> chosen =
          algorithm == AlgorithmChoice::Auto
              ? choose(op, runsOn)
              : force(op, runsOn,
                      &runsOn != &*model ? op.getProcessGroup() : GroupAttr(),
                      target);
      if (!chosen) {
        failed = true;
        return;
      }
      op.setAllreduceAlgorithm(getAlgorithmKind(*chosen));
    });
    if (failed)
      signalPassFailure();
  }

private:
  /// The cheapest candidate for `op` on `runsOn`; the cluster's algorithm
  /// (where it can run it) when the collective's size is unknown.
  static AllreduceAlgorithm choose(CollectiveOpInterface op,
                                   const ClusterModel &runsOn) {
    std::optional<int64_t> bytes = op.getCommunicatedBytes();
    if (!bytes)
      return getAllreduceCandidates(runsOn).front();
    return getCheapestAllreduceAlgorithm(runsOn, static_cast<double>(*bytes));
  }

  /// The algorithm the option forces, or nullopt after a diagnostic on `op`
  /// when `runsOn` (the cluster `target`, or its process group `group`'s)
  /// cannot run it.
  std::optional<AllreduceAlgorithm> force(CollectiveOpInterface op,
                                          const ClusterModel &runsOn,
                                          GroupAttr group,
                                          const PlanningCluster &target) {
    switch (algorithm) {
    case AlgorithmChoice::Auto:
      break;
    case AlgorithmChoice::Ring:
      return AllreduceAlgorithm::Ring;
    case AlgorithmChoice::Tree:
      return AllreduceAlgorithm::Tree;
    case AlgorithmChoice::Hierarchical: {
      if (canRunHierarchical(runsOn))
        return AllreduceAlgorithm::Hierarchical;
      InFlightDiagnostic diag =
          op->emitError() << "comm-select-algorithm: algorithm=hierarchical "
                             "needs several nodes of several ranks each, but ";
      if (group)
        diag << "its process group " << group << " on cluster '" << target.spec
             << "' has ";
      else
        diag << "cluster '" << target.spec << "' has ";
      diag << describeLayout(runsOn)
           << ": there is no second level to reduce in; choose ring, tree or "
              "auto";
      return std::nullopt;
    }
    }
    llvm_unreachable("unknown algorithm choice");
  }

  ClusterCache clusters;
};

} // namespace
