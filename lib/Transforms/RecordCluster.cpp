//===- RecordCluster.cpp - Record the cluster a plan is made for ----------===//
//
// Implements `comm-record-cluster`: checks that the cluster description can
// be read and records its name on the module as `comm.cluster`, which the
// planning passes, the estimate and the timeline export use by default;
// and how the bridge trains the plan's sparse gradients (momentum
// correction, warm-up), which the plan export passes on.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMRECORDCLUSTER
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

struct CommRecordClusterPass
    : public WithCheckedOptions<
          comm::impl::CommRecordClusterBase<CommRecordClusterPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    if (sparseWarmupSteps < 0)
      return emitError(UnknownLoc::get(context))
             << "comm-record-cluster: option 'sparse-warmup-steps': expected "
                "a non-negative step count, got "
             << sparseWarmupSteps.getValue();
    if (!(sparseWarmupDensity > 0.0 && sparseWarmupDensity <= 1.0))
      return emitError(UnknownLoc::get(context))
             << "comm-record-cluster: option 'sparse-warmup-density': "
                "expected a fraction in (0, 1], got "
             << sparseWarmupDensity.getValue();
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    PlanningCluster target =
        resolvePlanningCluster(module, cluster, "comm-record-cluster");
    ClusterCache clusters;
    llvm::Expected<const ClusterModel &> model = clusters.get(target);
    if (!model) {
      module.emitError() << "comm-record-cluster: option 'cluster': "
                         << llvm::toString(model.takeError());
      return signalPassFailure();
    }
    recordPlanningCluster(module, target);
    if (momentumCorrection)
      module->setAttr(kMomentumCorrectionAttrName,
                      UnitAttr::get(module.getContext()));
    if (sparseWarmupSteps > 0) {
      Builder builder(module.getContext());
      module->setAttr(
          kSparseWarmupAttrName,
          builder.getDictionaryAttr(
              {builder.getNamedAttr(
                   "steps", builder.getI64IntegerAttr(sparseWarmupSteps)),
               builder.getNamedAttr(
                   "start_density",
                   builder.getF64FloatAttr(sparseWarmupDensity))}));
    }
  }
};

} // namespace
