//===- StepModel.cpp - A function's training step, for the simulator ------===//

#include "CommOpt/Analysis/StepModel.h"

#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::comm;

double mlir::comm::getCollectiveBytes(TypeRange types, Type wire) {
  double bytes = 0.0;
  for (Type type : types)
    if (isa<ShapedType>(type))
      bytes += static_cast<double>(getGradientBytes(type, wire).value_or(0));
  return bytes;
}

AllreduceAlgorithm mlir::comm::getAllreduceAlgorithm(AlgorithmKind algorithm) {
  switch (algorithm) {
  case AlgorithmKind::ring:
    return AllreduceAlgorithm::Ring;
  case AlgorithmKind::tree:
    return AllreduceAlgorithm::Tree;
  case AlgorithmKind::hierarchical:
    return AllreduceAlgorithm::Hierarchical;
  }
  llvm_unreachable("unknown algorithm kind");
}

AlgorithmKind mlir::comm::getAlgorithmKind(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
  case AllreduceAlgorithm::Ring:
    return AlgorithmKind::ring;
  case AllreduceAlgorithm::Tree:
    return AlgorithmKind::tree;
  case AllreduceAlgorithm::Hierarchical:
    return AlgorithmKind::hierarchical;
  }
  llvm_unreachable("unknown allreduce algorithm");
}

CollectiveBackend mlir::comm::getCollectiveBackend(TransportKind transport) {
  switch (transport) {
  case TransportKind::nccl:
    return CollectiveBackend::Nccl;
  case TransportKind::mpi:
    return CollectiveBackend::Mpi;
  }
  llvm_unreachable("unknown transport kind");
}

TransportKind mlir::comm::getTransportKind(CollectiveBackend backend) {
  switch (backend) {
  case CollectiveBackend::Nccl:
    return TransportKind::nccl;
  case CollectiveBackend::Mpi:
    return TransportKind::mpi;
  }
  llvm_unreachable("unknown collective backend");
}

bool mlir::comm::canRunHierarchical(const ClusterModel &cluster) {
  return cluster.nodes() > 1 && cluster.ranksPerNode > 1;
}

SmallVector<AllreduceAlgorithm, 3>
mlir::comm::getAllreduceCandidates(const ClusterModel &cluster) {
  SmallVector<AllreduceAlgorithm, 3> candidates;
  auto allowed = [&](AllreduceAlgorithm algorithm) {
    return algorithm != AllreduceAlgorithm::Hierarchical ||
           canRunHierarchical(cluster);
  };
  if (allowed(cluster.algorithm))
    candidates.push_back(cluster.algorithm);
  for (AllreduceAlgorithm algorithm :
       {AllreduceAlgorithm::Ring, AllreduceAlgorithm::Tree,
        AllreduceAlgorithm::Hierarchical})
    if (algorithm != cluster.algorithm && allowed(algorithm))
      candidates.push_back(algorithm);
  return candidates;
}

AllreduceChoice mlir::comm::getCheapestAllreduceChoice(
    const ClusterModel &cluster, double bytes, double narrowedBytes,
    std::optional<AllreduceAlgorithm> only,
    std::optional<CollectiveBackend> transports) {
  std::optional<AllreduceChoice> best;
  auto consider = [&](const ClusterModel &on) {
    SmallVector<AllreduceAlgorithm, 3> candidates;
    if (only)
      candidates.push_back(*only);
    else
      candidates = getAllreduceCandidates(on);
    for (AllreduceAlgorithm algorithm : candidates) {
      double us = allreduceCost(on, bytes, algorithm).totalUs() +
                  getWireCostUs(on, narrowedBytes);
      if (!best || us < best->costUs)
        best = AllreduceChoice{algorithm, on.backend, us};
    }
  };
  if (!transports || *transports == cluster.backend)
    consider(cluster);
  if (cluster.alternate && (!transports || *transports != cluster.backend))
    consider(*cluster.alternate);
  assert(best && "the transport is not one the cluster has");
  return *best;
}

const ClusterModel &CollectiveClusters::get(CollectiveOpInterface op) {
  const ClusterModel &ranks = getRanks(op);
  std::optional<TransportKind> transport = op.getCollectiveTransport();
  if (!transport)
    return ranks;
  const ClusterModel *on = ranks.onTransport(getCollectiveBackend(*transport));
  return on ? *on : ranks;
}

const ClusterModel &CollectiveClusters::getRanks(CollectiveOpInterface op) {
  GroupAttr group = op.getProcessGroup();
  if (!group)
    return cluster;
  auto found = groups.find(group);
  if (found != groups.end())
    return found->second ? *found->second : cluster;
  // The verifier has checked that the grid exists and the axes fit it.
  auto grid =
      symbols.lookupNearestSymbolFrom<shard::GridOp>(op, group.getGrid());
  ArrayRef<int64_t> shape = grid.getShape();
  std::unique_ptr<ClusterModel> &model = groups[group];
  // A grid of dynamic size does not say who is grouped with whom: priced
  // among all ranks (a null entry).
  if (!llvm::any_of(shape, ShapedType::isDynamic))
    model = std::make_unique<ClusterModel>(
        cluster.forGroup(shape, group.getAxes()));
  return model ? *model : cluster;
}

CollectiveCost mlir::comm::getDenseAllreduceCost(CollectiveOpInterface op,
                                                 const ClusterModel &cluster,
                                                 double bytes) {
  // The runtime reduces a mixed-wire bucket with its ring.
  std::optional<AlgorithmKind> algorithm = op.getAllreduceAlgorithm();
  CollectiveCost cost =
      allreduceCost(cluster, bytes,
                    op.isMixedWire() ? AllreduceAlgorithm::Ring
                    : algorithm      ? getAllreduceAlgorithm(*algorithm)
                                     : cluster.algorithm);
  // Packing into the wire type, the 16-bit reduction and unpacking, on the
  // ranks: per byte of the narrowed gradients in their own type.
  cost.latencyUs += getWireCostUs(cluster, getNarrowedBytes(op));
  return cost;
}

double mlir::comm::getNarrowedBytes(CollectiveOpInterface op) {
  double narrowedBytes = 0;
  for (auto [index, type] : llvm::enumerate(op.getGradients().getTypes()))
    if (op.getGradientWireType(static_cast<unsigned>(index)))
      narrowedBytes +=
          static_cast<double>(getGradientBytes(type, Type()).value_or(0));
  return narrowedBytes;
}

SparseExchangeScheme
mlir::comm::getSparseExchangeScheme(ExchangeKind exchange) {
  switch (exchange) {
  case ExchangeKind::allgather:
    return SparseExchangeScheme::Allgather;
  case ExchangeKind::hash:
    return SparseExchangeScheme::Hash;
  case ExchangeKind::chunk:
    return SparseExchangeScheme::Chunk;
  }
  llvm_unreachable("unknown exchange kind");
}

SparseSelectScheme mlir::comm::getSparseSelectScheme(SelectKind select) {
  switch (select) {
  case SelectKind::topk:
    return SparseSelectScheme::Topk;
  case SelectKind::threshold:
    return SparseSelectScheme::Threshold;
  case SelectKind::chunk:
    return SparseSelectScheme::Chunk;
  case SelectKind::rows:
    return SparseSelectScheme::Rows;
  }
  llvm_unreachable("unknown select kind");
}

double mlir::comm::getSparseLocalUs(const DeviceModel &device,
                                    SelectKind select,
                                    const SparseLocalWork &work) {
  if (work.totalBytes() <= 0)
    return 0;
  const LocalWorkRates &rates = device.localWork;
  // Finding the touched rows is one streaming pass, as the chunk norms are.
  double selectNs = select == SelectKind::topk        ? rates.topkSelectNs
                    : select == SelectKind::threshold ? rates.thresholdSelectNs
                                                      : rates.chunkSelectNs;
  bool scatterMeasured = rates.scatterNs > 0 || rates.scatterNsPerEntry > 0;
  if (rates.accumulateNs <= 0 && selectNs <= 0 && !scatterMeasured)
    return device.rooflineUs(/*flops=*/0, work.totalBytes());
  // Each phase at its measured rate, else as memory traffic.
  auto traffic = [&](double bytes) {
    return bytes / (device.memoryGBps * 1e3);
  };
  double us = device.launchOverheadUs;
  // The lossless rows exchange has no residual to accumulate.
  if (select != SelectKind::rows)
    us += rates.accumulateNs > 0 ? work.elements * rates.accumulateNs * 1e-3
                                 : traffic(work.accumulateBytes);
  us += selectNs > 0 ? work.elements * selectNs * 1e-3
                     : traffic(work.selectBytes);
  us += scatterMeasured ? (work.elements * rates.scatterNs +
                           work.entries * rates.scatterNsPerEntry) *
                              1e-3
                        : traffic(work.scatterBytes);
  return us;
}

CollectiveCost mlir::comm::getSparseAllreduceCost(
    const ClusterModel &cluster, const DeviceModel &device, SelectKind select,
    ExchangeKind exchange, ReduceKind reduce, const SparseGradient &gradient,
    bool onChannel, double *localUs) {
  SparseExchangeScheme scheme = getSparseExchangeScheme(exchange);
  CollectiveCost cost = sparseAllreduceCost(cluster, scheme, gradient);
  // Every sparse exchange runs on MPI's own collectives (Sparse.cpp).
  cost.gatheredBytes = cost.sentBytes;
  SparseLocalWork work =
      sparseLocalWork(getSparseSelectScheme(select), scheme, gradient,
                      cluster.ranks, reduce == ReduceKind::avg);
  double us = getSparseLocalUs(device, select, work) *
              (onChannel ? device.channelSlowdown : 1.0);
  cost.latencyUs += us;
  if (localUs)
    *localUs = us;
  return cost;
}

double mlir::comm::getDenseLocalUs(CollectiveOpInterface op,
                                   const ClusterModel &cluster,
                                   const DeviceModel &device) {
  if (cluster.ranks <= 1 || device.localWork.denseNs <= 0)
    return 0;
  double elements = 0;
  for (auto [index, type] : llvm::enumerate(op.getGradients().getTypes()))
    if (auto shaped = dyn_cast<ShapedType>(type);
        shaped && shaped.hasStaticShape() &&
        !op.getGradientWireType(static_cast<unsigned>(index)))
      elements += static_cast<double>(shaped.getNumElements());
  return elements * device.localWork.denseNs * 1e-3;
}

SparseGradient mlir::comm::describeSparseGradient(ShapedType type,
                                                  double density,
                                                  int64_t chunkElements) {
  SparseGradient gradient;
  gradient.denseElements = type.getNumElements();
  gradient.density = density;
  gradient.valueBytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  gradient.chunkElements = chunkElements;
  return gradient;
}

/// Bytes a roofline op reads or writes of `type`: a statically shaped tensor
/// or memref of integers or floats; zero for anything else (index elements
/// included).
static double getRooflineBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape() ||
      !shaped.getElementType().isIntOrFloat())
    return 0.0;
  return static_cast<double>(shaped.getNumElements()) *
         shaped.getElementType().getIntOrFloatBitWidth() / 8.0;
}

/// Flops and bytes of a tensor op for the roofline: a linalg op runs its
/// body once per point of its iteration space; an elementwise arith/math op
/// on tensors does one operation per element. Everything else is free.
static double estimateOpUs(Operation *op, const DeviceModel &device) {
  double bytes = 0.0;
  for (Type type : op->getOperandTypes())
    bytes += getRooflineBytes(type);
  for (Type type : op->getResultTypes())
    bytes += getRooflineBytes(type);

  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
    double points = 1.0;
    for (int64_t range : ranges) {
      if (ShapedType::isDynamic(range))
        return 0.0;
      points *= static_cast<double>(range);
    }
    // Body ops other than the terminator; a multiply-add counts as two.
    double opsPerPoint = std::max<double>(
        1.0,
        static_cast<double>(linalgOp.getBlock()->getOperations().size() - 1));
    bool contraction = linalg::isaContractionOpInterface(linalgOp);
    return device.rooflineUs(points * opsPerPoint, bytes, contraction);
  }

  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  if ((dialect == "arith" || dialect == "math") && op->getNumResults() == 1) {
    auto type = dyn_cast<ShapedType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return 0.0;
    return device.rooflineUs(static_cast<double>(type.getNumElements()), bytes);
  }
  return 0.0;
}

double mlir::comm::estimateComputeUs(Operation *op, const DeviceModel &device) {
  if (auto compute = dyn_cast<ComputeOp>(op))
    return compute.getCostUs().convertToDouble();
  if (auto cost = op->getAttrOfType<FloatAttr>("comm.cost_us"))
    return cost.getValueAsDouble();
  if (op->getNumRegions() == 0)
    return estimateOpUs(op, device);
  double total = 0.0;
  for (Region &region : op->getRegions())
    for (Operation &nested : region.getOps())
      total += estimateComputeUs(&nested, device);
  return total;
}

/// The layers whose backward steps produce `values` (comm.compute `layer`).
static SmallVector<int64_t, 2> getProducingLayers(ValueRange values) {
  SmallVector<int64_t, 2> layers;
  for (Value value : values) {
    auto compute = value.getDefiningOp<ComputeOp>();
    if (!compute || !compute.getLayer())
      continue;
    int64_t layer = static_cast<int64_t>(*compute.getLayer());
    if (!llvm::is_contained(layers, layer))
      layers.push_back(layer);
  }
  return layers;
}

static TaskPhase getTaskPhase(ComputeOp compute) {
  if (!compute.getPhase())
    return TaskPhase::Other;
  switch (*compute.getPhase()) {
  case Phase::forward:
    return TaskPhase::Forward;
  case Phase::backward:
    return TaskPhase::Backward;
  case Phase::optimizer:
    return TaskPhase::Other;
  }
  llvm_unreachable("unknown phase");
}

/// The parameter names of a collective's gradients: its `names` array or
/// its single `name`.
static SmallVector<std::string, 1> getMemberNames(Operation *op) {
  SmallVector<std::string, 1> members;
  if (auto names = op->getAttrOfType<ArrayAttr>("names")) {
    for (Attribute name : names)
      if (auto text = dyn_cast<StringAttr>(name))
        members.push_back(text.str());
  } else if (auto name = op->getAttrOfType<StringAttr>("name")) {
    members.push_back(name.str());
  }
  return members;
}

/// "bucket of 3: conv1.weight, bn1.weight, bn1.bias", or when that is
/// longer than 60 characters "bucket of 12: layer4.0.conv1.weight ..
/// fc.bias" (the first and last member); "bucket of N" when the op names no
/// parameters.
static std::string getBucketLabel(size_t count, ArrayRef<std::string> members) {
  constexpr size_t kMaxLabelLength = 60;
  std::string label = "bucket of " + std::to_string(count);
  if (members.empty())
    return label;
  std::string listed = label + ": " + llvm::join(members, ", ");
  if (listed.size() <= kMaxLabelLength || members.size() <= 2)
    return listed;
  return label + ": " + members.front() + " .. " + members.back();
}

/// The label of `op` in reports: the name of its one named gradient, the
/// members of a bucket (every fused_allreduce, a start of several or unnamed
/// gradients), or else its op name.
static std::string getLabel(CollectiveOpInterface op) {
  SmallVector<StringRef> names = op.getGradientNames();
  if (names.size() == 1 && !names[0].empty() && !isa<FusedAllReduceOp>(op))
    return names[0].str();
  if (isa<FusedAllReduceOp, StartOp>(op))
    return getBucketLabel(names.size(), getMemberNames(op));
  return op->getName().getStringRef().str();
}

std::string mlir::comm::getModelName(ModuleOp module) {
  if (auto model = module->getAttrOfType<StringAttr>("comm.model"))
    return model.str();
  return module.getSymName().value_or("").str();
}

bool mlir::comm::isMomentumCorrected(Operation *op) {
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  return module && module->hasAttr(kMomentumCorrectionAttrName);
}

/// The host CPU a rank of `model` needs in a step on `device`: its compute
/// and its collectives' local work at the part of a core each rank gets
/// while all are busy (HostCpu::busyShare), plus `spreadUs`, the host's
/// cost per step and its transport's for the bytes the collectives send
/// (those of MPI's own collectives at their own rate, and a part for each
/// of them); all but the transport's as the sharing scales CPU work
/// (HostCpu::cpuScale, HostCpu::localCpuScale for the local work: the CPU
/// the ranks need, not the timeline, whose lockstep stretch already runs
/// each rank's compute on its share of the cores throughout);
/// 0 where the device describes no host; records each collective's transport
/// CPU in model.collectiveTransportUs. The durations are the model's
/// before the host's sharing stretches them (applyHostSharing).
static double getStepCpuUs(StepModel &model, const DeviceModel &device,
                           double &spreadUs) {
  const HostCpu &host = device.hostCpu;
  spreadUs = 0;
  if (!host.isDescribed())
    return 0;
  double computeUs = 0, localUs = 0;
  for (const ComputeTask &task : model.step.computeTasks)
    computeUs += task.durationUs;
  for (double collectiveLocalUs : model.collectiveLocalUs)
    localUs += collectiveLocalUs;
  double transportUs = 0;
  model.collectiveTransportUs.clear();
  for (const CollectiveTask &task : model.step.collectives) {
    double us =
        host.getTransportUs(task.cost.sentBytes, task.cost.gatheredBytes,
                            task.cost.gatheredCollectives);
    model.collectiveTransportUs.push_back(us);
    transportUs += us;
  }
  const double scale = host.getCpuScale();
  double spread = host.stepUs * scale + transportUs;
  spreadUs = spread;
  return host.busyShare() *
             (scale * computeUs + host.getLocalCpuScale() * localUs) +
         spread;
}

/// Runs the model's compute as the host's ranks share its cores: every
/// compute task takes HostCpu::lockstepStretch() times its duration, and
/// where the durations leave out the bridge's own work, the step thread
/// does the host's cost per step at the end of the step, likewise
/// stretched (docs/CostModel.md, section 3.1).
static void applyHostSharing(StepModel &model, const HostCpu &host) {
  if (!host.isDescribed())
    return;
  double stretch = host.lockstepStretch();
  for (ComputeTask &task : model.step.computeTasks)
    task.durationUs *= stretch;
  model.sharingInTimeline = host.stepCpuOnStepThread();
  if (model.sharingInTimeline && !model.step.computeTasks.empty())
    model.step.computeTasks.back().durationUs += host.stepUs * stretch;
}

FailureOr<StepModel> mlir::comm::buildStepModel(func::FuncOp func,
                                                const ClusterModel &cluster,
                                                const DeviceModel &device) {
  StepModel model;
  model.progressWhileComputing = device.computeOverlap;
  StepDescription &step = model.step;
  auto lastComputeTask = [&]() -> std::optional<size_t> {
    if (step.computeTasks.empty())
      return std::nullopt;
    return step.computeTasks.size() - 1;
  };
  // The cluster a collective runs on: all of `cluster`'s ranks, or the
  // ranks of its process group (ClusterModel::forGroup).
  CollectiveClusters clusters(cluster);
  auto addCollective = [&](Operation *op, ValueRange inputs,
                           CollectiveCost cost, double bytes, double localUs,
                           std::string label) -> CollectiveTask & {
    CollectiveTask task;
    task.label = std::move(label);
    task.cost = cost;
    task.issuedAfter = lastComputeTask();
    task.layers = getProducingLayers(inputs);
    step.collectives.push_back(std::move(task));
    model.collectiveOps.push_back(op);
    model.collectiveBytes.push_back(bytes);
    model.collectiveMembers.push_back(getMemberNames(op));
    model.collectiveLocalUs.push_back(localUs);
    model.collectiveArrivalUs.push_back(
        clusters.get(cast<CollectiveOpInterface>(op)).collectiveOverheadUs);
    return step.collectives.back();
  };
  // A dense allreduce of `op`'s gradients, each in the type it travels in
  // (a dynamic shape counts 0 bytes), by its algorithm (else the cluster's).
  auto addAllreduce = [&](CollectiveOpInterface op,
                          std::string label) -> CollectiveTask & {
    double bytes = 0.0;
    for (auto [index, type] : llvm::enumerate(op.getGradients().getTypes()))
      bytes += static_cast<double>(
          getGradientBytes(type,
                           op.getGradientWireType(static_cast<unsigned>(index)))
              .value_or(0));
    const ClusterModel &ranks = clusters.get(op);
    CollectiveCost cost = getDenseAllreduceCost(op, ranks, bytes);
    double localUs = getDenseLocalUs(op, ranks, device);
    cost.latencyUs += localUs;
    return addCollective(op, op.getGradients(), cost, bytes,
                         localUs + getWireCostUs(ranks, getNarrowedBytes(op)),
                         std::move(label));
  };

  // A reduce-scatter or all-gather: one pass of the ring over the flat
  // tensor (a reduce-scatter's operands, an all-gather's results or output
  // buffers) in the type it travels in, plus packing where the wire
  // narrows it.
  auto addSharded = [&](CollectiveOpInterface op,
                        std::string label) -> CollectiveTask & {
    Operation *collective = op.getOperation();
    bool scatters = isa<ReduceScatterOp, ReduceScatterStartOp>(collective);
    TypeRange wholes;
    if (scatters)
      wholes = op.getGradients().getTypes();
    else if (auto gather = dyn_cast<AllGatherOp>(collective))
      wholes = gather->getNumResults() > 0
                   ? TypeRange(gather.getResultTypes())
                   : TypeRange(gather.getOutputs().getTypes());
    else if (auto start = cast<AllGatherStartOp>(collective);
             !start.getOutputs().empty())
      wholes = start.getOutputs().getTypes();
    else
      // In tensor form its comm.wait returns the whole tensors.
      wholes = (*start.getToken().getUsers().begin())->getResultTypes();
    double bytes = 0, ownBytes = 0;
    for (Type whole : wholes) {
      bytes += static_cast<double>(
          getGradientBytes(whole, op.getWireType()).value_or(0));
      ownBytes +=
          static_cast<double>(getGradientBytes(whole, Type()).value_or(0));
    }
    const ClusterModel &ranks = clusters.get(op);
    CollectiveCost cost = scatters ? reduceScatterCost(ranks, bytes)
                                   : allgatherCost(ranks, bytes);
    double wireUs = op.getWireType() ? getWireCostUs(ranks, ownBytes) : 0.0;
    cost.latencyUs += wireUs;
    return addCollective(op, op.getGradients(), cost, bytes, wireUs,
                         std::move(label));
  };

  // The step is the function's top-level block: a collective inside a
  // loop's body or a branch would be missing from its price.
  Operation *unpriced = nullptr;
  size_t numOps = 0, numCollectives = 0;
  func.walk([&](Operation *op) {
    ++numOps;
    if (!isa<CollectiveOpInterface>(op))
      return WalkResult::advance();
    ++numCollectives;
    if (op->getBlock() == &func.getBody().front())
      return WalkResult::advance();
    unpriced = op;
    return WalkResult::interrupt();
  });
  if (unpriced)
    return unpriced->emitOpError(
        "cannot be estimated: it is in a nested region (a loop's body or a "
        "branch), and the step model prices the collectives of the "
        "function's body only");
  // Sized once: grown task by task, the vectors would be reallocated some
  // twenty times for 10^5 tasks, and each time every collective task copied
  // (its SmallVector's move is not noexcept, so std::vector copies it).
  step.collectives.reserve(numCollectives);
  model.collectiveOps.reserve(numCollectives);
  model.collectiveBytes.reserve(numCollectives);
  model.collectiveMembers.reserve(numCollectives);
  model.collectiveLocalUs.reserve(numCollectives);
  model.collectiveArrivalUs.reserve(numCollectives);
  step.computeTasks.reserve(numOps - numCollectives);
  model.computeOps.reserve(numOps - numCollectives);

  // Collectives started but not yet waited on, by their start op.
  llvm::DenseMap<Operation *, size_t> inFlight;
  // Puts the collective just added for `start` on its channel.
  auto scheduleStarted =
      [&](StartedCollectiveOpInterface start) -> LogicalResult {
    uint64_t channel = start.getChannel();
    if (channel >= cluster.channels)
      return start->emitOpError("cannot be estimated: channel ")
             << channel << " is not one of the cluster's " << cluster.channels
             << " channel(s)";
    CollectiveTask &task = step.collectives.back();
    task.channel = static_cast<unsigned>(channel);
    task.priority = start.getPriority();
    if (start.getToken().getUsers().begin()->getBlock() !=
        &func.getBody().front())
      return start->emitOpError("cannot be estimated: its comm.wait is in "
                                "another block");
    inFlight[start] = step.collectives.size() - 1;
    return success();
  };
  // The training bridge's work on the compute thread (DeviceModel::bridge):
  // a gradient's hook and, with momentum correction, the correction run by
  // the task that produces the gradient (by its op); the masking of a
  // sparse allreduce's velocity by the task that follows its wait (by the
  // collective's index).
  bool momentumCorrection = isMomentumCorrected(func);
  llvm::DenseMap<Operation *, double> bridgeUsOf;
  llvm::DenseSet<Value> hooked;
  SmallVector<std::pair<size_t, double>> maskUs;
  auto addBridgeUs = [&](Value gradient, double us) {
    if (Operation *producer = gradient.getDefiningOp(); producer && us > 0)
      bridgeUsOf[producer] += us;
  };
  // A sparse allreduce: its exchange and its local steps. Started, the
  // runtime's channel runs both while compute goes on, so both occupy the
  // channel, the local steps at the device's channel slowdown.
  auto addSparse =
      [&](SparseCollectiveOpInterface sparse) -> FailureOr<CollectiveTask *> {
    auto type = cast<ShapedType>(sparse.getGrad().getType());
    if (!type.hasStaticShape())
      return sparse->emitOpError("cannot be estimated: its gradient has a "
                                 "dynamic shape");
    SparseGradient gradient = describeSparseGradient(
        type, sparse.getDensityValue(), sparse.getChunkElementCount());
    if (sparse.getSelect() == SelectKind::rows) {
      gradient.rowElements = sparse.getChunkElementCount();
      gradient.coo = sparse->hasAttr(kCooGradientAttrName);
    }
    gradient.reducedDensity = sparse.getUnionDensityValue();
    auto collective = cast<CollectiveOpInterface>(sparse.getOperation());
    double localUs;
    CollectiveCost cost = getSparseAllreduceCost(
        clusters.get(collective), device, sparse.getSelect(),
        sparse.getExchange(), collective.getReduceKind(), gradient,
        /*onChannel=*/isa<SparseStartOp>(sparse.getOperation()), &localUs);
    if (momentumCorrection && sparse.getSelect() != SelectKind::rows) {
      // The bridge corrects the gradient in its hook and masks the velocity
      // once the collective is waited for (not for the lossless rows
      // exchange, which keeps no residual).
      double elements = static_cast<double>(type.getNumElements());
      addBridgeUs(sparse.getGrad(), elements * device.bridge.momentumNs * 1e-3);
      maskUs.push_back(
          {step.collectives.size(), elements * device.bridge.maskNs * 1e-3});
    }
    return &addCollective(sparse, sparse.getGrad(), cost,
                          getCollectiveBytes(type, Type()), localUs,
                          getLabel(collective));
  };
  for (Operation &op : func.getBody().front()) {
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      std::optional<TransportKind> transport =
          collective.getCollectiveTransport();
      if (transport && !cluster.onTransport(getCollectiveBackend(*transport))) {
        InFlightDiagnostic diag = op.emitError()
                                  << "its transport '"
                                  << stringifyTransportKind(*transport)
                                  << "' is not a backend of cluster '"
                                  << cluster.name << "', which has '"
                                  << stringifyCollectiveBackend(cluster.backend)
                                  << "'";
        if (cluster.alternate)
          diag << " and '"
               << stringifyCollectiveBackend(cluster.alternate->backend) << "'";
        diag << ": describe the second backend as the cluster's `alternate` "
                "(docs/Cluster.md), or leave `transport` out";
        return failure();
      }
      for (Value gradient : collective.getGradients())
        if (hooked.insert(gradient).second)
          addBridgeUs(gradient, device.bridge.hookUs);
      CollectiveTask *task;
      if (auto sparse = dyn_cast<SparseCollectiveOpInterface>(op)) {
        FailureOr<CollectiveTask *> added = addSparse(sparse);
        if (failed(added))
          return failure();
        task = *added;
      } else if (isa<ReduceScatterOp, AllGatherOp, ReduceScatterStartOp,
                     AllGatherStartOp>(op)) {
        task = &addSharded(collective, getLabel(collective));
      } else {
        task = &addAllreduce(collective, getLabel(collective));
      }
      if (auto start = dyn_cast<StartedCollectiveOpInterface>(op)) {
        if (failed(scheduleStarted(start)))
          return failure();
      } else {
        task->blocking = true;
        // The bridge hands a blocking call to a thread of its own and waits.
        task->cost.latencyUs += device.bridge.blockingCallUs;
        model.collectiveArrivalUs.back() += device.bridge.blockingCallUs;
      }
      continue;
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      // The next compute task cannot start before the collective ends.
      step.collectives[inFlight.lookup(wait.getStartingOp())].waitBefore =
          step.computeTasks.size();
      continue;
    }

    double costUs = estimateComputeUs(&op, device);
    auto compute = dyn_cast<ComputeOp>(op);
    if (!compute && costUs <= 0.0)
      continue;
    ComputeTask task;
    task.durationUs = costUs;
    if (compute) {
      task.label =
          compute.getName().value_or(op.getName().getStringRef()).str();
      task.phase = getTaskPhase(compute);
      if (compute.getLayer())
        task.layer = static_cast<int64_t>(*compute.getLayer());
      // A forward step of no particular layer (a profile's whole forward
      // pass) waits for no layer's gradients in particular: in steady state,
      // for every gradient of the previous step.
      if (task.phase == TaskPhase::Forward && task.layer < 0)
        task.phase = TaskPhase::Other;
    } else {
      task.label = op.getName().getStringRef().str();
    }
    model.hasLayeredForward |=
        task.phase == TaskPhase::Forward && task.layer >= 0;
    step.computeTasks.push_back(std::move(task));
    model.computeOps.push_back(&op);
  }

  // The bridge's work, on the tasks that run it; masking after a wait at
  // the end of the step, on a task of its own there.
  for (auto [task, op] : llvm::enumerate(model.computeOps))
    step.computeTasks[task].durationUs += bridgeUsOf.lookup(op);
  double trailingMaskUs = 0;
  for (auto [index, us] : maskUs) {
    const CollectiveTask &collective = step.collectives[index];
    std::optional<size_t> after =
        collective.blocking
            ? std::optional<size_t>(
                  collective.issuedAfter ? *collective.issuedAfter + 1 : 0)
            : collective.waitBefore;
    if (after && *after < step.computeTasks.size())
      step.computeTasks[*after].durationUs += us;
    else
      trailingMaskUs += us;
  }
  if (trailingMaskUs > 0) {
    ComputeTask task;
    task.durationUs = trailingMaskUs;
    task.label = "momentum masking";
    step.computeTasks.push_back(std::move(task));
    model.computeOps.push_back(model.collectiveOps[maskUs.back().first]);
    // Its collectives are waited for before it.
    for (auto [index, us] : maskUs)
      if (!step.collectives[index].blocking &&
          !step.collectives[index].waitBefore)
        step.collectives[index].waitBefore = step.computeTasks.size() - 1;
  }

  model.cpuUs = getStepCpuUs(model, device, model.cpuSpreadUs);
  model.cpuBoundUs = device.hostCpu.boundUs(model.cpuUs);
  applyHostSharing(model, device.hostCpu);

  // Without per-layer forward tasks, no forward task waits for a layer's
  // gradients: they must all be reduced before the next step starts.
  if (!model.hasLayeredForward)
    for (CollectiveTask &task : step.collectives)
      task.layers.clear();
  // A comm.wait after the last compute task only hands the gradients to the
  // next step, where the forward of their layers needs them: no wait point.
  for (CollectiveTask &task : step.collectives)
    if (task.waitBefore == step.computeTasks.size() && !task.layers.empty())
      task.waitBefore.reset();
  return model;
}

StringRef mlir::comm::stringifySimulationMode(SimulationMode mode) {
  switch (mode) {
  case SimulationMode::Step:
    return "step";
  case SimulationMode::SteadyState:
    return "steady";
  }
  llvm_unreachable("unknown simulation mode");
}

std::optional<SimulationMode>
mlir::comm::symbolizeSimulationMode(StringRef spelling) {
  if (spelling == "step")
    return SimulationMode::Step;
  if (spelling == "steady")
    return SimulationMode::SteadyState;
  return std::nullopt;
}

ArrayRef<ComputeEvent> StepTimeline::getShownComputeEvents() const {
  return ArrayRef(result.computeEvents)
      .slice(firstIteration * numTasks, numIterations * numTasks);
}

ArrayRef<CollectiveEvent> StepTimeline::getShownCollectiveEvents() const {
  return ArrayRef(result.collectiveEvents)
      .slice(firstIteration * numCollectives, numIterations * numCollectives);
}

const CollectiveEvent &StepTimeline::getFirstShownEvent(size_t index) const {
  return result.collectiveEvents[firstIteration * numCollectives + index];
}

double StepTimeline::getComputeIdleUs(double startUs, double endUs) const {
  if (endUs <= startUs)
    return 0.0;
  ArrayRef<ComputeEvent> events = result.computeEvents;
  // Busy time in [0, t): whole events that end by t, plus the part of the
  // one that runs at t. Events run one after another, so both their starts
  // and their ends are sorted.
  auto busyBefore = [&](double t) {
    size_t ended =
        llvm::partition_point(
            events, [&](const ComputeEvent &e) { return e.endUs <= t; }) -
        events.begin();
    double busy = busyPrefixUs[ended];
    if (ended < events.size() && events[ended].startUs < t)
      busy += t - events[ended].startUs;
    return busy;
  };
  double busy = busyBefore(endUs) - busyBefore(startUs);
  return std::max(0.0, (endUs - startUs) - busy);
}

/// The part of collective `index`'s time during which the host's cores still
/// work: its local work and the ranks' arrival.
static double getCpuWorkUs(const StepModel &model, size_t index) {
  return model.collectiveLocalUs[index] + model.collectiveArrivalUs[index];
}

/// The time the ranks wait on collective `index` of `timeline` with no
/// compute beside it: its time that no compute task hides, less its local
/// work and the ranks' arrival (getCpuWorkUs); `networkUs` is set to the
/// collective's time less those.
static double getNetworkWaitUs(const StepModel &model,
                               const StepTimeline &timeline, size_t index,
                               double &networkUs) {
  const CollectiveEvent &event = timeline.getFirstShownEvent(index);
  const double cpuWorkUs = getCpuWorkUs(model, index);
  networkUs = event.endUs - event.startUs - cpuWorkUs;
  return std::max(0.0, timeline.getComputeIdleUs(event.startUs, event.endUs) -
                           cpuWorkUs);
}

double mlir::comm::getAloneHostBoundUs(const StepModel &model,
                                       const StepTimeline &timeline,
                                       const HostCpu &host, size_t index) {
  if (!host.isDescribed() || index >= model.collectiveTransportUs.size())
    return 0.0;
  const CollectiveEvent &event = timeline.getFirstShownEvent(index);
  const double localUs = model.collectiveLocalUs[index];
  const double transportUs = model.collectiveTransportUs[index];
  const double cpuUs =
      host.getLocalCpuScale() * host.busyShare() * localUs + transportUs;
  const double networkUs =
      event.endUs - event.startUs - getCpuWorkUs(model, index);
  return host.boundUs(cpuUs) +
         std::max(0.0, networkUs - host.boundUs(transportUs));
}

llvm::Expected<StepTimeline>
mlir::comm::simulateStepModel(const StepModel &model,
                              const ClusterModel &cluster, SimulationMode mode,
                              const SteadyStateOptions &steadyState) {
  SimulationOptions options = SimulationOptions::fromCluster(cluster);
  options.progressWhileComputing = model.progressWhileComputing;
  llvm::Expected<TimelineResult> result =
      mode == SimulationMode::Step
          ? simulateStep(model.step, options)
          : simulateSteadyState(model.step, options, steadyState);
  if (!result)
    return result.takeError();

  StepTimeline timeline;
  timeline.result = std::move(*result);
  timeline.mode = mode;
  timeline.numTasks = model.step.computeTasks.size();
  timeline.numCollectives = model.step.collectives.size();
  if (mode == SimulationMode::SteadyState) {
    timeline.firstIteration = steadyState.warmupIterations;
    timeline.numIterations = steadyState.measuredIterations;
  }

  const TimelineResult &events = timeline.result;
  timeline.busyPrefixUs.reserve(events.computeEvents.size() + 1);
  timeline.busyPrefixUs.push_back(0.0);
  for (const ComputeEvent &event : events.computeEvents)
    timeline.busyPrefixUs.push_back(timeline.busyPrefixUs.back() +
                                    (event.endUs - event.startUs));

  // A host that cannot give its ranks the CPU the step needs bounds it,
  // however the timeline overlaps; and while every rank waits on the
  // network with nothing to compute, its cores idle on top of that.
  timeline.simulatedStepUs = timeline.result.stepUs;
  if (model.cpuBoundUs > 0 && model.cpuUs > 0 && model.sharingInTimeline) {
    // The ranks compute in step, so they wait on a collective no compute
    // hides together, and their cores then do only its transport's CPU
    // (what the ranks need of them in that wait: cpuBoundUs / cpuUs times
    // it); none of the step's other CPU fills the rest of the wait.
    double coresPerCpuUs = model.cpuBoundUs / model.cpuUs;
    for (size_t index = 0; index < timeline.numCollectives; ++index) {
      double networkUs = 0;
      double waitUs = getNetworkWaitUs(model, timeline, index, networkUs);
      if (networkUs <= 0 || waitUs <= 0)
        continue;
      // The transport's CPU runs as its bytes move: the part of it in the
      // wait is the wait's part of the collective's time on the network.
      double transportUs = model.collectiveTransportUs[index] *
                           std::min(1.0, waitUs / networkUs);
      timeline.networkIdleUs +=
          std::max(0.0, waitUs - coresPerCpuUs * transportUs);
    }
    timeline.hostBoundUs = model.cpuBoundUs + timeline.networkIdleUs;
  } else if (model.cpuBoundUs > 0 && model.cpuUs > 0) {
    double networkUs = 0;
    for (size_t index = 0; index < timeline.numCollectives; ++index)
      timeline.networkIdleUs +=
          getNetworkWaitUs(model, timeline, index, networkUs);
    // The CPU no task does runs spread over the step; what of it falls in
    // the idle times fills idle cores.
    double simulatedUs = timeline.simulatedStepUs;
    double idleShare = simulatedUs > 0
                           ? std::min(1.0, timeline.networkIdleUs / simulatedUs)
                           : 0.0;
    double busyCpuUs = model.cpuUs - model.cpuSpreadUs * idleShare;
    timeline.hostBoundUs =
        model.cpuBoundUs * (busyCpuUs / model.cpuUs) + timeline.networkIdleUs;
  }
  if (timeline.hostBoundUs > timeline.result.stepUs) {
    timeline.result.stepUs = timeline.hostBoundUs;
    timeline.result.exposedCommunicationUs =
        std::max(0.0, timeline.hostBoundUs - timeline.result.computeUs);
  }

  // The first shown iteration starts with its first compute task, or
  // earlier with a collective issued at the start of the iteration.
  double origin = std::numeric_limits<double>::infinity();
  if (timeline.numTasks > 0)
    origin = events.computeEvents[timeline.firstIteration * timeline.numTasks]
                 .startUs;
  for (size_t c = 0; c < timeline.numCollectives; ++c)
    origin = std::min(origin, timeline.getFirstShownEvent(c).startUs);
  timeline.originUs = std::isfinite(origin) ? origin : 0.0;
  return timeline;
}
