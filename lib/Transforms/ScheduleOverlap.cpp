//===- ScheduleOverlap.cpp - Overlap collectives with compute -------------===//
//
// Implements `comm-schedule-overlap`: splits blocking collectives into
// comm.start (comm.sparse_start) and comm.wait placed as early and as late
// as their data allows, spreads them over channels (AIACC-Training's
// multiple streams), orders them by layer (ByteScheduler, P3) and partitions
// large gradients into pieces that pipeline.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace mlir::comm {
#define GEN_PASS_DEF_COMMSCHEDULEOVERLAP
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

/// What the pass was asked to do, after validation.
struct ScheduleOptions {
  int64_t channels;
  bool priorities;
  /// The partition cap in bytes; 0 when partitioning is off.
  double partitionBytes;
  /// Whether sparse allreduces are split too.
  bool sparse;
};

/// One piece of a partitioned gradient: a contiguous range of its elements.
struct Piece {
  int64_t offset;
  int64_t size;
};

/// What is in flight on one channel.
struct ChannelLoad {
  int64_t bytes = 0;
  int64_t collectives = 0;
};

/// The bytes of one gradient in its own type; dynamic shapes count as zero.
static int64_t getBytes(Type type) {
  return getGradientBytes(type).value_or(0);
}

/// The bytes a collective over `gradients` moves in their own types.
static int64_t getBytes(ValueRange gradients) {
  int64_t bytes = 0;
  for (Value gradient : gradients)
    bytes += getBytes(gradient.getType());
  return bytes;
}

/// The bytes a started collective counts towards its channel's load: its
/// gradients', the selected part of a sparse start's gradient, or what a
/// sharded start sends of its flat tensor: (p - 1) / p of it, which is
/// about the tensor.
static int64_t getLoadBytes(StartedCollectiveOpInterface start) {
  Operation *op = start.getOperation();
  if (auto sparse = dyn_cast<SparseStartOp>(op))
    return static_cast<int64_t>(
        std::ceil(static_cast<double>(getBytes(sparse.getGrad().getType())) *
                  sparse.getDensity().convertToDouble()));
  if (auto scatter = dyn_cast<ReduceScatterStartOp>(op))
    return getBytes(scatter.getInputs());
  if (auto gather = dyn_cast<AllGatherStartOp>(op)) {
    // The whole tensors are the outputs in buffer form, the wait's results
    // in tensor form.
    if (!gather.getOutputs().empty())
      return getBytes(gather.getOutputs());
    return getBytes((*gather.getToken().getUsers().begin())->getResults());
  }
  return getBytes(cast<StartOp>(op).getInputs());
}

/// The smallest `layer` of the backward comm.compute steps that define
/// `gradients`, or nullopt if none does.
static std::optional<int64_t> getLayerPriority(ValueRange gradients) {
  std::optional<int64_t> priority;
  for (Value gradient : gradients) {
    auto step = gradient.getDefiningOp<ComputeOp>();
    if (!step || !step.getLayer() || step.getPhase() != Phase::backward)
      continue;
    auto layer = static_cast<int64_t>(*step.getLayer());
    priority = priority ? std::min(*priority, layer) : layer;
  }
  return priority;
}

/// `value` in the shortest of %f and %e, as a user would type it.
static std::string formatShort(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

/// The number of pieces `op` is partitioned into with a cap of
/// `partitionBytes` (0: off): ceil(bytes / cap), at most one per element;
/// 1 when the gradient is not partitioned.
static int64_t getNumPieces(AllReduceOp op, double partitionBytes) {
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (partitionBytes <= 0.0 || !type.hasStaticShape() || type.getEncoding())
    return 1;
  double pieces =
      std::ceil(static_cast<double>(getBytes(type)) / partitionBytes);
  int64_t elements = type.getNumElements();
  if (pieces >= static_cast<double>(elements))
    return std::max<int64_t>(elements, 1);
  return std::max<int64_t>(static_cast<int64_t>(pieces), 1);
}

/// Cuts `elements` into `numPieces` contiguous pieces of near-equal size:
/// the first `elements % numPieces` pieces hold one element more.
static SmallVector<Piece> getPieces(int64_t elements, int64_t numPieces) {
  SmallVector<Piece> pieces;
  int64_t offset = 0;
  for (int64_t i = 0; i < numPieces; ++i) {
    int64_t size = elements / numPieces + (i < elements % numPieces ? 1 : 0);
    pieces.push_back({offset, size});
    offset += size;
  }
  return pieces;
}

/// The reassociation that collapses a tensor of `rank` dimensions into one.
static SmallVector<ReassociationIndices> getCollapseAll(int64_t rank) {
  ReassociationIndices all;
  for (int64_t dim = 0; dim < rank; ++dim)
    all.push_back(dim);
  return {all};
}

/// The channel with the smallest (bytes, collectives, number) load.
static uint64_t pickChannel(ArrayRef<ChannelLoad> loads) {
  const ChannelLoad *best = llvm::min_element(loads, [](const ChannelLoad &a,
                                                        const ChannelLoad &b) {
    return std::tie(a.bytes, a.collectives) < std::tie(b.bytes, b.collectives);
  });
  return best - loads.begin();
}

/// The earliest op of `block` that is or holds (in a nested region) one of
/// `users`; otherwise the block's terminator; null if the block has none,
/// meaning its end.
static Operation *getWaitPoint(ArrayRef<Operation *> users, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : users) {
    Operation *ancestor = block.findAncestorOpInBlock(*user);
    if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
      first = ancestor;
  }
  if (!first && block.mightHaveTerminator())
    first = block.getTerminator();
  return first;
}

/// The earliest op of `block` that uses one of `results`, directly or from a
/// nested region; otherwise as getWaitPoint.
static Operation *getWaitPoint(ValueRange results, Block &block) {
  SmallVector<Operation *> users;
  for (Value result : results)
    llvm::append_range(users, result.getUsers());
  return getWaitPoint(users, block);
}

/// Splits the collectives of one block and assigns their channels.
class BlockScheduler {
public:
  BlockScheduler(Block &block, const ScheduleOptions &options)
      : block(block), options(options),
        builder(block.getParentOp()->getContext()) {}

  void run() {
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (isBlockingTensorCollective(&op, options.sparse) ||
          (isa<ReduceScatterOp, AllGatherOp>(op) && op.getNumResults() > 0))
        collectives.push_back(&op);
    for (Operation *op : collectives)
      split(op);
    assignChannels();
  }

private:
  /// Replaces `op` by one start/wait pair, or by one per piece.
  void split(Operation *op) {
    if (isa<ReduceScatterOp, AllGatherOp>(op)) {
      splitSharded(op);
      op->erase();
      return;
    }
    if (auto sparse = dyn_cast<SparseAllReduceOp>(op)) {
      splitSparse(sparse);
      op->erase();
      return;
    }
    auto allreduce = dyn_cast<AllReduceOp>(op);
    int64_t numPieces =
        allreduce ? getNumPieces(allreduce, options.partitionBytes) : 1;
    if (numPieces > 1)
      splitIntoPieces(allreduce, numPieces);
    else
      splitWhole(op);
    op->erase();
  }

  /// Replaces `op` by a start right after its operands are ready and a wait
  /// right before its first use.
  void splitWhole(Operation *op) {
    Operation *anchor = beginStartGroup(op->getOperands());
    StartOp start =
        createStart(op, op->getOperands(), getPriority(op->getOperands()));
    endStartGroup(anchor);

    setWaitInsertionPoint(op->getResults());
    auto wait = WaitOp::create(builder, op->getLoc(), op->getResultTypes(),
                               start.getToken());
    op->replaceAllUsesWith(wait.getResults());
  }

  /// Replaces the reduce-scatter or all-gather `op` by its start right after
  /// its operands are ready, with the same attributes, and a wait right
  /// before the first use of its results.
  void splitSharded(Operation *op) {
    Operation *anchor = beginStartGroup(op->getOperands());
    OperationState state(op->getLoc(),
                         isa<ReduceScatterOp>(op)
                             ? ReduceScatterStartOp::getOperationName()
                             : AllGatherStartOp::getOperationName());
    state.addOperands(op->getOperands());
    state.addAttributes(op->getAttrs());
    state.addTypes(TokenType::get(builder.getContext()));
    if (std::optional<int64_t> priority = getPriority(op->getOperands()))
      state.attributes.set("priority", builder.getI64IntegerAttr(*priority));
    Operation *start = builder.create(state);
    created.insert(start);
    endStartGroup(anchor);

    setWaitInsertionPoint(op->getResults());
    auto wait = WaitOp::create(builder, op->getLoc(), op->getResultTypes(),
                               start->getResult(0));
    op->replaceAllUsesWith(wait.getResults());
  }

  /// Replaces `op` by one start/wait pair per piece of its gradient, which
  /// is flattened, sliced, and put back together after the waits.
  void splitIntoPieces(AllReduceOp op, int64_t numPieces) {
    Location loc = op.getLoc();
    Value gradient = op.getInput();
    auto type = cast<RankedTensorType>(gradient.getType());
    std::optional<int64_t> priority = getPriority(gradient);
    int64_t elements = type.getNumElements();
    SmallVector<Piece> pieces = getPieces(elements, numPieces);

    Operation *anchor = beginStartGroup(gradient);
    Value flat = gradient;
    if (type.getRank() != 1)
      flat = tensor::CollapseShapeOp::create(builder, loc, gradient,
                                             getCollapseAll(type.getRank()));
    SmallVector<StartOp> starts;
    for (const Piece &piece : pieces) {
      Range range = getRange(piece);
      Value slice = tensor::ExtractSliceOp::create(
          builder, loc, flat, range.offset, range.size, range.stride);
      starts.push_back(createStart(op, slice, priority));
    }
    endStartGroup(anchor);

    setWaitInsertionPoint(op.getResult());
    Value whole = tensor::EmptyOp::create(builder, loc, ArrayRef(elements),
                                          type.getElementType());
    for (auto [piece, start] : llvm::zip_equal(pieces, starts)) {
      auto wait = WaitOp::create(builder, loc, start.getInputs().getTypes(),
                                 start.getToken());
      Range range = getRange(piece);
      whole =
          tensor::InsertSliceOp::create(builder, loc, wait.getResult(0), whole,
                                        range.offset, range.size, range.stride);
    }
    if (type.getRank() != 1)
      whole = tensor::ExpandShapeOp::create(builder, loc, type, whole,
                                            getCollapseAll(type.getRank()));
    op.getResult().replaceAllUsesWith(whole);
  }

  /// Replaces the sparse allreduce `op` by a comm.sparse_start right after
  /// its operands are ready and a comm.wait right before the first use of
  /// its reduced gradient or new residual, not counting the stores of the
  /// residual into its global, which move behind the wait where they may.
  void splitSparse(SparseAllReduceOp op) {
    Operation *anchor = beginStartGroup(op->getOperands());
    auto start = SparseStartOp::create(
        builder, op.getLoc(), TokenType::get(builder.getContext()),
        op.getGrad(), op.getResidualIn(), op.getDensityAttr(),
        op.getSelectAttr(), op.getExchangeAttr(), op.getReduceAttr(),
        op.getChunkElementsAttr(), op.getUnionDensityAttr(), op.getNameAttr(),
        op.getGroupAttr(),
        /*channel=*/0, [&]() -> IntegerAttr {
          std::optional<int64_t> priority = getPriority(op.getGrad());
          return priority ? builder.getI64IntegerAttr(*priority)
                          : IntegerAttr();
        }());
    // The profile's figures that the estimate reads go along.
    for (StringRef name : {kCooGradientAttrName, kRowsTouchedAttrName})
      if (Attribute attr = op->getAttr(name))
        start->setAttr(name, attr);
    created.insert(start);
    endStartGroup(anchor);

    SmallVector<ml_program::GlobalStoreOp> stores;
    SmallVector<Operation *> users;
    for (OpOperand &use : op->getUses()) {
      auto store = dyn_cast<ml_program::GlobalStoreOp>(use.getOwner());
      if (store && store->getBlock() == &block &&
          use.get() == op.getResidualOut())
        stores.push_back(store);
      else
        users.push_back(use.getOwner());
    }
    Operation *waitPoint = getWaitPoint(users, block);
    // In block order, each store before the wait point moves behind the wait
    // unless something before the wait point might read the global it
    // writes; then the wait goes before that store, and the stores after it
    // stay where they are.
    llvm::sort(stores,
               [](ml_program::GlobalStoreOp a, ml_program::GlobalStoreOp b) {
                 return a->isBeforeInBlock(b);
               });
    SmallVector<ml_program::GlobalStoreOp> moved;
    for (ml_program::GlobalStoreOp store : stores) {
      if (waitPoint && !store->isBeforeInBlock(waitPoint))
        continue;
      if (mayReadBefore(store, waitPoint))
        waitPoint = store;
      else
        moved.push_back(store);
    }
    if (waitPoint)
      builder.setInsertionPoint(waitPoint);
    else
      builder.setInsertionPointToEnd(&block);
    auto wait = WaitOp::create(builder, op.getLoc(), op->getResultTypes(),
                               start.getToken());
    op->replaceAllUsesWith(wait.getResults());
    for (ml_program::GlobalStoreOp store : llvm::reverse(moved))
      store->moveAfter(wait);
  }

  /// Whether an op after `store` and before `end` (null: the block's end)
  /// loads the global `store` writes, or is a call, which might.
  bool mayReadBefore(ml_program::GlobalStoreOp store, Operation *end) {
    for (Operation *op = store->getNextNode(); op && op != end;
         op = op->getNextNode()) {
      bool reads = false;
      op->walk([&](Operation *nested) {
        auto load = dyn_cast<ml_program::GlobalLoadOp>(nested);
        if (isa<CallOpInterface>(nested) ||
            (load && load.getGlobal() == store.getGlobal())) {
          reads = true;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (reads)
        return true;
    }
    return false;
  }

  /// The static slice of a flattened gradient that `piece` covers.
  Range getRange(const Piece &piece) {
    return {builder.getIndexAttr(piece.offset),
            builder.getIndexAttr(piece.size), builder.getIndexAttr(1)};
  }

  /// A start of a collective over `gradients` with the attributes of
  /// `collective`, its group, algorithm and transport included (an allreduce's
  /// `name` becomes `names`). Its channel is assigned later.
  StartOp createStart(Operation *collective, ValueRange gradients,
                      std::optional<int64_t> priority) {
    auto from = cast<CollectiveOpInterface>(collective);
    TypeAttr wire;
    if (Type wireType = from.getWireType())
      wire = TypeAttr::get(wireType);
    FloatAttr prescale;
    if (std::optional<double> factor = from.getPrescaleFactor())
      prescale = builder.getF64FloatAttr(*factor);
    AlgorithmKindAttr algorithm;
    if (std::optional<AlgorithmKind> kind = from.getAllreduceAlgorithm())
      algorithm = AlgorithmKindAttr::get(builder.getContext(), *kind);
    TransportKindAttr transport;
    if (std::optional<TransportKind> kind = from.getCollectiveTransport())
      transport = TransportKindAttr::get(builder.getContext(), *kind);
    ArrayAttr names = getNamesAttr(collective, gradients.size());
    // A mixed-wire bucket's flags, for the gradients taken.
    DenseBoolArrayAttr narrowed;
    if (std::optional<ArrayRef<bool>> flags = from.getNarrowedGradients())
      narrowed =
          builder.getDenseBoolArrayAttr(flags->take_front(gradients.size()));
    auto start = StartOp::create(
        builder, collective->getLoc(), TokenType::get(builder.getContext()),
        gradients, from.getReduceKind(), wire, prescale, names,
        /*channel=*/0,
        priority ? builder.getI64IntegerAttr(*priority) : IntegerAttr(),
        from.getProcessGroup(), algorithm, transport, narrowed);
    created.insert(start);
    return start;
  }

  /// The names of the first `count` gradients of `collective` (an allreduce
  /// or a bucket), unless none has one. The op's own name attributes are
  /// reused: uniquing 10^5 names again costs tens of milliseconds.
  ArrayAttr getNamesAttr(Operation *collective, size_t count) {
    SmallVector<Attribute> names;
    if (auto allreduce = dyn_cast<AllReduceOp>(collective)) {
      if (StringAttr name = allreduce.getNameAttr())
        names.push_back(name);
    } else if (ArrayAttr all =
                   cast<FusedAllReduceOp>(collective).getNamesAttr()) {
      llvm::append_range(names, all.getValue().take_front(count));
    }
    if (llvm::all_of(names, [](Attribute name) {
          return cast<StringAttr>(name).getValue().empty();
        }))
      return nullptr;
    return builder.getArrayAttr(names);
  }

  /// The priority of a collective over `gradients`, if priorities are on.
  std::optional<int64_t> getPriority(ValueRange gradients) const {
    return options.priorities ? getLayerPriority(gradients) : std::nullopt;
  }

  /// Sets the insertion point right after the op of the block that defines
  /// the latest of `operands` (the block's start if none does), behind the
  /// ops already placed there so that program order is kept. Returns that
  /// op (null for the block's start) for endStartGroup.
  Operation *beginStartGroup(ValueRange operands) {
    Operation *anchor = nullptr;
    for (Value operand : operands) {
      Operation *def = operand.getDefiningOp();
      if (def && def->getBlock() == &block &&
          (!anchor || anchor->isBeforeInBlock(def)))
        anchor = def;
    }
    auto placed = lastPlacedAfter.find(anchor);
    if (placed != lastPlacedAfter.end())
      builder.setInsertionPointAfter(placed->second);
    else if (anchor)
      builder.setInsertionPointAfter(anchor);
    else
      builder.setInsertionPointToStart(&block);
    return anchor;
  }

  /// Records the last op created since beginStartGroup(`anchor`).
  void endStartGroup(Operation *anchor) {
    lastPlacedAfter[anchor] = &*std::prev(builder.getInsertionPoint());
  }

  /// Sets the insertion point right before the first use of `results` in
  /// the block (before the terminator, or at the end, if there is none).
  void setWaitInsertionPoint(ValueRange results) {
    if (Operation *waitPoint = getWaitPoint(results, block))
      builder.setInsertionPoint(waitPoint);
    else
      builder.setInsertionPointToEnd(&block);
  }

  /// Visits the starts in issue order and puts each created one on the
  /// channel with the fewest bytes in flight, then the fewest collectives
  /// in flight, then the lowest number. Starts that were in the input keep
  /// their channel and count towards its load.
  void assignChannels() {
    // With S starts, at most S - 1 others are in flight at a choice, so one
    // of the first S channels is idle and wins: the rest never matter.
    auto numStarts = static_cast<int64_t>(
        llvm::count_if(block, llvm::IsaPred<StartedCollectiveOpInterface>));
    SmallVector<ChannelLoad> loads(std::min(options.channels, numStarts));
    DenseSet<Operation *> inFlight;
    auto update = [&](StartedCollectiveOpInterface start, int64_t sign) {
      ChannelLoad &load = loads[start.getChannel()];
      load.bytes += sign * getLoadBytes(start);
      load.collectives += sign;
    };

    for (Operation &op : block) {
      if (auto start = dyn_cast<StartedCollectiveOpInterface>(op)) {
        if (created.contains(start))
          start.setChannel(pickChannel(loads));
        if (start.getChannel() < loads.size()) {
          update(start, +1);
          inFlight.insert(start);
        }
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        StartedCollectiveOpInterface start = wait.getStartingOp();
        if (start && inFlight.erase(start))
          update(start, -1);
      }
    }
  }

  Block &block;
  const ScheduleOptions &options;
  OpBuilder builder;
  /// For each op of the block (null: the block's start), the last op
  /// placed right after it, so that later starts go behind it.
  DenseMap<Operation *, Operation *> lastPlacedAfter;
  /// The starts this pass created in the block.
  DenseSet<Operation *> created;
};

struct CommScheduleOverlapPass
    : public WithCheckedOptions<
          comm::impl::CommScheduleOverlapBase<CommScheduleOverlapPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    if (channels < 0 || channels > kMaxChannels)
      return emitError(UnknownLoc::get(context))
             << "comm-schedule-overlap: option 'channels': expected 0 (the "
                "cluster's) or a count up to "
             << kMaxChannels << ", got " << static_cast<int>(channels);
    if (!(partitionMb >= 0.0) || std::isinf(partitionMb))
      return emitError(UnknownLoc::get(context))
             << "comm-schedule-overlap: partition-mb must be a non-negative "
                "finite number, got "
             << static_cast<double>(partitionMb);
    return success();
  }

  void runOnOperation() final {
    int64_t channelCount = channels;
    if (channelCount == 0) {
      // The channels of the cluster the module is planned for.
      PlanningCluster target =
          resolvePlanningCluster(getOperation(), "", "comm-schedule-overlap");
      llvm::Expected<const ClusterModel &> cluster = clusters.get(target);
      if (!cluster) {
        getOperation().emitError() << "comm-schedule-overlap: channels=0: "
                                   << llvm::toString(cluster.takeError());
        return signalPassFailure();
      }
      channelCount = cluster->channels;
    }
    ScheduleOptions options{channelCount, priorities,
                            partitionMb * kBytesPerMiB, sparse};
    if (failed(checkPieceCounts(options.partitionBytes)))
      return signalPassFailure();
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      BlockScheduler(*block, options).run();
  }

private:
  /// Fails when `partition-mb` would cut a gradient into more than
  /// kMaxPieces pieces: a piece per few bytes is a mistyped option, and
  /// would make the step unmanageably large.
  LogicalResult checkPieceCounts(double partitionBytes) {
    WalkResult result = getOperation()->walk([&](AllReduceOp op) {
      if (!isa<RankedTensorType>(op.getInput().getType()))
        return WalkResult::advance();
      int64_t pieces = getNumPieces(op, partitionBytes);
      if (pieces <= kMaxPieces)
        return WalkResult::advance();
      int64_t bytes = getBytes(cast<ShapedType>(op.getInput().getType()));
      op.emitError() << "comm-schedule-overlap: option 'partition-mb': "
                     << formatShort(partitionMb) << " would cut this " << bytes
                     << "-byte gradient into " << pieces << " pieces; at most "
                     << kMaxPieces << " are allowed, so use partition-mb="
                     << formatShort(static_cast<double>(bytes) / kMaxPieces /
                                    kBytesPerMiB)
                     << " or more";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// The most pieces one gradient is partitioned into.
  static constexpr int64_t kMaxPieces = 1024;

  ClusterCache clusters;
};

} // namespace
