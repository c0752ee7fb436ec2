//===- CommPasses.td - Passes of commopt -------------------*- tablegen -*-===//

#ifndef COMM_PASSES_TD
#define COMM_PASSES_TD

include "mlir/Pass/PassBase.td"

// The cluster option of every pass that plans or prices with the cost
// model. Without it a pass uses the cluster recorded on the module, else
// the default preset (kDefaultClusterName in ClusterModel.h).
def CommClusterOption
    : Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
             "Cluster preset (gradientflow-64, ib100-512, nvlink-8, "
             "ethernet10-16, ib56-16) or cluster description file (default: "
             "the cluster recorded on the module, else gradientflow-64)">;

// A choice-valued option: an enum of PassOptionTypes.h whose valid values
// `values` lists (a macro of that header), parsed by its ChoiceParser.
class CommChoiceOption<string varName, string arg, string enumName,
                       string default, string desc, string values>
    : Option<varName, arg, "::mlir::comm::" # enumName,
             "::mlir::comm::" # enumName # "::" # default, desc,
             "::llvm::cl::values(" # values # ")">;

def ConvertCommToRuntime : Pass<"convert-comm-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower bufferized comm ops to calls into the commrt runtime";
  let description = [{
    Rewrites every `comm` op in buffer form (memref operands, after
    one-shot bufferization) into calls of the runtime's C ABI (`commrt_*`,
    see lib/Runtime/include/commrt/commrt.h):

    - a single contiguous gradient in full precision: `commrt_allreduce`;
    - buckets, wire precision and prescale: `commrt_fused_allreduce`, which
      packs the buffers (casting to the wire type with the prescale in the
      same pass), reduces once and unpacks; the buffers' addresses and
      element counts are passed in two arrays on the function's stack;
    - `comm.start`: `commrt_fused_allreduce_start` on the op's channel, the
      handle kept in a stack slot; `comm.wait`: `commrt_wait` on it;
    - `comm.rank`, `comm.world_size`: `commrt_rank`, `commrt_size`;
    - `comm.compute` (in buffer form): `commrt_fill_gradient` on each of its
      `outs`, which fills it with synthetic gradient values; with
      `compute-delay`, the step's start is read first (`commrt_time_us`)
      and `commrt_sleep_since_us(cost_us, start)` sleeps what is left of
      its cost, so that a profile's skeleton runs with the profiled compute
      time, the filling included.

    Non-contiguous memrefs are staged through a contiguous copy that is
    written back once the collective is complete. Every status is passed to
    `commrt_abort_on_error`, which stops all ranks with the runtime's message
    instead of continuing with wrong data. Ops still in tensor form are an
    error: bufferize first.

    A collective over a process group (`#comm.group<@grid, axes>`) runs on
    the calling rank's group: its coordinates on the grid (row-major, from
    `commrt_rank`) give the color (its linear index over the other axes) and
    the key (over the group's axes) of `commrt_group_split`, whose id is a
    hash of the grid's name and the axes, so that the first collective of a
    group makes its communicator and the others find it; the collective's
    `commrt_group_` form takes the handle.

    A dense collective with `algorithm` (`#comm.algorithm`, from
    `comm-select-algorithm`) lowers to the `commrt_group_` form of the
    fused allreduce (or of its start) as well, with group 0 (all ranks)
    when it has no `group`, and passes the algorithm's value
    (commrt_algorithm: ring 1, tree 2, hierarchical 3) after the prescale;
    a grouped collective without one passes 0, COMMRT_ALGORITHM_DEFAULT
    (the runtime's `COMMRT_ALLREDUCE`). A collective with `transport`
    (`#comm.transport`) takes the group form too, its commrt_backend (MPI
    1, NCCL 2) shifted left by `COMMRT_TRANSPORT_SHIFT` (8) into the same
    argument, and its function first calls `commrt_use_transport` once for
    each transport its collectives name, so that the runtime creates a
    backend beside the one in use among all ranks before a process group's
    collective needs it. A collective with none of these keeps
    `commrt_allreduce` or `commrt_fused_allreduce`.

    What planning leaves of upstream's shard dialect lowers too:
    `shard.process_linear_index` and `shard.process_multi_index` become the
    runtime's rank (row-major over the grid), every public function first
    calls `commrt_expect_size` with the grid's process count, so that a job
    with another rank count stops with a message naming both, and the
    `shard.grid` symbols are erased. Other shard ops (collectives not
    imported by `comm-import-shard`) are errors.
  }];
  let options = [
    Option<"computeDelay", "compute-delay", "bool", /*default=*/"false",
           "Lower comm.compute to take its cost_us: the filling of its "
           "outputs, then a sleep for the rest (default: false)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def CommImportShard : Pass<"comm-import-shard", "::mlir::ModuleOp"> {
  let summary = "Import shard.all_reduce (and StableHLO's all_reduce), "
                "shard.reduce_scatter and shard.all_gather as comm "
                "collectives";
  let description = [{
    Rewrites every `shard.all_reduce` on tensors into a `comm.allreduce`, so
    that the collectives of a module partitioned with upstream's `shard`
    dialect can be planned by commopt. Run it first, on tensors.

    - Reduction: `sum`, `max`, `min` and `average` become `#comm.reduce<sum>`,
      `<max>`, `<min>` and `<avg>` (an average of floating-point values
      only). `product`, `bitwise_and`, `bitwise_or`, `bitwise_xor` and
      `generic` have no comm equivalent: the pass reports the op, naming
      its reduction, and fails.
    - Process group: `grid_axes` become
      `group = #comm.group<@grid, axes = [...]>`, the axes sorted (the
      ranks that meet do not depend on their order). When every grid axis
      not listed has size 1 (in particular when all are listed) the
      collective spans all ranks and gets no group. When every listed axis
      has size 1, or none is listed, each rank is alone: nothing is
      communicated and the result is the operand (converted, see below),
      as upstream's canonicalizer folds it.
    - Element types: shard converts each input element to the result's
      element type before reducing. The import does the same with an
      `arith` cast on the operand, then reduces in the result's type:
      `arith.extf`/`arith.truncf` between floats (through f32 between two
      formats of one width, such as f16 and bf16), `arith.extsi`/
      `arith.trunci` between integers and `arith.sitofp`/`arith.fptosi`
      between the two, integers being signed as in linalg's default cast,
      which `convert-shard-to-mpi` uses.
    - Rejected, with a diagnostic: memrefs (import before bufferization),
      element types comm does not communicate (index, complex, unsigned
      integers), and operand and result shapes that differ.

    Sharded data parallelism: `shard.reduce_scatter` and `shard.all_gather`
    become `comm.reduce_scatter` and `comm.all_gather`, with `shards` the
    product of the listed grid axes' sizes, the same group rules, reductions
    and element conversion as above. comm's shards are the tensor seen flat
    in row-major order, so the tensor axis they shard along
    (`scatter_axis`, `gather_axis`) must have only dimensions of size 1
    before it (upstream's partitioner shards data-parallel parameters along
    their first axis), the grid axes must be listed in ascending order (the
    shards follow the order of the group's ranks) and of static size, and
    the shapes static; anything else is rejected with a diagnostic that says
    which.

    `shard.all_slice`, which upstream's partitioner emits where a replicated
    tensor becomes sharded (a parameter sliced for its owner), communicates
    nothing: each process keeps its piece. It is lowered by upstream's own
    pattern (`populateAllSliceOpLoweringPatterns`): the process's place in
    the group (`shard.process_multi_index`, which `convert-comm-to-runtime`
    lowers to the runtime's rank) and a `tensor.extract_slice` of the piece
    along `slice_axis`, any axis, the grid axes in any order. An all_slice
    that upstream's pattern cannot lower (a dynamic grid axis, say) is
    reported and the pass fails.

    StableHLO, on a best-effort basis: a `"stablehlo.all_reduce"`, the
    generic form in which JAX prints it, read with
    `--allow-unregistered-dialect`, becomes one `comm.allreduce` per
    operand. The StableHLO dialect is not registered, so the whole input,
    the reduction region included, must be in generic form (as a tool that
    knows StableHLO prints it with `--mlir-print-op-generic`). Then:

    - the reduction is read from the region: a single block whose two
      arguments are combined by one `stablehlo.add` (sum),
      `stablehlo.maximum` (max) or `stablehlo.minimum` (min) whose result
      is returned by `stablehlo.return`; any other region is rejected with
      a diagnostic naming the op it found;
    - `replica_groups` (a 2-D dense integer attribute) absent, empty, or
      one group listing each id of 0..n-1 once means all ranks; where the
      module declares `mhlo.num_replicas` (and `mhlo.num_partitions`, with
      `use_global_device_ids`), n must be the number of replicas (or
      devices). Any other grouping is rejected: "replica_groups other than
      one group of all replicas are not imported". A module with
      `mhlo.num_partitions` above 1 is imported only with
      `use_global_device_ids`, since otherwise the groups hold the replicas
      of one partition;
    - element types are converted as for shard; `channel_handle` and other
      attributes are not used.

    Left alone: every other op, the other shard collectives (`all_to_all`,
    `broadcast`, `shift`, ...) and `shard.grid` included. When the
    pass fails, it reports every op it cannot import and changes nothing.

    Example:

    ```mlir
    shard.grid @grid(shape = 2x4)
    %r = shard.all_reduce %g on @grid grid_axes = [1] reduction = sum
        : tensor<1024xf32> -> tensor<1024xf32>
    %s = shard.all_reduce %g on @grid grid_axes = [0, 1] reduction = max
        : tensor<1024xbf16> -> tensor<1024xf32>
    ```

    becomes

    ```mlir
    shard.grid @grid(shape = 2x4)
    %r = comm.allreduce %g {group = #comm.group<@grid, axes = [1]>}
        : tensor<1024xf32> -> tensor<1024xf32>
    %e = arith.extf %g : tensor<1024xbf16> to tensor<1024xf32>
    %s = comm.allreduce %e {reduce = #comm.reduce<max>}
        : tensor<1024xf32> -> tensor<1024xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::comm::CommDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def CommShardDataParallel
    : Pass<"comm-shard-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Plan a step as sharded data parallelism (ZeRO-2, ZeRO-3, "
                "FSDP): reduce-scatters, prefetched all-gathers, a memory "
                "limit";
  let description = [{
    Rewrites a data-parallel step as imported from a gradient profile (a
    `comm.compute` per layer's forward and backward, one `comm.allreduce`
    per gradient, the optimizer's `comm.compute`) into a sharded one, as
    PyTorch FSDP and DeepSpeed ZeRO run it:

    - Parameters are grouped into units of whole layers in backward order
      (FSDP's flat parameters, XLA's combined collectives), one element
      type, wire type and prescale to a unit (comm-lower-precision may run
      first): a unit closes once it holds `bucket-cap-mb` or more.
    - Each unit's parameters live sharded: the function takes one shard per
      unit (`comm.names` on the argument lists its parameters) and returns
      the updated shards.
    - Before a unit's first forward layer its shard is all-gathered
      (`comm.all_gather_start` on the cluster's second channel where it has
      two), started `prefetch` units ahead; the layers' `comm.compute` ops
      take the gathered parameters as operands. A layer without a forward
      step of its own (a profile that timed the forward pass whole) is
      gathered before the step's forward `comm.compute` without a layer, or
      at the start of the step.
    - With `stage=grad` (ZeRO-2, FSDP's SHARD_GRAD_OP) the gathered
      parameters stay for the backward pass. With `stage=full` (ZeRO-3,
      FSDP's FULL_SHARD) they are freed after the unit's forward, and
      gathered again for its backward, `prefetch` units ahead in backward
      order; the last unit of the forward pass keeps its parameters for the
      backward, as FSDP does with its root.
    - Once a unit's last gradient is produced, its gradients are
      reduce-scattered into the unit's gradient shard
      (`comm.reduce_scatter_start` on channel 0, with the allreduces'
      reduction, wire type and prescale), overlapping the rest of the
      backward pass; each is waited for before the optimizer (or sooner,
      below), which then updates only this rank's shards: its cost becomes
      1/p of the profiled cost.

    The plan is chosen by the cost model with its peak memory: every unit
    size from `bucket-cap-mb` down (halving, until each layer is a unit),
    with every prefetch depth (or the one `prefetch` gives) and with the
    reduce-scatters waited for at the optimizer or, freeing their gradients
    sooner, before the backward of the unit whose reduce-scatter starts two
    after their own, is planned,
    simulated with the step model (one step) and sized with the step memory
    analysis (the buffers the step holds at once: shards, gathered
    parameters, gradients; not activations, which the profile does not
    describe, nor optimizer state); the fastest plan whose peak stays
    within `memory-limit-mb` is kept, on a tie the one that holds less,
    then the first tried (larger units, smaller depth). A limit that no
    plan meets is an error naming the smallest peak found. The choice is
    recorded on the function (`comm.shard_plan`). Shards are ceil(N / p)
    elements for the cluster's p ranks (the last padded). A function
    without allreduces is left alone.
    A step that is not in the imported form (a gradient not produced by a
    layer's backward `comm.compute`, a collective other than a dense
    `comm.allreduce` in tensor form among all ranks, one in a nested
    region, a reduced gradient used by an op other than the optimizer and
    the return, a second optimizer step, a function that is called) is an
    error naming the op.
  }];
  let options = [
    CommChoiceOption<"stage", "stage", "ShardStage", "Full",
                     "What is sharded (default: full)",
                     "COMMOPT_SHARD_STAGE_VALUES">,
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "Size in MiB at which a unit of parameters closes; smaller "
           "units are tried too (default: 25)">,
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"-1",
           "Units all-gathered ahead of the one computing (-1: the depth "
           "the cost model finds fastest within the memory limit) "
           "(default: -1)">,
    Option<"memoryLimitMb", "memory-limit-mb", "double", /*default=*/"0.0",
           "The most MiB the step may hold at once per rank (0: no limit) "
           "(default: 0)">,
    CommClusterOption,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset or JSON file for unprofiled compute "
           "(default: v100)">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

def CommFuseBuckets : Pass<"comm-fuse-buckets", "::mlir::func::FuncOp"> {
  let summary = "Fuse gradient allreduces into buckets (tensor fusion)";
  let description = [{
    Groups `comm.allreduce` ops, in the order their gradients become ready
    (program order), into `comm.fused_allreduce` buckets of consecutive
    gradients. A bucket is placed where its last gradient is ready, so no
    collective moves before its operands, and a bucket never spans a use of
    one of its gradients' results. Only gradients with the same reduction,
    element type, wire settings, process group (`group`, or none) and
    `algorithm` (or none) share a bucket, which keeps them; buffer-form ops, gradients of dynamic
    shape and existing buckets are left alone.

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
    affine in bytes). Gradients of different kinds (a wire type, a
    reduction, a process group) cannot share a bucket: each kind is
    bucketed on its own, by that plan or by a peer's threshold rule,
    whichever makes the whole step fastest with the other kinds' buckets on
    the same channel (a few rounds, one kind at a time), and the result is
    compared with MG-WFBP's rule, with the DDP, Horovod and XLA settings
    over the whole function and with no fusion, each bucket waited for
    before its first use, so it is never worse than any of them under the
    model (ending communication earliest is not always best: a gradient
    used before the end of the step is waited for sooner alone, and the
    cheapest algorithm of a small collective can cost less than the affine
    line says). Each bucket is
    priced with the cluster's algorithm, or with `cheapest-algorithm` with
    the cheapest of ring, tree and hierarchical, as comm-select-algorithm
    will choose it (comm-optimize sets it with `algorithm=auto`). With
    `mixed-wire` (the default), gradients narrowed to a wire type and the
    full-precision ones of the same reduction, element type, group and
    algorithm are also bucketed as one kind, each keeping its own type in a
    mixed-wire bucket (`narrowed`, one message, run with the ring), and
    that plan is kept only where the model finds the whole step faster
    than with the kinds apart. Policy `mgwfbp` applies MG-WFBP's merge rule with the
    same model: a gradient joins the bucket still waiting for the channel
    when that bucket could not have started before the gradient was ready.
    Both plan the function's body; gradients in nested blocks are bucketed
    with the threshold rule. A collective over a process group is priced
    on its group's ranks and links (ClusterModel::forGroup). The body's
    other collectives (sparse allreduces, existing buckets and starts)
    share the simulated channel with the buckets: those comm-schedule-overlap
    will start (sparse ones with `sparse-overlap`) started where they are
    and waited for before their first use, the rest as they are, in the
    order comm-schedule-overlap issues them (a start right after the
    compute that produces its gradients, ahead of a blocking collective
    that follows that compute).
  }];
  let options = [
    CommChoiceOption<"policy", "policy", "FusionPolicy", "Threshold",
                     "How bucket boundaries are chosen (default: threshold)",
                     "COMMOPT_FUSION_POLICY_VALUES">,
    Option<"bucketCapMb", "bucket-cap-mb", "double", /*default=*/"25.0",
           "Bucket size cap in MiB (threshold policy) (default: 25)">,
    Option<"firstBucketMb", "first-bucket-mb", "double", /*default=*/"1.0",
           "Cap of the first bucket in MiB (0: same as bucket-cap-mb) "
           "(default: 1)">,
    Option<"overflow", "overflow", "bool", /*default=*/"true",
           "Close a bucket once it reaches the cap (true, DDP) rather than "
           "before it would exceed it (false, Horovod/XLA) (default: true)">,
    CommClusterOption,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset or JSON file for unprofiled compute (cost and "
           "mgwfbp policies) (default: v100)">,
    Option<"cheapestAlgorithm", "cheapest-algorithm", "bool",
           /*default=*/"false",
           "Price each bucket (cost policy) with the allreduce algorithm "
           "and transport comm-select-algorithm will give it, the cheapest, "
           "rather than the cluster's (default: false)">,
    Option<"mixedWire", "mixed-wire", "bool", /*default=*/"true",
           "Let one bucket carry narrowed and full-precision gradients (cost "
           "policy) where the model finds it faster (default: true)">,
    Option<"sparseOverlap", "sparse-overlap", "bool", /*default=*/"true",
           "Simulate the function's sparse allreduces (cost and mgwfbp "
           "policies) started on the channel and waited for before their "
           "first use, as comm-schedule-overlap's sparse=true will run "
           "them, rather than blocking (default: true)">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

def CommScheduleOverlap : Pass<"comm-schedule-overlap", "::mlir::func::FuncOp"> {
  let summary = "Split collectives into start/wait to overlap them with "
                "compute";
  let description = [{
    Splits every blocking collective in tensor form (`comm.allreduce`,
    `comm.fused_allreduce`) into a `comm.start` and a `comm.wait`, so that
    communication runs while the rest of the step computes (XLA's async
    start/done split); `comm.reduce_scatter` and `comm.all_gather` likewise
    become a `comm.reduce_scatter_start` or `comm.all_gather_start` (with
    all their attributes) and a `comm.wait`:

    - the start is placed right after the last of its operands is produced
      (after the latest-defined operand in the block; at the start of the
      block when every operand is a block argument or comes from an
      enclosing region), never before an operand;
    - the wait is placed right before the first op of the block that uses
      one of its results (a use inside a nested region counts as a use by
      the op of the block that holds it), or before the block's terminator
      when the block does not use them.

    Starts issued at one point keep the collectives' program order, and so
    do waits before one user. The start carries the collective's `reduce`,
    `wire`, `prescale`, `group` and `algorithm`; an allreduce's `name` becomes
    `names = [name]`.

    Channels (`channels=N`, the multi-stream idea of AIACC-Training): the
    starts of each block are visited in issue order while tracking, per
    channel, the bytes whose collective is in flight (started and not yet
    waited on). Each new start goes to the channel with the fewest bytes in
    flight; ties go to the channel with fewer collectives in flight, then to
    the lowest channel number. Starts that were already in the input keep
    their channel but count towards it. Gradients of dynamic shape count as
    zero bytes. With `channels=1` everything runs on channel 0.

    Priorities (`priorities=true`, ByteScheduler and P3): a start's
    `priority` is the smallest `layer` among the backward `comm.compute`
    steps (`phase = #comm.phase<backward>`) that directly define its
    operands. Layers count in forward order, so the gradients that the next
    step's forward needs first are the most urgent (lower is more urgent).
    A collective none of whose operands comes from such a step gets no
    priority.

    Partitioning (`partition-mb=X`, ByteScheduler's tensor partitioning;
    0 turns it off): a `comm.allreduce` of a statically shaped gradient of
    more than X MiB is split into P = ceil(bytes / (X MiB)) pieces, at most
    one per element, so that the pieces pipeline and more urgent
    collectives can overtake the rest. The gradient is collapsed to 1-D
    (`tensor.collapse_shape`, for rank > 1), cut into P contiguous
    `tensor.extract_slice`s of near-equal size (the first `elements mod P`
    pieces hold one element more), and every piece gets its own start and
    wait, the whole's priority and its own channel. After the waits the
    pieces are inserted (`tensor.insert_slice`) into a `tensor.empty` and
    the result is expanded back (`tensor.expand_shape`). Fused buckets,
    gradients of dynamic shape and tensors with an encoding are not
    partitioned.
    The pieces cost memory traffic: one-shot bufferization reassembles them
    by copying each into a new buffer, and all pieces but the last are
    reduced in a copy of their slice, so partition only gradients large
    enough for pipelining to pay.

    Sparse allreduces (`sparse=true`, the default): a `comm.sparse_allreduce`
    in tensor form becomes a `comm.sparse_start` (placed as a start is, with
    the same channel and priority rules; it counts `density` times its
    gradient's bytes towards its channel's load) and a `comm.wait` that
    yields the reduced gradient and the new residual. The `ml_program`
    store of the new residual does not hold the wait back: each
    `ml_program.global_store` of the residual moves to right after the wait,
    unless an op between it and the wait point loads that global or is a
    call (which might), in which case the wait stays before the store.
    `sparse=false` leaves sparse allreduces blocking.

    Left alone: collectives already split into start/wait, collectives in
    buffer form (memref operands), and all other ops.

    Run it after `comm-fuse-buckets`, on tensors (before bufferization).

    Example (`channels=2`):

    ```mlir
    %gw, %gb = comm.compute () {cost_us = 480.0 : f64, layer = 7 : i64,
                                phase = #comm.phase<backward>}
        : () -> (tensor<1000x2048xf32>, tensor<1000xf32>)
    %w = comm.allreduce %gw {name = "fc.weight"}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %b = comm.allreduce %gb {name = "fc.bias"}
        : tensor<1000xf32> -> tensor<1000xf32>
    // ... more backward steps ...
    return %w, %b : tensor<1000x2048xf32>, tensor<1000xf32>
    ```

    becomes

    ```mlir
    %gw, %gb = comm.compute () ...
    %t0 = comm.start %gw {names = ["fc.weight"], priority = 7 : i64}
        : tensor<1000x2048xf32>
    %t1 = comm.start %gb {channel = 1 : i64, names = ["fc.bias"],
                          priority = 7 : i64} : tensor<1000xf32>
    // ... more backward steps ...
    %w = comm.wait %t0 : tensor<1000x2048xf32>
    %b = comm.wait %t1 : tensor<1000xf32>
    return %w, %b : tensor<1000x2048xf32>, tensor<1000xf32>
    ```
  }];
  let options = [
    Option<"channels", "channels", "int", /*default=*/"2",
           "Number of communication channels (streams) that collectives "
           "are spread over; 0: the cluster's channel count (the cluster "
           "recorded on the module, else gradientflow-64) (default: 2)">,
    Option<"priorities", "priorities", "bool", /*default=*/"true",
           "Give each start the smallest backward layer that produces its "
           "gradients as priority (lower is more urgent) (default: true)">,
    Option<"partitionMb", "partition-mb", "double", /*default=*/"0.0",
           "Split single-gradient allreduces larger than this many MiB into "
           "ceil(size / cap) pieces of near-equal size (0: never split) "
           "(default: 0)">,
    Option<"sparse", "sparse", "bool", /*default=*/"true",
           "Also split sparse allreduces into comm.sparse_start and "
           "comm.wait (default: true)">
  ];
  let dependentDialects = [
    "::mlir::comm::CommDialect", "::mlir::tensor::TensorDialect"
  ];
}

def CommSelectAlgorithm
    : Pass<"comm-select-algorithm", "::mlir::func::FuncOp"> {
  let summary = "Choose the allreduce algorithm of each dense collective: "
                "flat ring, tree or hierarchical";
  let description = [{
    Sets `algorithm` (`#comm.algorithm<ring|tree|hierarchical>`) on every
    dense collective (`comm.allreduce`, `comm.fused_allreduce`,
    `comm.start`, in tensor or buffer form), replacing one it had;
    `convert-comm-to-runtime` passes it to the runtime, and `comm-estimate`
    prices the collective with it. Sparse collectives are left alone (their
    exchange is `exchange`'s).

    With `algorithm=auto` (the default) each collective gets the algorithm
    of least `allreduceCost` (docs/CostModel.md, section 2.1) for its bytes
    on the wire (its `wire` type applied) on the cluster it runs on:
    `cluster`'s ranks, or its process group's (ClusterModel::forGroup).
    The candidates are ring and tree, and hierarchical where that cluster
    has several nodes of several ranks each (with one node, or one rank per
    node, hierarchical is the flat ring). A tie goes to the cluster's own
    `allreduce` algorithm, so a collective never costs more than the
    cluster's algorithm would make it cost; a collective of dynamic shape,
    whose bytes are unknown, gets the cluster's algorithm. Small collectives
    are latency-bound and get the tree (2 lg(p) latency terms against the
    ring's 2 (p - 1)), large ones the ring (bandwidth-optimal) or, on nodes
    joined by a slow network, hierarchical.

    `algorithm=ring`, `tree` or `hierarchical` gives every collective that
    algorithm. Hierarchical on a cluster (or a collective's process group)
    of one node, or of one rank per node, is an error naming the cluster
    and the collective: there is no second level to reduce in.

    Example, `--comm-select-algorithm=cluster=ethernet10-16`:

    ```mlir
    %b = comm.allreduce %gb {name = "fc.bias"}
        : tensor<1000xf32> -> tensor<1000xf32>
    %w = comm.allreduce %gw {name = "fc.weight"}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    // becomes
    %b = comm.allreduce %gb {algorithm = #comm.algorithm<tree>,
                             name = "fc.bias"}
        : tensor<1000xf32> -> tensor<1000xf32>
    %w = comm.allreduce %gw {algorithm = #comm.algorithm<ring>,
                             name = "fc.weight"}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    ```

    **Transport.** Where the cluster has a second transport (`alternate`,
    docs/Cluster.md: commrt built with NCCL and MPI, both in use), every
    dense collective also gets `transport` (`#comm.transport<nccl|mpi>`):
    with `transport=auto` (the default), the backend and algorithm of least
    cost over both, the wire's work on the ranks included (each backend's
    `wire_s_per_byte`), the staging of device buffers for a staged MPI
    backend included (docs/CostModel.md, section 2.8). A tie goes to the
    cluster's own backend, so a collective never costs more than on that
    backend alone; one of dynamic shape gets the cluster's backend.
    `transport=nccl` or `mpi` gives every collective that backend; one the
    cluster does not have is an error naming the cluster. On a cluster of
    one transport, `auto` sets no `transport` (the collectives run on the
    backend in use) and a backend other than the cluster's is an error.
  }];
  let options = [
    CommChoiceOption<"algorithm", "algorithm", "AlgorithmChoice", "Auto",
                     "Allreduce algorithm of every dense collective, or auto: "
                     "the cheapest per collective (default: auto)",
                     "COMMOPT_ALGORITHM_VALUES">,
    CommChoiceOption<"transport", "transport", "TransportChoice", "Auto",
                     "Backend of every dense collective where the cluster "
                     "has two, or auto: the cheaper per collective "
                     "(default: auto)",
                     "COMMOPT_TRANSPORT_VALUES">,
    CommClusterOption
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
    CommChoiceOption<"wire", "wire", "WirePrecision", "F16",
                     "Wire type of the collectives it changes (default: f16)",
                     "COMMOPT_WIRE_PRECISION_VALUES">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "Collectives whose gradients total fewer bytes than this stay in "
           "full precision (default: 65536)">,
    Option<"keepF32", "keep-f32", "std::string",
           /*default=*/"\"bias|bn|[Nn]orm|ln\"",
           "Regular expression: collectives with a parameter name matching "
           "it stay in full precision (empty: none) (default: "
           "bias|bn|[Nn]orm|ln)">,
    CommClusterOption
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
    CommClusterOption,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset (v100, p40, a100, h100) or path of a device description "
           "JSON, for ops without a measured cost (default: v100)">,
    CommChoiceOption<"mode", "mode", "EstimateMode", "Step",
                     "What to simulate (default: step)",
                     "COMMOPT_ESTIMATE_MODE_VALUES">,
    CommChoiceOption<"report", "report", "ReportFormat", "Text",
                     "Report format (default: text)",
                     "COMMOPT_REPORT_FORMAT_VALUES">,
    Option<"reportFile", "report-file", "std::string", /*default=*/"\"-\"",
           "Where the report goes: - for stderr, or a file path (default: -)">,
    Option<"top", "top", "unsigned", /*default=*/"10",
           "Collectives listed in the text report, most exposed first "
           "(default: 10)">
  ];
  let dependentDialects = ["::mlir::comm::CommDialect"];
}

def CommForwardResiduals
    : Pass<"comm-forward-residuals", "::mlir::func::FuncOp"> {
  let summary = "Let sparse allreduces update their residual globals in place";
  let description = [{
    After one-shot bufferization, a sparse allreduce's residual kept in an
    `ml_program` global costs two copies of the whole gradient every step:
    the global is not writable in place, so the residual is copied into a new
    buffer, updated there, and copied back at the store. This pass removes
    both copies where that changes nothing: a `memref.alloc` whose only uses
    are a `memref.copy` from a `memref.get_global @G`, the residual operand
    of one `comm.sparse_allreduce` or `comm.sparse_start`, and a
    `memref.copy` into `memref.get_global @G` of the same global, all in one
    block in that order, of the global's type, with nothing in between that
    reads the loaded global value, loads `@G` again, or calls a function
    (which might). The sparse allreduce then updates the global itself.

    Left alone: any other use of the buffer, another global, a read of the
    global in between, and ops in tensor form.

    `commopt-lower-to-llvm` runs it right after bufferization.

    Example:

    ```mlir
    %g = memref.get_global @w_residual : memref<1024xf32>
    %r = memref.alloc() : memref<1024xf32>
    memref.copy %g, %r : memref<1024xf32> to memref<1024xf32>
    comm.sparse_allreduce %grad, %r {...} : memref<1024xf32>, memref<1024xf32>
    %h = memref.get_global @w_residual : memref<1024xf32>
    memref.copy %r, %h : memref<1024xf32> to memref<1024xf32>
    ```

    becomes

    ```mlir
    %g = memref.get_global @w_residual : memref<1024xf32>
    comm.sparse_allreduce %grad, %g {...} : memref<1024xf32>, memref<1024xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CommAddStepDriver : Pass<"comm-add-step-driver", "::mlir::ModuleOp"> {
  let summary = "Add a @main that runs a training step repeatedly and times "
                "it, so that the lowered module runs under mlir-runner";
  let description = [{
    Adds `func.func @main()`, which runs the step function `steps` times:
    each step starts after `commrt_barrier`, is timed with `commrt_time_us`,
    and `commrt_report_step_us` makes rank 0 print the slowest rank's time as
    `commrt: step S: T us`. The step's arguments are made anew every step:
    tensors and memrefs of static shape filled with `fill`, scalars equal to
    it. Its results are dropped (the deallocation pipeline of
    `commopt-lower-to-llvm` frees them).

    The step is `function` when it is set, otherwise the one public function
    with a body. Imported profiles (`@train_step`) and shard modules qualify
    as they are; a module that already has a `@main`, a step with a dynamic
    shape, or an argument of another type is an error.

    ```
    commopt-opt step.mlir --comm-optimize --comm-add-step-driver=steps=5 \
        --commopt-lower-to-llvm -o lowered.mlir
    mpirun -np 4 mlir-runner lowered.mlir -e main -entry-point-result=void \
        -shared-libs=libcommrt.so,...
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The step function (default: the one public function with a "
           "body)">,
    Option<"steps", "steps", "int64_t", /*default=*/"10",
           "Steps to run and time, at least 1 (default: 10)">,
    Option<"fill", "fill", "double", /*default=*/"1.0",
           "The value of every element of the step's arguments (default: 1)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def CommRecordCluster : Pass<"comm-record-cluster", "::mlir::ModuleOp"> {
  let summary = "Record on the module the cluster its plan is made for";
  let description = [{
    Sets the module's `comm.cluster` attribute to the cluster description
    (preset name or file path) that the following passes plan for. Passes
    with a `cluster` option (`comm-fuse-buckets`, `comm-lower-precision`,
    `comm-sparsify`, `comm-estimate`), `comm-schedule-overlap` with
    `channels=0`, and `commopt-translate --export-timeline` use the recorded
    cluster unless their own option names one, and warn when it names
    another. `comm-optimize` runs this pass first, so a planned module always
    says what it was planned for.

    With `cluster` empty, a cluster already recorded is kept and a module
    without one gets gradientflow-64, marked `comm.cluster_is_default` so
    that reports say nobody chose it. The description is read once here, so
    that a preset name or file that cannot be read fails before planning.

    With `momentum-correction`, it also records that the plan trains with
    Deep Gradient Compression's momentum correction of its sparse gradients
    (`comm.momentum_correction`): the training bridge corrects each sparse
    gradient in its hook and masks its velocity after the wait, on the
    compute thread, which the step model prices with the device's bridge
    costs, and `--export-plan` tells the bridge to do it.

    With `sparse-warmup-steps=N`, it records Deep Gradient Compression's
    warm-up of the sparse gradients (`comm.sparse_warmup = {steps = N,
    start_density = D}`): the training bridge sends each sparse gradient at
    density `D` in the first step and lowers it geometrically to the plan's
    density over the first `N` steps (a gradient whose density is at least
    `D` keeps it). The estimate prices the steps after the warm-up.

    ```mlir
    module attributes {comm.cluster = "ethernet10-16",
                       comm.sparse_warmup = {start_density = 2.500000e-01 : f64,
                                             steps = 400 : i64}} { ... }
    ```
  }];
  let options = [
    CommClusterOption,
    Option<"momentumCorrection", "momentum-correction", "bool",
           /*default=*/"false",
           "Record that the plan trains with momentum correction of its "
           "sparse gradients (default: false)">,
    Option<"sparseWarmupSteps", "sparse-warmup-steps", "int64_t",
           /*default=*/"0",
           "Record a warm-up of the sparse gradients over this many steps "
           "(0: none) (default: 0)">,
    Option<"sparseWarmupDensity", "sparse-warmup-density", "double",
           /*default=*/"0.25",
           "The density the warm-up starts at, in (0, 1] (default: 0.25)">
  ];
}

def CommExchangeRows : Pass<"comm-exchange-rows", "::mlir::func::FuncOp"> {
  let summary = "Exchange the rows of gradients that are sparse by nature, "
                "losslessly, where the cost model says it pays";
  let description = [{
    An embedding's gradient touches only the rows its batch used. For every
    `comm.allreduce` that its profile marks so (`comm.rows_touched`, the
    fraction of rows a step touches on 1, 2, 4, ... ranks together; see
    docs/GradProfile.md), the pass prices, on the ranks the allreduce runs
    among (its group's, when it has one):

    - the dense allreduce, every zero included (with its `algorithm`);
    - `comm.sparse_allreduce` with `select = rows` and the allgather
      exchange: every rank gathers every rank's touched rows, a volume that
      grows with the ranks;
    - the same with Zen's hash-balanced exchange: each row goes to the rank
      that owns its hash partition and the owners' sums are gathered, a
      volume that follows the rows all ranks touch together.

    A rank touches `d = rows_touched[0]` of the rows; the ranks together
    touch `u`, read from `rows_touched` at the collective's rank count
    (linear in log2 of the ranks between the measured powers of two; past
    the last, the ranks beyond it are taken as independent:
    `1 - (1 - u_last)^(p / p_last)`). The rows exchanges are priced as
    comm-estimate prices the op: every message the runtime sends, and the
    local steps (finding the touched rows, copying them, adding the received
    ones) at the rates of `device`, on a channel with `sparse-overlap`.

    With `exchange=auto` (the default) the cheapest wins, dense on a tie:
    the exchange is lossless, so only its cost decides, and a plan never
    gets slower than the dense one by the model. `allgather`, `hash` or
    `dense` make every marked gradient take that one (for measurements).
    The new op gets `density = d` and `union_density = u`, and keeps the
    allreduce's `reduce`, `name` and `group`:

    ```mlir
    %r = comm.sparse_allreduce %g {density = 1.000000e-02 : f64,
        exchange = #comm.exchange<hash>, name = "embedding.weight",
        reduce = #comm.reduce<avg>, select = #comm.select<rows>,
        union_density = 6.000000e-02 : f64}
        : tensor<100000x64xf32> -> tensor<100000x64xf32>
    ```

    Allreduces without `comm.rows_touched`, in buffer form, of dynamic shape,
    with a `wire` type or `prescale`, or reducing other than by `sum` or
    `avg` are left alone. A malformed `comm.rows_touched` (not an
    `array<f64>` of nondecreasing fractions in (0, 1]) is an error naming
    the op.
  }];
  let options = [
    CommClusterOption,
    CommChoiceOption<"exchange", "exchange", "RowsExchangeChoice", "Auto",
                     "Exchange of the gradients that are sparse by nature "
                     "(default: auto)",
                     "COMMOPT_ROWS_EXCHANGE_VALUES">,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset or JSON file that finds, copies and adds the rows "
           "(default: v100)">,
    Option<"sparseOverlap", "sparse-overlap", "bool", /*default=*/"true",
           "Price the rows exchanges started on a channel, as "
           "comm-schedule-overlap's sparse=true will run them (default: "
           "true)">
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
    compares the dense allreduce, `allreduceCost(cluster, bytes)` (with the
    op's `algorithm` when it has one), with the sparse allreduce at
    `density`: the exchange's messages, `sparseAllreduceCost(cluster, scheme,
    {n, density, value bytes, 8-byte indices, chunk-elements})` (every
    collective the runtime issues, its counts included), plus its local steps (forming the
    accumulated gradient, the selection's passes, the result and the
    residual update: `sparseLocalBytes`) at the memory bandwidth of
    `device`, as comm-estimate prices the op (with `sparse-overlap`, the
    default, started on a channel as comm-schedule-overlap will run it: the
    local steps take the device's `channel_slowdown` times as long); for
    the scheme `exchange`
    names, or for each of `allgather`, `hash`, `chunk` with `exchange=auto`,
    which takes the cheapest (the first in that order on a tie). The
    gradient goes sparse only when that cost is strictly below the dense
    one, so dense stays where sparse would not pay, e.g. everywhere on a
    cluster of one rank. An
    allreduce over a process group (`group`) is priced on its group's ranks
    and links (ClusterModel::forGroup), as comm-estimate prices it.

    Selection is `select` (`threshold`, RedSync's, or `topk`), except with the
    chunk exchange, which needs chunk selection (and gets
    `chunk_elements = chunk-elements`). The op keeps the allreduce's
    `reduce`, `name` and `group`.

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
           "chunk exchange), in (0, 1]; RedSync's 0.1% (default: 0.001)">,
    CommClusterOption,
    CommChoiceOption<"exchange", "exchange", "SparseExchangeChoice", "Auto",
                     "Sparse exchange (default: auto)",
                     "COMMOPT_SPARSE_EXCHANGE_VALUES">,
    CommChoiceOption<"select", "select", "SparseSelectChoice", "Threshold",
                     "Selection for the allgather and hash exchanges (the "
                     "chunk exchange always selects chunks) (default: "
                     "threshold)",
                     "COMMOPT_SPARSE_SELECT_VALUES">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1048576",
           "Gradients smaller than this many bytes stay dense (default: "
           "1048576)">,
    Option<"chunkElements", "chunk-elements", "int64_t", /*default=*/"32768",
           "Elements per chunk of the chunk exchange (default: 32768)">,
    Option<"device", "device", "std::string", /*default=*/"\"v100\"",
           "Device preset or JSON file that runs the selection and the "
           "residual update, priced by its memory bandwidth (default: v100)">,
    Option<"all", "all", "bool", /*default=*/"false",
           "Make every candidate sparse with its cheapest exchange, not only "
           "those whose sparse allreduce the cost model finds cheaper than "
           "the dense one (default: false)">,
    Option<"exclude", "exclude", "std::string", /*default=*/"\"\"",
           "Comma-separated parameters (comm.allreduce `name`s) whose "
           "gradients stay dense (default: '')">,
    Option<"sparseOverlap", "sparse-overlap", "bool", /*default=*/"true",
           "Price the sparse allreduces started on a channel, their local "
           "steps at the device's channel_slowdown, as comm-schedule-overlap's "
           "sparse=true will run them, rather than blocking (default: true)">
  ];
  let dependentDialects = [
    "::mlir::comm::CommDialect", "::mlir::ml_program::MLProgramDialect"
  ];
}

#endif // COMM_PASSES_TD
