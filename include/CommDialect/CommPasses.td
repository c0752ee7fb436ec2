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

#endif // COMM_PASSES_TD
