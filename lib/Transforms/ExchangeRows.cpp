//===- ExchangeRows.cpp - Lossless exchange of naturally sparse rows ------===//
//
// Implements `comm-exchange-rows`: a gradient that is sparse by nature (an
// embedding's, which touches only the rows its batch used) is exchanged as
// its touched rows, by allgather or by Zen's hash-balanced exchange, where
// the cost model finds that cheaper than the dense allreduce. The exchange
// is lossless, so cost alone decides.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMEXCHANGEROWS
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

struct CommExchangeRowsPass
    : public WithCheckedOptions<
          comm::impl::CommExchangeRowsBase<CommExchangeRowsPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    llvm::Expected<DeviceModel> parsed = DeviceModel::parse(device);
    if (!parsed)
      return emitError(UnknownLoc::get(context))
             << "comm-exchange-rows: option 'device': "
             << llvm::toString(parsed.takeError());
    deviceModel = std::move(*parsed);
    return success();
  }

  void runOnOperation() final {
    func::FuncOp func = getOperation();
    llvm::Expected<const ClusterModel &> model = clusterCache.get(
        resolvePlanningCluster(func, cluster, "comm-exchange-rows"));
    if (!model) {
      func.emitError() << "comm-exchange-rows: "
                       << llvm::toString(model.takeError());
      return signalPassFailure();
    }
    CollectiveClusters clusters(*model);
    SmallVector<AllReduceOp> marked;
    func.walk([&](AllReduceOp allreduce) {
      if (allreduce->hasAttr(kRowsTouchedAttrName))
        marked.push_back(allreduce);
    });
    for (AllReduceOp allreduce : marked)
      if (failed(plan(allreduce, clusters)))
        return signalPassFailure();
  }

private:
  /// The fractions of `allreduce`'s `comm.rows_touched`, or an error on it.
  FailureOr<ArrayRef<double>> getRowsTouched(AllReduceOp allreduce) {
    auto attr =
        dyn_cast<DenseF64ArrayAttr>(allreduce->getAttr(kRowsTouchedAttrName));
    auto malformed = [&]() {
      return allreduce->emitOpError("comm.rows_touched must be an "
                                    "array<f64> of nondecreasing fractions "
                                    "in (0, 1], one per power of two of "
                                    "ranks, got ")
             << allreduce->getAttr(kRowsTouchedAttrName);
    };
    if (!attr || attr.empty())
      return malformed();
    ArrayRef<double> fractions = attr.asArrayRef();
    for (auto [index, fraction] : llvm::enumerate(fractions))
      if (!(fraction > 0.0 && fraction <= 1.0) ||
          (index > 0 && fraction < fractions[index - 1]))
        return malformed();
    return fractions;
  }

  /// Replaces `allreduce` by the rows exchange the options and the cost
  /// model choose, or leaves it dense.
  LogicalResult plan(AllReduceOp allreduce, CollectiveClusters &clusters) {
    FailureOr<ArrayRef<double>> rowsTouched = getRowsTouched(allreduce);
    if (failed(rowsTouched))
      return failure();
    auto type = dyn_cast<RankedTensorType>(allreduce.getInput().getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0 ||
        !isa<FloatType>(type.getElementType()) || allreduce.getWire() ||
        allreduce.getPrescale() ||
        (allreduce.getReduce() != ReduceKind::sum &&
         allreduce.getReduce() != ReduceKind::avg) ||
        exchange == RowsExchangeChoice::Dense)
      return success();

    auto collective = cast<CollectiveOpInterface>(allreduce.getOperation());
    const ClusterModel &clusterModel = clusters.get(collective);
    SparseGradient gradient;
    gradient.denseElements = type.getNumElements();
    gradient.rowElements = type.getNumElements() / type.getDimSize(0);
    gradient.valueBytes =
        std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    gradient.density = rowsTouched->front();
    gradient.reducedDensity =
        rowsTouchedAt(*rowsTouched, std::max<int64_t>(clusterModel.ranks, 1));
    gradient.coo = allreduce->hasAttr(kCooGradientAttrName);

    auto rowsUs = [&](ExchangeKind kind) {
      return getSparseAllreduceCost(clusterModel, *deviceModel,
                                    SelectKind::rows, kind,
                                    allreduce.getReduce(), gradient,
                                    /*onChannel=*/sparseOverlap)
          .totalUs();
    };
    std::optional<ExchangeKind> chosen;
    switch (exchange) {
    case RowsExchangeChoice::Allgather:
      chosen = ExchangeKind::allgather;
      break;
    case RowsExchangeChoice::Hash:
      chosen = ExchangeKind::hash;
      break;
    case RowsExchangeChoice::Dense:
      llvm_unreachable("a forced dense exchange leaves the op as it is above");
    case RowsExchangeChoice::Auto: {
      double bytes = static_cast<double>(gradient.denseElements) *
                     static_cast<double>(gradient.valueBytes);
      // Dense wins ties: the rows exchange must pay for itself.
      double bestUs =
          getDenseAllreduceCost(collective, clusterModel, bytes).totalUs() +
          getDenseLocalUs(collective, clusterModel, *deviceModel);
      for (ExchangeKind kind : {ExchangeKind::allgather, ExchangeKind::hash})
        if (double us = rowsUs(kind); us < bestUs) {
          bestUs = us;
          chosen = kind;
        }
      break;
    }
    }
    if (!chosen)
      return success();

    OpBuilder builder(allreduce);
    MLIRContext *context = builder.getContext();
    auto rows = SparseAllReduceOp::create(
        builder, allreduce.getLoc(), TypeRange{type}, allreduce.getInput(),
        /*residual_in=*/Value(), builder.getF64FloatAttr(gradient.density),
        SelectKindAttr::get(context, SelectKind::rows),
        ExchangeKindAttr::get(context, *chosen), allreduce.getReduceAttr(),
        /*chunk_elements=*/IntegerAttr(),
        builder.getF64FloatAttr(*gradient.reducedDensity),
        allreduce.getNameAttr(), allreduce.getGroupAttr());
    // The profile's figures stay with the gradient, for reports.
    rows->setAttr(kRowsTouchedAttrName,
                  allreduce->getAttr(kRowsTouchedAttrName));
    if (Attribute coo = allreduce->getAttr(kCooGradientAttrName))
      rows->setAttr(kCooGradientAttrName, coo);
    allreduce.getResult().replaceAllUsesWith(rows.getReduced());
    allreduce.erase();
    return success();
  }

  ClusterCache clusterCache;
  std::optional<DeviceModel> deviceModel;
};

} // namespace
