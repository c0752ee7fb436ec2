//===- PlanningCluster.h - The cluster a plan is made for -------*- C++ -*-===//
//
// A planned module records the cluster description it was planned for in
// its `comm.cluster` attribute. Passes and exports that need a cluster take
// it from their own option when the user sets one, otherwise from that
// record, otherwise the default preset; whichever they use is named in
// their reports.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_ANALYSIS_PLANNINGCLUSTER_H
#define COMMOPT_ANALYSIS_PLANNINGCLUSTER_H

#include "CommOpt/Analysis/ClusterModel.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::comm {

/// The module attribute naming the cluster a plan was made for.
inline constexpr llvm::StringLiteral kPlannedClusterAttrName = "comm.cluster";
/// A unit attribute beside it when nobody chose that cluster: the plan was
/// made for the default preset.
inline constexpr llvm::StringLiteral kDefaultClusterAttrName =
    "comm.cluster_is_default";

/// Where a pass's cluster came from.
enum class ClusterSource { Option, Module, Default };

/// A cluster description by name (a preset) or path, and its origin.
struct PlanningCluster {
  std::string spec;
  ClusterSource source = ClusterSource::Default;

  /// How reports say where the cluster came from: nothing for an option,
  /// "recorded on the module", or "the default; set cluster= for yours".
  llvm::StringRef describeSource() const;
};

/// "option", "module" or "default", for JSON reports.
llvm::StringRef stringifyClusterSource(ClusterSource source);

/// The cluster recorded on `op`'s module (or on `op` itself, when it is a
/// module), and where it came from; nullopt when none is recorded.
std::optional<PlanningCluster> getRecordedCluster(Operation *op);

/// Records `cluster` on `module`, marking it when it is the default.
void recordPlanningCluster(Operation *module, const PlanningCluster &cluster);

/// The cluster a pass on `op` uses: `option` when it is not empty, else the
/// cluster recorded on the module, else the default preset. When `option`
/// names another cluster than the module records, warns on `op` that the
/// option wins, naming `passName` and both clusters.
PlanningCluster resolvePlanningCluster(Operation *op, llvm::StringRef option,
                                       llvm::StringRef passName);

/// The cluster description `spec` (a preset name or a file path), parsed
/// once per process and contents: every pass of a pipeline, every function
/// and thread asks this one cache, so one comm-optimize run parses its
/// cluster once. A file is read again on each call and parsed again only when
/// its contents changed. Errors are ClusterModel::parse's; they are not
/// kept.
llvm::Expected<std::shared_ptr<const ClusterModel>>
loadSharedCluster(llvm::StringRef spec);

/// The descriptions a pass uses, from loadSharedCluster, kept alive for the
/// pass's run; errors name the cluster.
class ClusterCache {
public:
  /// The description of `cluster`, or an error naming it.
  llvm::Expected<const ClusterModel &> get(const PlanningCluster &cluster);

private:
  llvm::StringMap<std::shared_ptr<const ClusterModel>> models;
};

} // namespace mlir::comm

#endif // COMMOPT_ANALYSIS_PLANNINGCLUSTER_H
