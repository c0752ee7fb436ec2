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

    A `comm.allreduce` of f32 with a `wire` type becomes
    `commrt_allreduce_wire`, which casts and scales in the runtime's
    pack/unpack kernels (`prescale` 1 when the op has none). The runtime has
    no reduced-precision path for other gradients or for buckets yet: a
    `wire` on an f64 gradient or on `comm.fused_allreduce` is an error.
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

def CommLowerPrecision : Pass<"comm-lower-precision", "::mlir::func::FuncOp"> {
  let summary = "Send gradients in f16 or bf16 over the wire (compression)";
  let description = [{
    Sets the wire type of dense collectives (`comm.allreduce`,
    `comm.fused_allreduce`, `comm.start`, in tensor or buffer form) to `wire`,
    so that their data travels in half the bytes of f32, as PyTorch DDP's
    fp16/bf16 compress hooks and Horovod's fp16 compression do. The
    gradients keep their type: the runtime casts and scales in its
    pack/unpack kernels and the result is widened back.

    A collective is left in full precision when

    - its gradients are not floating-point or are no wider than the wire
      type (integers, f16 gradients with `wire=f16`, any 16-bit gradient
      with `wire=bf16`);
    - it already has a `wire` attribute (an earlier decision is kept);
    - its gradients together are smaller than `min-bytes` bytes (counted in
      their own element type): small messages are latency-bound, so halving
      their bytes gains little and the casts cost time. A bucket counts as
      one message. Gradients of dynamic shape have an unknown size and are
      touched only with `min-bytes=0`;
    - one of its parameter names (`name`, or any of `names` of a bucket)
      matches `keep-f32`, an extended POSIX regular expression searched
      anywhere in the name (anchor it with `^...$` for a whole-name match).
      The default keeps biases and normalisation parameters, as DDP and
      Horovod users commonly do: they are small, and normalisation scales
      are sensitive to rounding. Unnamed gradients never match. An empty
      pattern keeps nothing.

    For `sum` and `avg` the pass also sets `prescale = 1/ranks`, with
    `ranks` taken from the cluster description `cluster` (a preset name or
    a JSON file, see docs/CostModel.md), as DDP's compress hooks pre-divide
    by the world size. The wire values are summed across ranks, and a sum of
    `ranks` values each below f16's largest finite value (65504) can exceed
    it and become infinite; pre-divided, every partial sum is bounded by the
    largest input, so a reduction overflows only if an input would. The
    runtime divides by `prescale` after widening, so the result still
    approximates the f32 sum or average. Pre-dividing by a power-of-two rank
    count is exact; the price is that values below `2^-14 * ranks` fall into
    f16's subnormal range and lose relative precision. bf16 has f32's
    exponent range and does not need the prescale; it gets it all the same,
    as with DDP's bf16 hook. `max` and `min` cannot overflow (the result is
    one of the inputs) and get no prescale. An existing `prescale` is kept,
    and none is set on a single-rank cluster.

    `convert-comm-to-runtime` lowers the wire precision of single f32
    gradients (`comm.allreduce`) so far.

    Example, `--comm-lower-precision="wire=bf16 cluster=nvlink-8"`:

    ```mlir
    %r = comm.allreduce %g {name = "fc.weight", reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    // becomes
    %r = comm.allreduce %g {name = "fc.weight", prescale = 1.250000e-01 : f64,
                            reduce = #comm.reduce<avg>, wire = bf16}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    ```
  }];
  let options = [
    Option<"wire", "wire", "std::string", /*default=*/"\"f16\"",
           "Wire type of the collectives it changes: f16 or bf16">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "Collectives whose gradients total fewer bytes than this stay in "
           "full precision">,
    Option<"keepF32", "keep-f32", "std::string",
           /*default=*/"\"bias|bn|[Nn]orm|ln\"",
           "Regular expression: collectives with a parameter name matching "
           "it stay in full precision (empty: none)">,
    Option<"cluster", "cluster", "std::string",
           /*default=*/"\"gradientflow-64\"",
           "Cluster preset or JSON file whose rank count gives the prescale "
           "of sum and avg">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

#endif // COMM_PASSES_TD
