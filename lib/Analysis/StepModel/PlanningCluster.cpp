//===- PlanningCluster.cpp - The cluster a plan is made for ---------------===//

#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Support/BoundedFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include <mutex>

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

llvm::Expected<std::shared_ptr<const ClusterModel>>
mlir::comm::loadSharedCluster(StringRef spec) {
  struct Entry {
    /// The file's contents when it was parsed; empty for a preset.
    std::string contents;
    std::shared_ptr<const ClusterModel> model;
  };
  static std::mutex mutex;
  static llvm::StringMap<Entry> entries;

  bool isPreset = llvm::is_contained(ClusterModel::presetNames(), spec);
  std::string contents;
  if (!isPreset) {
    // A file that cannot be read: ClusterModel::parse says why.
    if (llvm::Expected<std::string> read = readBoundedFile(spec))
      contents = std::move(*read);
    else
      llvm::consumeError(read.takeError());
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = entries.find(spec);
    if (found != entries.end() && found->second.contents == contents &&
        (isPreset || !contents.empty()))
      return found->second.model;
  }
  // Parsed outside the lock: two threads may both parse a new description,
  // and either result is the same.
  llvm::Expected<ClusterModel> parsed = ClusterModel::parse(spec);
  if (!parsed)
    return parsed.takeError();
  auto model = std::make_shared<const ClusterModel>(std::move(*parsed));
  std::lock_guard<std::mutex> lock(mutex);
  entries[spec] = Entry{std::move(contents), model};
  return model;
}

llvm::Expected<const ClusterModel &>
ClusterCache::get(const PlanningCluster &cluster) {
  auto found = models.find(cluster.spec);
  if (found != models.end())
    return *found->second;
  llvm::Expected<std::shared_ptr<const ClusterModel>> loaded =
      loadSharedCluster(cluster.spec);
  if (!loaded)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cluster '%s': %s", cluster.spec.c_str(),
                                   llvm::toString(loaded.takeError()).c_str());
  return *models.try_emplace(cluster.spec, std::move(*loaded)).first->second;
}
