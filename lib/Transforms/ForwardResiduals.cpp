//===- ForwardResiduals.cpp - Sparse residuals updated in their globals ---===//
//
// Implements `comm-forward-residuals`: after bufferization, a sparse
// allreduce's residual global is copied into a fresh buffer before the op
// and back after it, because memref.get_global is not writable in place.
// Where nothing else touches the global in between, the op updates the
// global itself and both copies go.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/CallInterfaces.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMFORWARDRESIDUALS
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// The copies around a sparse allreduce's residual buffer.
struct ResidualCopies {
  memref::AllocOp buffer;
  memref::CopyOp copyIn;
  memref::CopyOp copyOut;
  memref::GetGlobalOp global;
};

/// Whether `op` may read the global `name` or the value `loaded` that holds
/// it: it uses `loaded`, loads `name`, or is a call.
static bool mayReadGlobal(Operation *op, FlatSymbolRefAttr name, Value loaded,
                          Operation *allowedLoad) {
  WalkResult result = op->walk([&](Operation *nested) {
    if (isa<CallOpInterface>(nested) ||
        llvm::is_contained(nested->getOperands(), loaded))
      return WalkResult::interrupt();
    auto load = dyn_cast<memref::GetGlobalOp>(nested);
    if (load && nested != allowedLoad && load.getNameAttr() == name)
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// The copies of `sparse`'s residual into and out of one global, if the
/// residual buffer is only copied in, updated by `sparse` and copied out, in
/// one block, with nothing between the copies that may read the global.
static std::optional<ResidualCopies>
matchResidualCopies(SparseCollectiveOpInterface sparse) {
  Value residual = sparse.getResidualIn();
  if (!residual)
    return std::nullopt;
  auto buffer = residual.getDefiningOp<memref::AllocOp>();
  if (!buffer)
    return std::nullopt;
  ResidualCopies copies;
  copies.buffer = buffer;
  for (OpOperand &use : residual.getUses()) {
    Operation *user = use.getOwner();
    if (user == sparse.getOperation() && use.get() == sparse.getResidualIn() &&
        use.getOperandNumber() == 1)
      continue;
    auto copy = dyn_cast<memref::CopyOp>(user);
    if (!copy)
      return std::nullopt;
    memref::CopyOp &slot =
        copy.getTarget() == residual ? copies.copyIn : copies.copyOut;
    if (slot)
      return std::nullopt;
    slot = copy;
  }
  if (!copies.copyIn || !copies.copyOut)
    return std::nullopt;
  auto source = copies.copyIn.getSource().getDefiningOp<memref::GetGlobalOp>();
  auto target = copies.copyOut.getTarget().getDefiningOp<memref::GetGlobalOp>();
  if (!source || !target || source.getNameAttr() != target.getNameAttr() ||
      source.getType() != buffer.getType())
    return std::nullopt;
  copies.global = source;

  Block *block = buffer->getBlock();
  Operation *sparseOp = sparse.getOperation();
  if (copies.copyIn->getBlock() != block || sparseOp->getBlock() != block ||
      copies.copyOut->getBlock() != block ||
      !copies.copyIn->isBeforeInBlock(sparseOp) ||
      !sparseOp->isBeforeInBlock(copies.copyOut))
    return std::nullopt;
  for (Operation *op = copies.copyIn->getNextNode(); op != copies.copyOut;
       op = op->getNextNode())
    if (op != sparseOp &&
        mayReadGlobal(op, source.getNameAttr(), source.getResult(), target))
      return std::nullopt;
  return copies;
}

struct CommForwardResidualsPass
    : public comm::impl::CommForwardResidualsBase<CommForwardResidualsPass> {
  void runOnOperation() final {
    SmallVector<SparseCollectiveOpInterface> sparseOps;
    getOperation().walk([&](SparseCollectiveOpInterface sparse) {
      sparseOps.push_back(sparse);
    });
    for (SparseCollectiveOpInterface sparse : sparseOps) {
      std::optional<ResidualCopies> copies = matchResidualCopies(sparse);
      if (!copies)
        continue;
      sparse->setOperand(1, copies->global.getResult());
      Operation *target = copies->copyOut.getTarget().getDefiningOp();
      copies->copyOut.erase();
      copies->copyIn.erase();
      copies->buffer.erase();
      if (target->use_empty())
        target->erase();
    }
  }
};

} // namespace
