//===- Pipelines.cpp - commopt's pass pipelines and registration ----------===//
//
// Builds the pipelines that chain commopt's passes with upstream ones, and
// registers passes and pipelines for command-line tools.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Passes.h"

#include "CommDialect/Analysis/ClusterModel.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void comm::buildLowerToLLVMPipeline(OpPassManager &pm,
                                    const LowerToLLVMOptions &options) {
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
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

void comm::buildOptimizePipeline(OpPassManager &pm,
                                 const OptimizeOptions &options) {
  if (options.sparse) {
    CommSparsifyOptions sparsify;
    sparsify.cluster = options.cluster;
    sparsify.density = options.density;
    sparsify.select = options.sparseSelect;
    sparsify.exchange = options.sparseExchange;
    sparsify.chunkElements = options.sparseChunkElements;
    sparsify.minBytes = options.sparseMinBytes;
    pm.addPass(createCommSparsify(sparsify));
  }
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  if (options.wire != "none") {
    CommLowerPrecisionOptions precision;
    precision.wire = options.wire;
    precision.minBytes = options.wireMinBytes;
    precision.cluster = options.cluster;
    funcPm.addPass(createCommLowerPrecision(precision));
  }
  if (options.fusion != "none") {
    CommFuseBucketsOptions fuse;
    fuse.policy = options.fusion;
    fuse.bucketCapMb = options.bucketCapMb;
    fuse.cluster = options.cluster;
    fuse.device = options.device;
    funcPm.addPass(createCommFuseBuckets(fuse));
  }
  CommScheduleOverlapOptions overlap;
  // The cluster's channel count, when it can be read; a cluster that cannot
  // is reported by the passes that need it.
  overlap.channels = options.channels;
  if (options.channels == 0) {
    llvm::Expected<ClusterModel> cluster = ClusterModel::parse(options.cluster);
    overlap.channels = cluster ? static_cast<int>(cluster->channels) : 1;
    llvm::consumeError(cluster.takeError());
  }
  overlap.priorities = options.priorities;
  overlap.partitionMb = options.partitionMb;
  funcPm.addPass(createCommScheduleOverlap(overlap));
  if (options.estimate != "none") {
    CommEstimateOptions estimate;
    estimate.cluster = options.cluster;
    estimate.device = options.device;
    estimate.mode = options.estimate;
    estimate.report = options.report;
    estimate.reportFile = options.reportFile;
    pm.addPass(createCommEstimate(estimate));
  }
}

void comm::registerCommOptPasses() {
  registerCommPasses();
  PassPipelineRegistration<LowerToLLVMOptions>(
      "commopt-lower-to-llvm",
      "Bufferize a module with comm ops, lower them to commrt runtime calls "
      "and everything to the LLVM dialect",
      buildLowerToLLVMPipeline);
  PassPipelineRegistration<OptimizeOptions>(
      "comm-optimize",
      "Plan gradient communication with the cost model of `cluster`: "
      "dense or sparse, wire precision, tensor fusion, overlap scheduling "
      "with channels and priorities, and an estimate",
      buildOptimizePipeline);
}
