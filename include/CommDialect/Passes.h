//===- Passes.h - commopt passes and pipelines ------------------*- C++ -*-===//
//
// Declares every pass of commopt and the functions that register them and
// the pipelines built from them.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_PASSES_H
#define COMMDIALECT_PASSES_H

#include "CommDialect/PassOptionTypes.h"
#include "CommOpt/Analysis/ClusterModel.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace cf {
class ControlFlowDialect;
} // namespace cf
namespace func {
class FuncDialect;
} // namespace func
namespace linalg {
class LinalgDialect;
} // namespace linalg
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace memref {
class MemRefDialect;
} // namespace memref
namespace ml_program {
class MLProgramDialect;
} // namespace ml_program
namespace scf {
class SCFDialect;
} // namespace scf
namespace tensor {
class TensorDialect;
} // namespace tensor

namespace comm {

/// The bytes of a MiB, the unit of the `*-mb` options.
inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;

/// The function attribute on which comm-shard-data-parallel records its
/// choice (stage, shards, units, unit_cap_mb, prefetch, scatter_lag,
/// peak_bytes, memory_limit_mb, plans), which comm-estimate reports.
inline constexpr llvm::StringLiteral kShardPlanAttrName = "comm.shard_plan";

/// The most channels the runtime runs collectives on (COMMRT_MAX_CHANNELS):
/// the bound of `channels` in comm-schedule-overlap and comm-optimize, and
/// of a cluster description's.
inline constexpr int kMaxChannels = kMaxClusterChannels;

#define GEN_PASS_DECL
#include "CommDialect/CommPasses.h.inc"

/// The options of the `commopt-lower-to-llvm` pipeline.
struct LowerToLLVMOptions : public PassPipelineOptions<LowerToLLVMOptions> {
  Option<bool> computeDelay{
      *this, "compute-delay",
      llvm::cl::desc("Lower comm.compute to take its cost_us (the filling "
                     "of its outputs, then a sleep for the rest), so that a "
                     "profile's skeleton runs with its compute time "
                     "(default: false)"),
      llvm::cl::init(false)};
};

/// Adds to `pm` the passes that take a module whose gradients are tensors
/// through bufferization, `convert-comm-to-runtime` and the LLVM lowering,
/// ready for mlir-runner or mlir-translate --mlir-to-llvmir.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMOptions &options = {});

/// The options of the `comm-optimize` pipeline, passed through to its
/// passes; a default that a pass states is taken from that pass's options.
struct OptimizeOptions : public PassPipelineOptions<OptimizeOptions> {
  Option<std::string> cluster{
      *this, "cluster",
      llvm::cl::desc("Cluster preset (gradientflow-64, ib100-512, nvlink-8, "
                     "ethernet10-16, ib56-16) or description file the plan is "
                     "made for, recorded on the module (default: the cluster "
                     "the module records, else gradientflow-64)"),
      llvm::cl::init("")};
  Option<std::string> device{
      *this, "device",
      llvm::cl::desc("Device preset or JSON file for compute without a "
                     "profiled cost and for sparse allreduces' selection "
                     "(default: v100)"),
      llvm::cl::init(CommFuseBucketsOptions().device)};
  Option<FusionPolicy> fusion{
      *this, "fusion",
      llvm::cl::desc("Bucketing policy of comm-fuse-buckets (default: cost)"),
      llvm::cl::init(FusionPolicy::Cost),
      llvm::cl::values(COMMOPT_FUSION_POLICY_VALUES,
                       clEnumValN(FusionPolicy::None, "none", "no fusion"))};
  Option<double> bucketCapMb{
      *this, "bucket-cap-mb",
      llvm::cl::desc("Bucket cap in MiB for fusion=threshold (default: 25)"),
      llvm::cl::init(CommFuseBucketsOptions().bucketCapMb)};
  Option<int> channels{
      *this, "channels",
      llvm::cl::desc("Communication channels (0: the cluster's) (default: 0)"),
      llvm::cl::init(0)};
  Option<bool> priorities{
      *this, "priorities",
      llvm::cl::desc("Give collectives priorities from their layers "
                     "(default: true)"),
      llvm::cl::init(CommScheduleOverlapOptions().priorities)};
  Option<double> partitionMb{
      *this, "partition-mb",
      llvm::cl::desc("Split single gradients larger than this many MiB "
                     "(0: never) (default: 0)"),
      llvm::cl::init(CommScheduleOverlapOptions().partitionMb)};
  Option<WirePrecision> wire{
      *this, "wire",
      llvm::cl::desc("Wire precision of dense collectives (default: none)"),
      llvm::cl::init(WirePrecision::None),
      llvm::cl::values(
          clEnumValN(WirePrecision::None, "none", "full precision"),
          COMMOPT_WIRE_PRECISION_VALUES)};
  Option<int64_t> wireMinBytes{
      *this, "wire-min-bytes",
      llvm::cl::desc("Gradients smaller than this many bytes stay in full "
                     "precision (default: 65536)"),
      llvm::cl::init(CommLowerPrecisionOptions().minBytes)};
  Option<bool> mixedWire{
      *this, "mixed-wire",
      llvm::cl::desc("Let a bucket carry narrowed and full-precision "
                     "gradients in one message where the cost model finds "
                     "it faster (comm-fuse-buckets, fusion=cost) (default: "
                     "true)"),
      llvm::cl::init(CommFuseBucketsOptions().mixedWire)};
  Option<AlgorithmChoice> algorithm{
      *this, "algorithm",
      llvm::cl::desc("Allreduce algorithm of the dense collectives "
                     "(comm-select-algorithm): auto, the cheapest per "
                     "collective, or one for all (default: auto)"),
      llvm::cl::init(CommSelectAlgorithmOptions().algorithm),
      llvm::cl::values(COMMOPT_ALGORITHM_VALUES)};
  Option<RowsExchangeChoice> rowsExchange{
      *this, "rows-exchange",
      llvm::cl::desc("How gradients that are sparse by nature (their profile "
                     "measured comm.rows_touched) are exchanged, losslessly "
                     "(comm-exchange-rows's exchange) (default: auto)"),
      llvm::cl::init(CommExchangeRowsOptions().exchange),
      llvm::cl::values(COMMOPT_ROWS_EXCHANGE_VALUES)};
  Option<bool> sparse{
      *this, "sparse",
      llvm::cl::desc("Let gradients go sparse where the cost model says it "
                     "pays (comm-sparsify) (default: false)"),
      llvm::cl::init(false)};
  Option<double> density{
      *this, "density",
      llvm::cl::desc("Density of sparse gradients, in (0, 1] "
                     "(default: 0.001)"),
      llvm::cl::init(CommSparsifyOptions().density)};
  Option<SparseSelectChoice> sparseSelect{
      *this, "sparse-select",
      llvm::cl::desc("How sparse gradients select their entries for the "
                     "allgather and hash exchanges (default: threshold)"),
      llvm::cl::init(CommSparsifyOptions().select),
      llvm::cl::values(COMMOPT_SPARSE_SELECT_VALUES)};
  Option<SparseExchangeChoice> sparseExchange{
      *this, "sparse-exchange",
      llvm::cl::desc("How sparse gradients are exchanged (comm-sparsify's "
                     "exchange) (default: auto)"),
      llvm::cl::init(CommSparsifyOptions().exchange),
      llvm::cl::values(COMMOPT_SPARSE_EXCHANGE_VALUES)};
  Option<int64_t> sparseMinBytes{
      *this, "sparse-min-bytes",
      llvm::cl::desc("Gradients smaller than this stay dense "
                     "(comm-sparsify's min-bytes) (default: 1048576)"),
      llvm::cl::init(CommSparsifyOptions().minBytes)};
  Option<int64_t> sparseChunkElements{
      *this, "sparse-chunk-elements",
      llvm::cl::desc("Elements per chunk of the chunk exchange "
                     "(comm-sparsify's chunk-elements) (default: 32768)"),
      llvm::cl::init(CommSparsifyOptions().chunkElements)};
  Option<bool> sparseAll{
      *this, "sparse-all",
      llvm::cl::desc("Make every gradient of at least sparse-min-bytes "
                     "sparse with its cheapest exchange, not only where the "
                     "cost model finds it pays (comm-sparsify's all), for "
                     "studies of sparse plans' accuracy (default: false)"),
      llvm::cl::init(false)};
  Option<std::string> sparseExclude{
      *this, "sparse-exclude",
      llvm::cl::desc("Comma-separated parameters whose gradients stay dense "
                     "(comm-sparsify's exclude) (default: '')"),
      llvm::cl::init("")};
  Option<bool> momentumCorrection{
      *this, "momentum-correction",
      llvm::cl::desc("The plan trains with Deep Gradient Compression's "
                     "momentum correction of its sparse gradients, run by "
                     "the training bridge on the compute thread "
                     "(comm-record-cluster's momentum-correction) (default: "
                     "false)"),
      llvm::cl::init(false)};
  Option<int64_t> sparseWarmupSteps{
      *this, "sparse-warmup-steps",
      llvm::cl::desc("Deep Gradient Compression's warm-up: the bridge "
                     "lowers each sparse gradient's density from "
                     "sparse-warmup-density to the plan's over this many "
                     "steps (comm-record-cluster's sparse-warmup-steps) "
                     "(0: none) (default: 0)"),
      llvm::cl::init(0)};
  Option<double> sparseWarmupDensity{
      *this, "sparse-warmup-density",
      llvm::cl::desc("The density the warm-up starts at, in (0, 1] "
                     "(default: 0.25)"),
      llvm::cl::init(0.25)};
  Option<bool> sparseOverlap{
      *this, "sparse-overlap",
      llvm::cl::desc("Start sparse allreduces on a channel "
                     "(comm.sparse_start) so that their exchange overlaps "
                     "compute; false keeps them blocking "
                     "(comm-schedule-overlap's sparse) (default: true)"),
      llvm::cl::init(CommScheduleOverlapOptions().sparse)};
  Option<EstimateMode> estimate{
      *this, "estimate",
      llvm::cl::desc("Estimate the plan at the end (default: none)"),
      llvm::cl::init(EstimateMode::None),
      llvm::cl::values(clEnumValN(EstimateMode::None, "none", "no estimate"),
                       COMMOPT_ESTIMATE_MODE_VALUES)};
  Option<ReportFormat> report{
      *this, "report", llvm::cl::desc("The estimate's report (default: text)"),
      llvm::cl::init(CommEstimateOptions().report),
      llvm::cl::values(COMMOPT_REPORT_FORMAT_VALUES)};
  Option<std::string> reportFile{
      *this, "report-file",
      llvm::cl::desc("Where the estimate's report goes (-: stderr) "
                     "(default: -)"),
      llvm::cl::init(CommEstimateOptions().reportFile)};
  Option<double> lossyMargin{
      *this, "lossy-margin",
      llvm::cl::desc("How much faster, as a fraction of the step, a lossy "
                     "choice (a wire type narrower than the gradients, "
                     "sparse gradients) must make the simulated step to be "
                     "kept by the search, for each of the two it adds; "
                     "otherwise the plan stays lossless (default: 0.02)"),
      llvm::cl::init(0.02)};
  Option<bool> search{
      *this, "search",
      llvm::cl::desc("Plan with every subset of the plan-changing options "
                     "turned on (wire, sparse, sparse-overlap, partition-mb), "
                     "each on every channel count up to the plan's, and keep "
                     "the fastest in the model; false plans exactly the "
                     "options given (default: true)"),
      llvm::cl::init(true)};
  Option<ShardStage> shard{
      *this, "shard",
      llvm::cl::desc("Plan sharded data parallelism instead of allreduces "
                     "(comm-shard-data-parallel): grad (ZeRO-2) or full "
                     "(ZeRO-3, FSDP); fusion, sparse and partition-mb do not "
                     "apply, wire narrows the reduce-scatters "
                     "(default: none)"),
      llvm::cl::init(ShardStage::None),
      llvm::cl::values(
          clEnumValN(ShardStage::None, "none", "allreduce data parallelism"),
          COMMOPT_SHARD_STAGE_VALUES)};
  Option<double> shardMemoryLimitMb{
      *this, "shard-memory-limit-mb",
      llvm::cl::desc("With shard: the most MiB a rank's step may hold at "
                     "once (comm-shard-data-parallel's memory-limit-mb) "
                     "(0: no limit) (default: 0)"),
      llvm::cl::init(CommShardDataParallelOptions().memoryLimitMb)};
  Option<int64_t> shardPrefetch{
      *this, "shard-prefetch",
      llvm::cl::desc("With shard: units all-gathered ahead (-1: by cost) "
                     "(comm-shard-data-parallel's prefetch) (default: -1)"),
      llvm::cl::init(CommShardDataParallelOptions().prefetch)};
};

/// Checks the options of `comm-optimize` as a user typed them: each error
/// names the option and, for a choice, every valid value. Reports through
/// `errorHandler`.
/// Checks the options comm-shard-data-parallel and comm-optimize share: a
/// memory limit in MiB (non-negative, finite; 0 is none) and a prefetch
/// depth (-1, by cost, or 0 or more). `fail(option, message)` reports the
/// first bad one, under the option's name as the caller spells it.
LogicalResult verifyShardPlanOptions(
    double memoryLimitMb, int64_t prefetch, StringRef limitOption,
    StringRef prefetchOption,
    function_ref<LogicalResult(StringRef, const Twine &)> fail);

LogicalResult
verifyOptimizeOptions(const OptimizeOptions &options,
                      function_ref<LogicalResult(const Twine &)> errorHandler);

/// Adds commopt's planning pipeline to `pm` (on a module): the cluster
/// recorded on the module (`comm-record-cluster`), dense or sparse
/// per gradient (`comm-sparsify`, with `sparse`), wire precision
/// (`comm-lower-precision`, with `wire`), tensor fusion
/// (`comm-fuse-buckets`), overlap scheduling (`comm-schedule-overlap`), the
/// allreduce algorithm of each collective (`comm-select-algorithm`) and,
/// with `estimate`, `comm-estimate`.
void buildOptimizePipeline(OpPassManager &pm, const OptimizeOptions &options);

/// Adds the passes of comm-optimize that make the plan, without
/// comm-record-cluster before them and comm-estimate after (on a module).
void buildPlanningPasses(OpPassManager &pm, const OptimizeOptions &options);

/// The first part of buildPlanningPasses: the passes before the channels
/// matter (comm-sparsify, comm-lower-precision, comm-fuse-buckets).
void buildBucketingPasses(OpPassManager &pm, const OptimizeOptions &options);

/// The rest of buildPlanningPasses: comm-schedule-overlap, which puts the
/// collectives on `channels`, and comm-select-algorithm.
void buildSchedulingPasses(OpPassManager &pm, const OptimizeOptions &options);

/// The module attribute where comm-optimize records the plans its search
/// compared: an array of {options, step_us or failure, chosen}.
inline constexpr llvm::StringLiteral kPlanSearchAttrName = "comm.plan_search";

/// comm-optimize's search (lib/Pipelines/PlanSearch.cpp): plans the module
/// with every subset of the plan-changing options that `options` turns on
/// (wire, sparse, sparse-overlap, partition-mb), each scheduled on every
/// channel count from the plan's down to one, simulates each, and keeps the
/// fastest.
std::unique_ptr<Pass> createPlanSearchPass(const OptimizeOptions &options);

/// Registers every commopt pass and pipeline with the global registry, so
/// that they appear in an mlir-opt-style tool's command line.
void registerCommOptPasses();

/// The command-line arguments of commopt's pipelines and passes, in the
/// order a user meets them.
ArrayRef<StringRef> getCommOptPassArguments();

#define GEN_PASS_REGISTRATION
#include "CommDialect/CommPasses.h.inc"

} // namespace comm
} // namespace mlir

#endif // COMMDIALECT_PASSES_H
