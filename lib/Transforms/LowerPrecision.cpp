//===- LowerPrecision.cpp - Choose the wire precision of collectives ------===//
//
// Implements `comm-lower-precision`: dense collectives send their gradients
// in f16 or bf16, pre-divided by the number of ranks against overflow, as
// PyTorch DDP's compress hooks and Horovod's fp16 compression do; small
// messages and parameters named by a pattern stay in full precision.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Analysis/PlanningCluster.h"
#include "CommDialect/CommDialect.h"
#include "CommDialect/OptionChecks.h"
#include "CommDialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Regex.h"

#include <memory>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMLOWERPRECISION
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

/// The total size in bytes of `gradients` in their own element type, or
/// nullopt when one of them has a dynamic shape.
static std::optional<int64_t> getTotalBytes(ValueRange gradients) {
  int64_t total = 0;
  for (Value gradient : gradients) {
    auto type = cast<ShapedType>(gradient.getType());
    if (!type.hasStaticShape())
      return std::nullopt;
    total += type.getNumElements() *
             static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
  }
  return total;
}

/// The parameter names of a collective's gradients; unnamed gradients (no
/// name, or "" in a bucket's `names`) are left out.
static SmallVector<StringRef> getParameterNames(AllReduceOp op) {
  std::optional<StringRef> name = op.getName();
  if (!name || name->empty())
    return {};
  return {*name};
}

template <typename BucketOp>
static SmallVector<StringRef> getParameterNames(BucketOp op) {
  SmallVector<StringRef> names;
  if (std::optional<ArrayAttr> attr = op.getNames())
    for (StringAttr name : attr->template getAsRange<StringAttr>())
      if (!name.getValue().empty())
        names.push_back(name.getValue());
  return names;
}

namespace {

struct CommLowerPrecisionPass
    : public WithCheckedOptions<
          comm::impl::CommLowerPrecisionBase<CommLowerPrecisionPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    Location loc = UnknownLoc::get(context);
    if (std::optional<std::string> error = checkChoice(wire, {"f16", "bf16"}))
      return emitError(loc)
             << "comm-lower-precision: option 'wire': " << *error;
    wireType = wire == "f16" ? FloatType(Float16Type::get(context))
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
    func->walk([&](Operation *op) {
      llvm::TypeSwitch<Operation *>(op)
          .Case<AllReduceOp, FusedAllReduceOp, StartOp>(
              [&](auto collective) { lowerPrecision(collective); });
    });
  }

private:
  /// Sets the wire type, and the prescale for sum and avg, of `op` unless
  /// one of the rules of the pass description keeps it in full precision.
  template <typename CollectiveOp> void lowerPrecision(CollectiveOp op) {
    if (op.getWireAttr())
      return;
    ValueRange gradients = op->getOperands();
    auto elementType =
        dyn_cast<FloatType>(getElementTypeOrSelf(gradients.front().getType()));
    if (!elementType || elementType.getWidth() <= wireType.getWidth())
      return;
    std::optional<int64_t> bytes = getTotalBytes(gradients);
    if (bytes ? *bytes < minBytes : minBytes > 0)
      return;
    if (keepPattern && llvm::any_of(getParameterNames(op), [&](StringRef name) {
          return keepPattern->match(name);
        }))
      return;

    Builder builder(op->getContext());
    op.setWireAttr(TypeAttr::get(wireType));
    bool isSumOrAvg =
        op.getReduce() == ReduceKind::sum || op.getReduce() == ReduceKind::avg;
    if (isSumOrAvg && ranks > 1 && !op.getPrescaleAttr())
      op.setPrescaleAttr(
          builder.getF64FloatAttr(1.0 / static_cast<double>(ranks)));
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
