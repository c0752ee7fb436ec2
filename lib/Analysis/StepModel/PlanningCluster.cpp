//===- PlanningCluster.cpp - The cluster a plan is made for ---------------===//

#include "CommOpt/Analysis/PlanningCluster.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::comm;

StringRef PlanningCluster::describeSource() const {
  switch (source) {
  case ClusterSource::Option:
    return "";
  case ClusterSource::Module:
    return "recorded on the module";
  case ClusterSource::Default:
    return "the default; set cluster= for yours";
  }
  llvm_unreachable("unknown cluster source");
}

StringRef mlir::comm::stringifyClusterSource(ClusterSource source) {
  switch (source) {
  case ClusterSource::Option:
    return "option";
  case ClusterSource::Module:
    return "module";
  case ClusterSource::Default:
    return "default";
  }
  llvm_unreachable("unknown cluster source");
}

std::optional<PlanningCluster> mlir::comm::getRecordedCluster(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  auto recorded = module->getAttrOfType<StringAttr>(kPlannedClusterAttrName);
  if (!recorded)
    return std::nullopt;
  return PlanningCluster{recorded.str(),
                         module->hasAttr(kDefaultClusterAttrName)
                             ? ClusterSource::Default
                             : ClusterSource::Module};
}

void mlir::comm::recordPlanningCluster(Operation *module,
                                       const PlanningCluster &cluster) {
  MLIRContext *context = module->getContext();
  module->setAttr(kPlannedClusterAttrName,
                  StringAttr::get(context, cluster.spec));
  if (cluster.source == ClusterSource::Default)
    module->setAttr(kDefaultClusterAttrName, UnitAttr::get(context));
  else
    module->removeAttr(kDefaultClusterAttrName);
}

PlanningCluster mlir::comm::resolvePlanningCluster(Operation *op,
                                                   StringRef option,
                                                   StringRef passName) {
  std::optional<PlanningCluster> recorded = getRecordedCluster(op);
  if (!option.empty()) {
    if (recorded && recorded->spec != option)
      op->emitWarning() << passName << ": the module was planned for cluster '"
                        << recorded->spec << "'; using '" << option
                        << "' as the cluster option says";
    return {option.str(), ClusterSource::Option};
  }
  if (recorded)
    return *recorded;
  return {kDefaultClusterName.str(), ClusterSource::Default};
}

llvm::Expected<const ClusterModel &>
ClusterCache::get(const PlanningCluster &cluster) {
  auto found = models.find(cluster.spec);
  if (found != models.end())
    return found->second;
  llvm::Expected<ClusterModel> parsed = ClusterModel::parse(cluster.spec);
  if (!parsed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cluster '%s': %s", cluster.spec.c_str(),
                                   llvm::toString(parsed.takeError()).c_str());
  return models.try_emplace(cluster.spec, std::move(*parsed)).first->second;
}
