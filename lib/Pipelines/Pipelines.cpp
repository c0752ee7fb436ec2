//===- Pipelines.cpp - commopt's pass pipelines and registration ----------===//
//
// Builds the pipelines that chain commopt's passes with upstream ones, and
// registers passes and pipelines for command-line tools.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Passes.h"

#include "CommOpt/Analysis/ClusterModel.h"
#include "CommOpt/Analysis/PlanningCluster.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;

/// The option names of `options`.
static SmallVector<std::string>
getOptionNames(const detail::PassOptions &options) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  options.print(os);
  return comm::getPrintedOptionNames(printed);
}

void comm::buildLowerToLLVMPipeline(OpPassManager &pm,
                                    const LowerToLLVMOptions &options) {
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
  // Before deallocation, which would otherwise manage the residual copies.
  pm.addNestedPass<func::FuncOp>(comm::createCommForwardResiduals());
  bufferization::buildBufferDeallocationPipeline(pm);
  // Deallocation clones buffers of unknown ownership, e.g. a sparse
  // allreduce's gradient returned from a step that also stores a residual.
  pm.addPass(createConvertBufferizationToMemRefPass());
  ConvertCommToRuntimeOptions lowering;
  lowering.computeDelay = options.computeDelay;
  pm.addPass(comm::createConvertCommToRuntime(lowering));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

LogicalResult comm::verifyOptimizeOptions(
    const OptimizeOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  auto fail = [&](StringRef option, const Twine &message) {
    return errorHandler("comm-optimize: option '" + option + "': " + message);
  };
  auto positive = [](double value) {
    return value > 0.0 && std::isfinite(value);
  };
  if (!positive(options.bucketCapMb))
    return fail("bucket-cap-mb",
                "expected a positive finite size in MiB, got " +
                    llvm::formatv("{0}", options.bucketCapMb.getValue()));
  if (options.channels < 0 || options.channels > kMaxChannels)
    return fail("channels", "expected 0 (the cluster's) or a count up to " +
                                Twine(kMaxChannels) + ", got " +
                                Twine(options.channels));
  if (!(options.partitionMb >= 0.0) || std::isinf(options.partitionMb))
    return fail("partition-mb",
                "expected a non-negative finite size in MiB, got " +
                    llvm::formatv("{0}", options.partitionMb.getValue()));
  if (options.wireMinBytes < 0)
    return fail("wire-min-bytes", "expected a non-negative byte count, got " +
                                      Twine(options.wireMinBytes));
  if (!(options.density > 0.0 && options.density <= 1.0))
    return fail("density",
                "expected a fraction in (0, 1], got " +
                    llvm::formatv("{0}", options.density.getValue()));
  if (options.sparseMinBytes < 0)
    return fail("sparse-min-bytes", "expected a non-negative byte count, got " +
                                        Twine(options.sparseMinBytes));
  if (options.sparseChunkElements <= 0)
    return fail("sparse-chunk-elements",
                "expected a positive element count, got " +
                    Twine(options.sparseChunkElements));
  if (options.sparseWarmupSteps < 0)
    return fail("sparse-warmup-steps",
                "expected a non-negative step count, got " +
                    Twine(options.sparseWarmupSteps));
  if (!(options.sparseWarmupDensity > 0.0 &&
        options.sparseWarmupDensity <= 1.0))
    return fail(
        "sparse-warmup-density",
        "expected a fraction in (0, 1], got " +
            llvm::formatv("{0}", options.sparseWarmupDensity.getValue()));
  if (!(options.lossyMargin >= 0.0 && options.lossyMargin < 1.0))
    return fail("lossy-margin",
                "expected a fraction of the step in [0, 1), got " +
                    llvm::formatv("{0}", options.lossyMargin.getValue()));
  if (options.shard == ShardStage::None) {
    for (const llvm::cl::Option *shardOption :
         {static_cast<const llvm::cl::Option *>(&options.shardMemoryLimitMb),
          static_cast<const llvm::cl::Option *>(&options.shardPrefetch)})
      if (shardOption->getNumOccurrences() > 0)
        return fail(shardOption->ArgStr,
                    "applies to sharded plans only; add shard=grad or "
                    "shard=full");
  } else {
    if (failed(verifyShardPlanOptions(
            options.shardMemoryLimitMb, options.shardPrefetch,
            "shard-memory-limit-mb", "shard-prefetch", fail)))
      return failure();
    if (options.sparse)
      return fail("sparse", "a sharded plan reduce-scatters every gradient "
                            "dense; leave sparse out with shard");
  }
  // The report's options would be dropped without a word.
  if (options.estimate == EstimateMode::None)
    for (const llvm::cl::Option *reportOption :
         {static_cast<const llvm::cl::Option *>(&options.report),
          static_cast<const llvm::cl::Option *>(&options.reportFile)})
      if (reportOption->getNumOccurrences() > 0)
        return fail(reportOption->ArgStr,
                    "there is no report without an estimate; add "
                    "estimate=step or estimate=steady");
  if (!options.cluster.empty()) {
    llvm::Expected<std::shared_ptr<const ClusterModel>> cluster =
        loadSharedCluster(options.cluster);
    if (!cluster)
      return fail("cluster", llvm::toString(cluster.takeError()));
  }
  return success();
}

/// Adds comm-lower-precision with the wire options of `options` to
/// `funcPm`, unless `wire=none`.
static void addLowerPrecision(OpPassManager &funcPm,
                              const comm::OptimizeOptions &options) {
  if (options.wire == comm::WirePrecision::None)
    return;
  comm::CommLowerPrecisionOptions precision;
  precision.wire = options.wire;
  precision.minBytes = options.wireMinBytes;
  precision.cluster = options.cluster;
  funcPm.addPass(comm::createCommLowerPrecision(precision));
}

void comm::buildBucketingPasses(OpPassManager &pm,
                                const OptimizeOptions &options) {
  // Lossless and priced (dense wins ties), so always on; a no-op without
  // gradients whose profile measured comm.rows_touched.
  CommExchangeRowsOptions rows;
  rows.cluster = options.cluster;
  rows.exchange = options.rowsExchange;
  rows.device = options.device;
  rows.sparseOverlap = options.sparseOverlap;
  pm.addNestedPass<func::FuncOp>(createCommExchangeRows(rows));
  if (options.sparse) {
    CommSparsifyOptions sparsify;
    sparsify.cluster = options.cluster;
    sparsify.density = options.density;
    sparsify.select = options.sparseSelect;
    sparsify.exchange = options.sparseExchange;
    sparsify.chunkElements = options.sparseChunkElements;
    sparsify.minBytes = options.sparseMinBytes;
    sparsify.device = options.device;
    sparsify.exclude = options.sparseExclude;
    sparsify.all = options.sparseAll;
    // Priced as comm-schedule-overlap will run them.
    sparsify.sparseOverlap = options.sparseOverlap;
    pm.addPass(createCommSparsify(sparsify));
  }
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  addLowerPrecision(funcPm, options);
  if (options.fusion != FusionPolicy::None) {
    CommFuseBucketsOptions fuse;
    fuse.policy = options.fusion;
    fuse.bucketCapMb = options.bucketCapMb;
    fuse.cluster = options.cluster;
    fuse.device = options.device;
    // comm-select-algorithm follows and gives each bucket the cheapest.
    fuse.cheapestAlgorithm = options.algorithm == AlgorithmChoice::Auto;
    fuse.mixedWire = options.mixedWire;
    // Sparse allreduces share the channel, started or blocking as
    // comm-schedule-overlap will run them.
    fuse.sparseOverlap = options.sparseOverlap;
    funcPm.addPass(createCommFuseBuckets(fuse));
  }
}

void comm::buildSchedulingPasses(OpPassManager &pm,
                                 const OptimizeOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  CommScheduleOverlapOptions overlap;
  // 0: the channels of the cluster recorded by comm-record-cluster.
  overlap.channels = options.channels;
  overlap.priorities = options.priorities;
  overlap.partitionMb = options.partitionMb;
  overlap.sparse = options.sparseOverlap;
  funcPm.addPass(createCommScheduleOverlap(overlap));
  // On the collectives as they will run: fused, split and in their wire
  // type.
  CommSelectAlgorithmOptions select;
  select.algorithm = options.algorithm;
  select.cluster = options.cluster;
  funcPm.addPass(createCommSelectAlgorithm(select));
}

void comm::buildPlanningPasses(OpPassManager &pm,
                               const OptimizeOptions &options) {
  buildBucketingPasses(pm, options);
  buildSchedulingPasses(pm, options);
}

void comm::buildOptimizePipeline(OpPassManager &pm,
                                 const OptimizeOptions &options) {
  CommRecordClusterOptions record;
  record.cluster = options.cluster;
  record.momentumCorrection = options.momentumCorrection;
  record.sparseWarmupSteps = options.sparseWarmupSteps;
  record.sparseWarmupDensity = options.sparseWarmupDensity;
  pm.addPass(createCommRecordCluster(record));
  if (options.shard != ShardStage::None) {
    // Sharded plans are chosen by comm-shard-data-parallel's own search
    // (unit size and prefetch depth within the memory limit). Precision is
    // chosen per gradient first, as for buckets: a unit's gradients share
    // a wire type.
    addLowerPrecision(pm.nest<func::FuncOp>(), options);
    CommShardDataParallelOptions shard;
    shard.stage = options.shard;
    shard.bucketCapMb = options.bucketCapMb;
    shard.prefetch = options.shardPrefetch;
    shard.memoryLimitMb = options.shardMemoryLimitMb;
    shard.cluster = options.cluster;
    shard.device = options.device;
    pm.addPass(createCommShardDataParallel(shard));
  } else {
    pm.addPass(createPlanSearchPass(options));
  }
  if (options.estimate != EstimateMode::None) {
    CommEstimateOptions estimate;
    estimate.cluster = options.cluster;
    estimate.device = options.device;
    estimate.mode = options.estimate;
    estimate.report = options.report;
    estimate.reportFile = options.reportFile;
    pm.addPass(createCommEstimate(estimate));
  }
}

/// Registers a pipeline whose option string is checked: unknown option
/// names get the nearest valid spelling, and `verify` checks the values,
/// both naming the pipeline and the option as the user typed them.
template <typename Options>
static void registerCheckedPipeline(
    StringRef argument, StringRef description,
    std::function<LogicalResult(const Options &,
                                function_ref<LogicalResult(const Twine &)>)>
        verify,
    std::function<void(OpPassManager &, const Options &)> build) {
  std::string name = argument.str();
  registerPassPipeline(
      argument, description,
      [name, verify,
       build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        SmallVector<std::string> names = getOptionNames(options);
        SmallVector<StringRef> known(names.begin(), names.end());
        if (failed(comm::checkOptionNames(name, text, known, errorHandler)))
          return failure();
        if (failed(comm::parseCheckedOptions(
                name, text,
                [&](llvm::raw_ostream &errors) {
                  return options.parseFromString(text, errors);
                },
                errorHandler)))
          return failure();
        if (failed(verify(options, errorHandler)))
          return failure();
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

ArrayRef<StringRef> comm::getCommOptPassArguments() {
  static constexpr StringRef arguments[] = {"comm-optimize",
                                            "commopt-lower-to-llvm",
                                            "comm-import-shard",
                                            "comm-record-cluster",
                                            "comm-shard-data-parallel",
                                            "comm-sparsify",
                                            "comm-lower-precision",
                                            "comm-fuse-buckets",
                                            "comm-schedule-overlap",
                                            "comm-select-algorithm",
                                            "comm-estimate",
                                            "comm-add-step-driver",
                                            "comm-forward-residuals",
                                            "convert-comm-to-runtime"};
  return arguments;
}

void comm::registerCommOptPasses() {
  registerCommPasses();
  registerCheckedPipeline<LowerToLLVMOptions>(
      "commopt-lower-to-llvm",
      "Bufferize a module with comm ops, lower them to commrt runtime calls "
      "and everything to the LLVM dialect",
      [](const LowerToLLVMOptions &,
         function_ref<LogicalResult(const Twine &)>) { return success(); },
      buildLowerToLLVMPipeline);
  registerCheckedPipeline<OptimizeOptions>(
      "comm-optimize",
      "Plan gradient communication with the cost model of `cluster`: "
      "dense or sparse, wire precision, tensor fusion, overlap scheduling "
      "with channels and priorities, and an estimate",
      verifyOptimizeOptions, buildOptimizePipeline);
}
