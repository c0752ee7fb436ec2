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

def CommSparsify : Pass<"comm-sparsify", "::mlir::ModuleOp"> {
  let summary = "Turn allreduces into sparse allreduces where the cost model "
                "says it pays";
  let description = [{
    Decides, gradient by gradient, between the dense `comm.allreduce` and
    residual gradient compression (`comm.sparse_allreduce`, see the op), with
    the cost model of docs/CostModel.md on the cluster `cluster` (a preset
    name or a cluster description file).

    A `comm.allreduce` is a candidate when it is in tensor form, of static
    shape, of floating-point elements, with reduction `sum` or `avg`, without
    `wire` or `prescale` (a reduced-precision plan that the sparse op has no
    form for), and of at least `min-bytes` bytes (small gradients are latency
    bound and stay dense). Fused buckets, `comm.start`/`comm.wait` and ops
    in buffer form are left alone. For a candidate of `n` elements, the pass
    compares the dense allreduce, `allreduceCost(cluster, bytes)`, with the
    sparse exchange at `density`, `sparseAllreduceCost(cluster, scheme,
    {n, density, value bytes, 4-byte indices, chunk-elements})` (8-byte
    indices beyond 2^32 elements), for the scheme `exchange` names, or for
    each of `allgather`, `hash`, `chunk` with `exchange=auto`, which takes the
    cheapest (the first in that order on a tie). The gradient goes sparse
    only when that cost is strictly below the dense one, so dense stays where
    sparse would not pay, e.g. everywhere on a cluster of one rank.

    Selection is `select` (`threshold`, RedSync's, or `topk`), except with the
    chunk exchange, which needs chunk selection (and gets
    `chunk_elements = chunk-elements`). The op keeps the allreduce's `reduce`
    and `name`.

    Each sparsified gradient gets its residual, zero at first, in a private
    mutable `ml_program.global` named after the parameter (`fc.weight`
    gives `@fc_weight_residual`, an unnamed gradient `@grad_residual`; a
    suffix keeps names unique in the module), placed before the function
    that uses it. The residual is loaded right before the sparse allreduce and
    the new residual stored right after it:

    ```mlir
    ml_program.global private mutable @fc_weight_residual(
        dense<0.000000e+00> : tensor<1000x2048xf32>) : tensor<1000x2048xf32>
    func.func @train_step(...) {
      ...
      %fc_weight_residual = ml_program.global_load @fc_weight_residual
          : tensor<1000x2048xf32>
      %r:2 = comm.sparse_allreduce %g, %fc_weight_residual
          {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>,
           name = "fc.weight", reduce = #comm.reduce<avg>,
           select = #comm.select<threshold>}
          : tensor<1000x2048xf32>, tensor<1000x2048xf32>
          -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
      ml_program.global_store @fc_weight_residual = %r#1
          : tensor<1000x2048xf32>
      ...
    }
    ```

    The pass runs on the module because it adds the globals to it (a pass on
    `func.func` may not add symbols to the module around it).
  }];
  let options = [
    Option<"density", "density", "double", /*default=*/"0.001",
           "Fraction of each gradient's entries sent (of its chunks with the "
           "chunk exchange), in (0, 1]; RedSync's 0.1% by default">,
    Option<"cluster", "cluster", "std::string",
           /*default=*/"\"gradientflow-64\"",
           "Cluster preset name or cluster description file">,
    Option<"exchange", "exchange", "std::string", /*default=*/"\"auto\"",
           "Sparse exchange: allgather, hash, chunk, or auto (the cheapest "
           "by the cost model)">,
    Option<"select", "select", "std::string", /*default=*/"\"threshold\"",
           "Selection for the allgather and hash exchanges: threshold or "
           "topk (the chunk exchange always selects chunks)">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1048576",
           "Gradients smaller than this many bytes stay dense">,
    Option<"chunkElements", "chunk-elements", "int64_t", /*default=*/"32768",
           "Elements per chunk of the chunk exchange">
  ];
  let dependentDialects = [
    "::mlir::comm::CommDialect", "::mlir::ml_program::MLProgramDialect"
  ];
}

#endif // COMM_PASSES_TD
