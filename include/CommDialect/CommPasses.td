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
    (program order), into `comm.fused_allreduce` buckets of consecutive
    gradients. A bucket is placed where its last gradient is ready, so no
    collective moves before its operands, and a bucket never spans a use of
    one of its gradients' results. Only gradients with the same reduction,
    element type and wire settings share a bucket; buffer-form ops,
    gradients of dynamic shape and existing buckets are left alone.

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

    Policy `cost` chooses the boundaries with the cost model of `cluster`
    (and `device` for compute without a profiled cost). It assumes that the
    buckets will be overlapped with compute (comm-schedule-overlap), each
    issued when its last gradient is ready and run one after another on one
    channel, and finds the bucketing that ends communication earliest,
    exactly, by dynamic programming in linear time (collective costs are
    affine in bytes). It then simulates that plan and the DDP, Horovod and
    XLA settings and keeps the best, so it is never worse than any of them
    under the model. Policy `mgwfbp` applies MG-WFBP's merge rule with the
    same model: a gradient joins the bucket still waiting for the channel
    when that bucket could not have started before the gradient was ready.
    Both plan the function's body; gradients in nested blocks are bucketed
    with the threshold rule.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"threshold\"",
           "How bucket boundaries are chosen: threshold, cost or mgwfbp">,
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "Bucket size cap in MiB (threshold policy)">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "Cap of the first bucket in MiB (0: same as bucket-cap-mb)">,
    Option<"overflow", "overflow", "bool", /*default=*/"true",
           "Close a bucket once it reaches the cap (true, DDP) rather than "
           "before it would exceed it (false, Horovod/XLA)">,
    Option<"cluster", "cluster", "std::string",
           /*default=*/"\"gradientflow-64\"",
           "Cluster preset or JSON file (cost and mgwfbp policies)">,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset or JSON file for unprofiled compute (cost and "
           "mgwfbp policies)">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

#endif // COMM_PASSES_TD
