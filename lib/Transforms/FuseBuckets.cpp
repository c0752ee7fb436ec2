//===- FuseBuckets.cpp - Fuse gradient allreduces into buckets ------------===//
//
// Implements `comm-fuse-buckets`: tensor fusion of allreduces in gradient-
// ready order, as PyTorch DDP's buckets, Horovod's fusion buffer and XLA's
// all-reduce combiner do.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"
#include "CommDialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMFUSEBUCKETS
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

/// What gradients must agree on to share one collective.
struct BucketKey {
  ReduceKind reduce;
  Type elementType;
  Attribute wire;
  Attribute prescale;

  bool operator==(const BucketKey &other) const {
    return reduce == other.reduce && elementType == other.elementType &&
           wire == other.wire && prescale == other.prescale;
  }
};

/// A bucket being filled.
struct OpenBucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
  /// The first op of the block that uses a member's result: the bucket must
  /// be issued before it.
  Operation *deadline = nullptr;
};

/// The size in bytes of a statically shaped gradient, or nullopt.
static std::optional<int64_t> getGradientBytes(AllReduceOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return type.getNumElements() *
         static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
}

/// The earliest op of `block` that uses `value`, directly or from a nested
/// region; null if none.
static Operation *getFirstUserInBlock(Value value, Block *block) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
      first = ancestor;
  }
  return first;
}

/// Replaces the members of a bucket by one comm.fused_allreduce placed right
/// after the last member, where every gradient is ready.
static void emitBucket(OpenBucket &bucket) {
  if (bucket.members.size() < 2)
    return;
  AllReduceOp last = bucket.members.back();
  OpBuilder builder(last->getContext());
  builder.setInsertionPointAfter(last);

  SmallVector<Value> inputs;
  SmallVector<Type> types;
  SmallVector<Attribute> names;
  bool anyName = false;
  SmallVector<Location> locations;
  for (AllReduceOp member : bucket.members) {
    inputs.push_back(member.getInput());
    types.push_back(member.getInput().getType());
    anyName |= member.getName().has_value();
    names.push_back(builder.getStringAttr(member.getName().value_or("")));
    locations.push_back(member.getLoc());
  }
  auto fused = FusedAllReduceOp::create(
      builder, builder.getFusedLoc(locations), types, inputs,
      last.getReduceAttr(), last.getWireAttr(), last.getPrescaleAttr(),
      anyName ? builder.getArrayAttr(names) : ArrayAttr());
  for (auto [member, result] : llvm::zip(bucket.members, fused.getResults())) {
    member.getResult().replaceAllUsesWith(result);
    member.erase();
  }
}

struct CommFuseBucketsPass
    : public comm::impl::CommFuseBucketsBase<CommFuseBucketsPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) final {
    if (policy != "threshold")
      return emitError(UnknownLoc::get(context))
             << "comm-fuse-buckets: unknown policy '" << policy
             << "'; expected 'threshold'";
    if (!(bucketCapMb > 0.0))
      return emitError(UnknownLoc::get(context))
             << "comm-fuse-buckets: bucket-cap-mb must be positive, got "
             << bucketCapMb;
    if (!(firstBucketMb >= 0.0))
      return emitError(UnknownLoc::get(context))
             << "comm-fuse-buckets: first-bucket-mb must be non-negative, got "
             << firstBucketMb;
    return success();
  }

  void runOnOperation() final {
    getOperation()->walk([&](Block *block) { fuseBlock(*block); });
  }

private:
  /// Fills buckets in program order: one open bucket per kind of gradient;
  /// a bucket is emitted when it is full or before the first use of one of
  /// its results.
  void fuseBlock(Block &block) {
    int64_t capBytes = static_cast<int64_t>(bucketCapMb * kBytesPerMiB);
    int64_t firstCapBytes =
        firstBucketMb > 0.0 ? static_cast<int64_t>(firstBucketMb * kBytesPerMiB)
                            : capBytes;
    bool firstBucket = true;
    auto currentCap = [&] { return firstBucket ? firstCapBytes : capBytes; };

    SmallVector<std::pair<BucketKey, OpenBucket>> open;
    auto closeAt = [&](size_t index) {
      emitBucket(open[index].second);
      open.erase(open.begin() + index);
      firstBucket = false;
    };

    for (Operation &op : llvm::make_early_inc_range(block)) {
      // Issue every bucket whose results this op needs.
      for (size_t i = open.size(); i-- > 0;)
        if (open[i].second.deadline == &op)
          closeAt(i);

      auto allreduce = dyn_cast<AllReduceOp>(&op);
      std::optional<int64_t> bytes =
          allreduce ? getGradientBytes(allreduce) : std::nullopt;
      if (!bytes)
        continue;

      BucketKey key{allreduce.getReduce(),
                    getElementTypeOrSelf(allreduce.getInput().getType()),
                    allreduce.getWireAttr(), allreduce.getPrescaleAttr()};
      auto *it =
          llvm::find_if(open, [&](auto &entry) { return entry.first == key; });
      if (it == open.end()) {
        open.push_back({key, OpenBucket()});
        it = std::prev(open.end());
      }
      OpenBucket *bucket = &it->second;
      // Horovod/XLA: never exceed the cap; start a new bucket instead.
      if (!overflow && !bucket->members.empty() &&
          bucket->bytes + *bytes > currentCap()) {
        closeAt(it - open.begin());
        open.push_back({key, OpenBucket()});
        bucket = &open.back().second;
      }
      bucket->members.push_back(allreduce);
      bucket->bytes += *bytes;
      Operation *user = getFirstUserInBlock(allreduce.getResult(), &block);
      if (user &&
          (!bucket->deadline || user->isBeforeInBlock(bucket->deadline)))
        bucket->deadline = user;
      // DDP: close once the cap is reached.
      if (bucket->bytes >= currentCap())
        closeAt(
            llvm::find_if(
                open, [&](auto &entry) { return &entry.second == bucket; }) -
            open.begin());
    }
    // Gradients whose results are never used in this block.
    while (!open.empty())
      closeAt(0);
  }
};

} // namespace
