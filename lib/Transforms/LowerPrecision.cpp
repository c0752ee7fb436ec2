//===- LowerPrecision.cpp - Choose the wire precision of collectives ------===//
//
// Implements `comm-lower-precision`: dense collectives send their gradients
// in f16 or bf16, pre-divided by the number of ranks against overflow, as
// PyTorch DDP's compress hooks and Horovod's fp16 compression do; small
// messages and parameters named by a pattern stay in full precision.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Regex.h"

#include <memory>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMLOWERPRECISION
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

struct CommLowerPrecisionPass
    : public WithCheckedOptions<
          comm::impl::CommLowerPrecisionBase<CommLowerPrecisionPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    Location loc = UnknownLoc::get(context);
    // The option's parser accepts f16 and bf16; None comes only from C++.
    if (wire == WirePrecision::None)
      return emitError(loc) << "comm-lower-precision: option 'wire': none "
                               "is not a wire type; leave the pass out";
    wireType = wire == WirePrecision::F16
                   ? FloatType(Float16Type::get(context))
                   : FloatType(BFloat16Type::get(context));

    if (minBytes < 0)
      return emitError(loc)
             << "comm-lower-precision: min-bytes must be non-negative, got "
             << minBytes.getValue();

    keepPattern.reset();
    if (!keepF32.empty()) {
      auto pattern = std::make_shared<llvm::Regex>(keepF32);
      std::string error;
      if (!pattern->isValid(error))
        return emitError(loc)
               << "comm-lower-precision: keep-f32 '" << keepF32
               << "' is not a valid regular expression: " << error;
      keepPattern = std::move(pattern);
    }

    return success();
  }

  void runOnOperation() final {
    func::FuncOp func = getOperation();
    llvm::Expected<const ClusterModel &> model = clusters.get(
        resolvePlanningCluster(func, cluster, "comm-lower-precision"));
    if (!model) {
      func.emitError() << "comm-lower-precision: "
                       << llvm::toString(model.takeError());
      return signalPassFailure();
    }
    ranks = model->ranks;
    func->walk([&](CollectiveOpInterface collective) {
      if (collective.canNarrowWire())
        lowerPrecision(collective);
    });
  }

private:
  /// Sets the wire type, and the prescale for sum and avg, of `op` unless
  /// one of the rules of the pass description keeps it in full precision.
  void lowerPrecision(CollectiveOpInterface op) {
    if (op.getWireType())
      return;
    ValueRange gradients = op.getGradients();
    auto elementType =
        dyn_cast<FloatType>(getElementTypeOrSelf(gradients.front().getType()));
    if (!elementType || elementType.getWidth() <= wireType.getWidth())
      return;
    std::optional<int64_t> bytes = op.getCommunicatedBytes();
    if (bytes ? *bytes < minBytes : minBytes > 0)
      return;
    if (keepPattern && llvm::any_of(op.getGradientNames(), [&](StringRef name) {
          return !name.empty() && keepPattern->match(name);
        }))
      return;

    bool isSumOrAvg = op.getReduceKind() == ReduceKind::sum ||
                      op.getReduceKind() == ReduceKind::avg;
    std::optional<double> prescale;
    if (isSumOrAvg && ranks > 1 && !op.getPrescaleFactor())
      prescale = 1.0 / static_cast<double>(ranks);
    op.narrowWire(wireType, prescale);
  }

  /// The wire type named by the `wire` option.
  FloatType wireType;
  /// The compiled `keep-f32` pattern, null when it is empty. Shared between
  /// the copies of the pass that run on several functions at once; matching
  /// does not modify it.
  std::shared_ptr<const llvm::Regex> keepPattern;
  /// The rank count of the cluster the function is planned for.
  int64_t ranks = 1;
  ClusterCache clusters;
};

} // namespace
