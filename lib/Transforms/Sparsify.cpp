//===- Sparsify.cpp - Sparse allreduces where the cost model says so ------===//
//
// Implements `comm-sparsify`: residual gradient compression (RedSync, Zen,
// GradientFlow) for the gradients whose sparse exchange the cost model finds
// cheaper than their dense allreduce, with the residuals kept in
// ml_program globals.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/CollectiveCost.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Analysis/StepModel.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMSPARSIFY
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

/// The exchanges `exchange=auto` chooses from, in the order that breaks ties.
static constexpr ExchangeKind kAllExchanges[] = {
    ExchangeKind::allgather, ExchangeKind::hash, ExchangeKind::chunk};

/// A symbol name made from a parameter name: characters other than letters,
/// digits and '_' become '_', and a leading digit gets a '_' before it.
static std::string getResidualSymbolName(std::optional<StringRef> parameter) {
  std::string base =
      parameter && !parameter->empty() ? parameter->str() : std::string("grad");
  for (char &c : base)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  if (llvm::isDigit(base.front()))
    base.insert(base.begin(), '_');
  return base + "_residual";
}

namespace {

struct CommSparsifyPass : public WithCheckedOptions<
                              comm::impl::CommSparsifyBase<CommSparsifyPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    Location loc = UnknownLoc::get(context);
    if (!(density > 0.0 && density <= 1.0))
      return emitError(loc)
             << "comm-sparsify: density must be in (0, 1], got " << density;

    exchanges.clear();
    switch (exchange) {
    case SparseExchangeChoice::Auto:
      exchanges.append(std::begin(kAllExchanges), std::end(kAllExchanges));
      break;
    case SparseExchangeChoice::Allgather:
      exchanges.push_back(ExchangeKind::allgather);
      break;
    case SparseExchangeChoice::Hash:
      exchanges.push_back(ExchangeKind::hash);
      break;
    case SparseExchangeChoice::Chunk:
      exchanges.push_back(ExchangeKind::chunk);
      break;
    }
    selectKind = select == SparseSelectChoice::Threshold ? SelectKind::threshold
                                                         : SelectKind::topk;

    if (minBytes < 0)
      return emitError(loc)
             << "comm-sparsify: min-bytes must be non-negative, got "
             << minBytes.getValue();
    excluded.clear();
    SmallVector<StringRef> names;
    StringRef(exclude).split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (StringRef name : names)
      excluded.insert(name.trim());
    if (chunkElements <= 0)
      return emitError(loc)
             << "comm-sparsify: chunk-elements must be positive, got "
             << chunkElements.getValue();
    llvm::Expected<DeviceModel> parsedDevice = DeviceModel::parse(device);
    if (!parsedDevice)
      return emitError(loc) << "comm-sparsify: option 'device': "
                            << llvm::toString(parsedDevice.takeError());
    deviceModel = std::move(*parsedDevice);
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    llvm::Expected<std::shared_ptr<const ClusterModel>> parsed =
        loadSharedCluster(
            resolvePlanningCluster(module, cluster, "comm-sparsify").spec);
    if (!parsed) {
      module.emitError() << "comm-sparsify: option 'cluster': "
                         << llvm::toString(parsed.takeError());
      return signalPassFailure();
    }
    std::shared_ptr<const ClusterModel> clusterModel = std::move(*parsed);
    CollectiveClusters clusters(*clusterModel);
    SmallVector<AllReduceOp> allreduces;
    getOperation()->walk(
        [&](AllReduceOp allreduce) { allreduces.push_back(allreduce); });
    SymbolTableCollection symbolTables;
    for (AllReduceOp allreduce : allreduces)
      if (std::optional<ExchangeKind> scheme =
              chooseExchange(allreduce, clusters))
        sparsify(allreduce, *scheme, symbolTables);
  }

private:
  /// The exchange that makes `allreduce` cheapest when sparse, or nullopt
  /// when it stays dense: it is not a candidate, or no sparse exchange costs
  /// less than the dense allreduce. Both are priced on the ranks the
  /// allreduce runs among (its process group's, when it has one), the dense
  /// one with its `algorithm`.
  std::optional<ExchangeKind>
  chooseExchange(AllReduceOp allreduce, CollectiveClusters &clusters) const {
    auto type = dyn_cast<RankedTensorType>(allreduce.getInput().getType());
    if (!type || !type.hasStaticShape() ||
        !isa<FloatType>(type.getElementType()))
      return std::nullopt;
    if (allreduce.getReduce() != ReduceKind::sum &&
        allreduce.getReduce() != ReduceKind::avg)
      return std::nullopt;
    if (allreduce.getWire() || allreduce.getPrescale())
      return std::nullopt;
    if (std::optional<StringRef> name = allreduce.getName();
        name && excluded.contains(*name))
      return std::nullopt;

    SparseGradient gradient =
        describeSparseGradient(type, density, chunkElements);
    int64_t bytes = gradient.denseElements * gradient.valueBytes;
    if (bytes < minBytes)
      return std::nullopt;

    auto collective = cast<CollectiveOpInterface>(allreduce.getOperation());
    const ClusterModel &cluster = clusters.get(collective);
    // With `all`, the cheapest exchange whatever the dense allreduce costs.
    double bestUs = all ? std::numeric_limits<double>::infinity()
                        : getDenseAllreduceCost(collective, cluster,
                                                static_cast<double>(bytes))
                              .totalUs();
    std::optional<ExchangeKind> best;
    for (ExchangeKind candidate : exchanges) {
      SelectKind select =
          candidate == ExchangeKind::chunk ? SelectKind::chunk : selectKind;
      double us =
          getSparseAllreduceCost(cluster, *deviceModel, select, candidate,
                                 allreduce.getReduce(), gradient,
                                 /*onChannel=*/sparseOverlap)
              .totalUs();
      if (us < bestUs) {
        bestUs = us;
        best = candidate;
      }
    }
    return best;
  }

  /// Replaces `allreduce` by a comm.sparse_allreduce with `exchange` whose
  /// residual lives in a new global of the nearest symbol table.
  void sparsify(AllReduceOp allreduce, ExchangeKind exchange,
                SymbolTableCollection &symbolTables) {
    MLIRContext *context = allreduce.getContext();
    Location loc = allreduce.getLoc();
    auto type = cast<RankedTensorType>(allreduce.getInput().getType());

    // The residual, zero at first, declared before the op that holds the
    // allreduce (its function) in the symbol table.
    Operation *symbolTableOp = SymbolTable::getNearestSymbolTable(allreduce);
    Block &symbolBlock = symbolTableOp->getRegion(0).front();
    Operation *anchor = symbolBlock.findAncestorOpInBlock(*allreduce);
    OpBuilder builder(context);
    auto global = ml_program::GlobalOp::create(
        builder, loc,
        builder.getStringAttr(getResidualSymbolName(allreduce.getName())),
        TypeAttr::get(type), builder.getUnitAttr(), builder.getZeroAttr(type),
        builder.getStringAttr("private"));
    StringAttr symbol = symbolTables.getSymbolTable(symbolTableOp)
                            .insert(global, Block::iterator(anchor));
    auto symbolRef = FlatSymbolRefAttr::get(symbol);

    bool chunked = exchange == ExchangeKind::chunk;
    builder.setInsertionPoint(allreduce);
    auto residual =
        ml_program::GlobalLoadOp::create(builder, loc, type, symbolRef);
    auto sparse = SparseAllReduceOp::create(
        builder, loc, TypeRange{type, type}, allreduce.getInput(),
        residual.getResult(), builder.getF64FloatAttr(density),
        SelectKindAttr::get(context, chunked ? SelectKind::chunk : selectKind),
        ExchangeKindAttr::get(context, exchange), allreduce.getReduceAttr(),
        chunked ? builder.getI64IntegerAttr(chunkElements) : IntegerAttr(),
        /*union_density=*/FloatAttr(), allreduce.getNameAttr(),
        allreduce.getGroupAttr());
    ml_program::GlobalStoreOp::create(builder, loc, symbolRef,
                                      sparse.getResidualOut());
    allreduce.getResult().replaceAllUsesWith(sparse.getReduced());
    allreduce.erase();
  }

  /// The parameters that stay dense (`exclude`).
  llvm::StringSet<> excluded;
  /// The exchanges to choose from: one, or all with `exchange=auto`.
  SmallVector<ExchangeKind, 3> exchanges;
  /// Selection of the allgather and hash exchanges.
  SelectKind selectKind = SelectKind::threshold;
  /// The device that runs the selection and the residual update.
  std::optional<DeviceModel> deviceModel;
};

} // namespace
