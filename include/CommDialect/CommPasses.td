//===- CommPasses.td - Passes of commopt -------------------*- tablegen -*-===//

#ifndef COMM_PASSES_TD
#define COMM_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertCommToRuntime : Pass<"convert-comm-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower bufferized comm ops to calls into the commrt runtime";
  let description = [{
    Rewrites every `comm` op in buffer form (memref operands, after
    one-shot bufferization) into calls of the runtime's C ABI (`commrt_*`,
    see lib/Runtime/include/commrt/commrt.h). Each call's status is checked
    with `cf.assert`, so a failing collective stops the program with the
    runtime's message instead of continuing with wrong data. Non-contiguous
    memrefs are staged through a contiguous copy. Ops still in tensor form
    are an error: bufferize first.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def CommFuseBuckets : Pass<"comm-fuse-buckets", "::mlir::func::FuncOp"> {
  let summary = "Fuse gradient allreduces into buckets (tensor fusion)";
  let description = [{
    Groups `comm.allreduce` ops, in the order their gradients become ready
    (program order), into `comm.fused_allreduce` buckets. A bucket is placed
    where its last gradient is ready, so no collective moves before its
    operands; a bucket closes early when a result of one of its gradients is
    used. Only gradients with the same reduction, element type and wire
    settings share a bucket; buffer-form ops, gradients of dynamic shape and
    existing buckets are left alone.

    Policy `threshold` fills buckets up to `bucket-cap-mb` MiB (the first
    bucket up to `first-bucket-mb`). With `overflow=true` a bucket closes
    once it reaches the cap, as PyTorch DDP's does; with `overflow=false` a
    gradient that would push it past the cap starts the next bucket, as
    Horovod's fusion buffer and XLA's all-reduce combiner do. The peers'
    settings:

      DDP:          bucket-cap-mb=25 first-bucket-mb=1 overflow=true
      Horovod:      bucket-cap-mb=128 first-bucket-mb=0 overflow=false
                    (64 in Horovod's older documentation)
      XLA combiner: bucket-cap-mb=30 first-bucket-mb=0 overflow=false
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"threshold\"",
           "How bucket boundaries are chosen: threshold">,
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "Bucket size cap in MiB">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "Cap of the first bucket in MiB (0: same as bucket-cap-mb)">,
    Option<"overflow", "overflow", "bool", /*default=*/"true",
           "Close a bucket once it reaches the cap (true, DDP) rather than "
           "before it would exceed it (false, Horovod/XLA)">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

def CommEstimate : Pass<"comm-estimate", "::mlir::ModuleOp"> {
  let summary = "Simulate each training step on a cluster and report it";
  let description = [{
    Runs the timeline simulator of docs/CostModel.md on every function with
    a body: compute ops run in program order on one compute channel
    (`comm.compute` costs, `comm.cost_us` attributes, roofline estimates of
    linalg/arith/math ops on `device`); `comm.allreduce` and
    `comm.fused_allreduce` block compute until they end; `comm.start` /
    `comm.wait` overlap it, on the start's channel and by its priority.
    Collective times come from the alpha-beta model of `cluster`.

    `mode=step` simulates one step from a cold start. `mode=steady` repeats
    the step (2 warm-up and 4 measured iterations) so that the next step's
    forward of a layer waits only for that layer's gradients; the times are
    per iteration, averaged over the measured ones.

    The results are attached to the IR, so that later passes and scripts can
    read them:

    - on the function, `comm.estimate = {step_us, compute_us,
      communication_us, exposed_us, mode}`: the step (or iteration) time,
      the summed compute, the summed collective durations, and the time
      compute waits for communication (`step_us - compute_us`);
    - on every collective (`comm.allreduce`, `comm.fused_allreduce`,
      `comm.start`), `comm.start_us` and `comm.end_us`: when it ran, in
      microseconds from the start of the step (in steady state, of the first
      measured iteration).

    `report=text` prints a summary per function with the `top` collectives
    that compute hides least (exposed time: the part of a collective during
    which no compute runs), `report=json` a document with every collective
    for scripts (format in docs/Estimate.md), `report=none` nothing. The
    report goes to stderr, or to the file `report-file` names.

    Example:

    ```
    commopt-translate --import-pipedream resnet50.graph.txt \
      | commopt-opt --comm-fuse-buckets \
          --comm-estimate="cluster=ib100-512 mode=steady top=5"
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string",
           /*default=*/"\"gradientflow-64\"",
           "Cluster preset (gradientflow-64, ib100-512, nvlink-8, "
           "ethernet10-16, ib56-16) or path of a cluster description JSON">,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset (v100, p40, h100) or path of a device description "
           "JSON, for ops without a measured cost">,
    Option<"mode", "mode", "std::string", /*default=*/"\"step\"",
           "What to simulate: step (one step) or steady (steady state of "
           "repeated steps)">,
    Option<"report", "report", "std::string", /*default=*/"\"text\"",
           "Report format: text, json or none">,
    Option<"reportFile", "report-file", "std::string", /*default=*/"\"-\"",
           "Where the report goes: - for stderr, or a file path">,
    Option<"top", "top", "unsigned", /*default=*/"10",
           "Collectives listed in the text report, most exposed first">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

#endif // COMM_PASSES_TD
