//===- SelectAlgorithm.cpp - Choose the allreduce algorithm per collective ===//
//
// Implements `comm-select-algorithm`: every dense collective gets the
// allreduce algorithm (flat ring, tree or hierarchical) that the cost model
// prices lowest for its bytes on the cluster it runs on (its process
// group's, for a grouped collective), or the one the `algorithm` option
// forces; and, where the cluster has two transports, the backend (NCCL or
// MPI) that carries it. The lowering passes both to the runtime; the step
// model prices with them.
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
    std::optional<CollectiveBackend> transports;
    if (transport != TransportChoice::Auto) {
      transports = transport == TransportChoice::Nccl ? CollectiveBackend::Nccl
                                                      : CollectiveBackend::Mpi;
      if (!model->onTransport(*transports)) {
        func.emitError() << "comm-select-algorithm: transport="
                         << stringifyCollectiveBackend(*transports)
                         << ", but cluster '" << target.spec << "' has the '"
                         << stringifyCollectiveBackend(model->backend)
                         << "' backend only: describe the second backend as "
                            "its `alternate` (docs/Cluster.md), or use "
                            "transport=auto";
        return signalPassFailure();
      }
    }
    CollectiveClusters pricing(*model);
    bool failed = false;
    func->walk([&](CollectiveOpInterface op) {
      if (!op.isDenseAllreduce())
        return;
      // A mixed-wire bucket runs the ring on the backend in use (its
      // runtime call takes no transport).
      if (op.isMixedWire()) {
        op.setAllreduceAlgorithm(AlgorithmKind::ring);
        return;
      }
      const ClusterModel &ranks = pricing.getRanks(op);
      std::optional<AllreduceAlgorithm> only;
      if (algorithm != AlgorithmChoice::Auto) {
        only = force(op, ranks,
                     &ranks != &*model ? op.getProcessGroup() : GroupAttr(),
                     target);
        if (!only) {
          failed = true;
          return;
        }
      }
      AllreduceChoice chosen = choose(op, ranks, only, transports);
      op.setAllreduceAlgorithm(getAlgorithmKind(chosen.algorithm));
      // On one transport, a collective runs on the backend in use unless
      // the option names it.
      if (ranks.alternate || transports)
        op.setCollectiveTransport(getTransportKind(chosen.transport));
    });
    if (failed)
      signalPassFailure();
  }

private:
  /// The cheapest algorithm (`only`, where given) and transport (among
  /// `transports`: nullopt for all `ranks` has) for `op` on `ranks`; the
  /// cluster's own where the collective's size is unknown.
  static AllreduceChoice choose(CollectiveOpInterface op,
                                const ClusterModel &ranks,
                                std::optional<AllreduceAlgorithm> only,
                                std::optional<CollectiveBackend> transports) {
    std::optional<int64_t> bytes = op.getCommunicatedBytes();
    if (bytes)
      return getCheapestAllreduceChoice(ranks, static_cast<double>(*bytes),
                                        getNarrowedBytes(op), only, transports);
    const ClusterModel &on =
        *ranks.onTransport(transports.value_or(ranks.backend));
    return {only.value_or(getAllreduceCandidates(on).front()), on.backend,
            /*costUs=*/0.0};
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
