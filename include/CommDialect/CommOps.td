//===- CommOps.td - Operations of the comm dialect ---------*- tablegen -*-===//

#ifndef COMM_OPS_TD
#define COMM_OPS_TD

include "CommDialect/CommDialect.td"
include "CommDialect/CommAttrs.td"
include "CommDialect/CommTypes.td"
include "CommDialect/CommInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Comm_ElementType : AnyTypeOf<[AnyFloat, AnySignlessInteger]>;

// A gradient: a ranked tensor (value semantics) or, after bufferization, a
// memref that the collective updates in place.
def Comm_Gradient : AnyTypeOf<[RankedTensorOf<[Comm_ElementType]>,
                               MemRefOf<[Comm_ElementType]>],
    "ranked tensor or memref of floats or signless integers">;

// A gradient that can be sparsified: selection by magnitude needs floats.
def Comm_FloatGradient : AnyTypeOf<[RankedTensorOf<[AnyFloat]>,
                                    MemRefOf<[AnyFloat]>],
    "ranked tensor or memref of floats">;

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// Attributes every dense collective carries: the reduction and the wire
// precision (`wire`, with an optional `prescale` applied before the cast so
// that a narrow wire type does not overflow).
defvar Comm_CollectiveAttrs = (ins
  DefaultValuedAttr<Comm_ReduceKindAttr, "::mlir::comm::ReduceKind::sum">:$reduce,
  OptionalAttr<TypeAttr>:$wire,
  OptionalAttr<F64Attr>:$prescale);

// The process group a collective runs among; none means all ranks. The
// algorithm it runs and the backend that carries it (`comm-select-algorithm`);
// none means the runtime's default, and the backend in use.
defvar Comm_GroupAndAlgorithmArgs = (ins OptionalAttr<Comm_GroupAttr>:$group,
                            OptionalAttr<Comm_AlgorithmKindAttr>:$algorithm,
                            OptionalAttr<Comm_TransportKindAttr>:$transport);

// A mixed-wire bucket: which of its gradients travel in `wire` (the others
// travel in their own type); none means all of them.
defvar Comm_NarrowedArgs = (ins OptionalAttr<DenseBoolArrayAttr>:$narrowed);

// Collectives read and write their gradients and, beyond that, talk to other
// ranks: they may not be removed or reordered by generic transformations.
defvar Comm_CollectiveTraits = [
  DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
  DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
      ["getGradients", "getGradientNames"]>];

// Dense collectives may run among a process group, whose grid symbol is
// checked against the module.
defvar Comm_DenseCollectiveTraits = !listconcat(Comm_CollectiveTraits,
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]);

// Buckets (fused allreduces and starts) may also mix wire types.
defvar Comm_BucketTraits = [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getNarrowedGradients"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>];

def Comm_AllReduceOp : Comm_Op<"allreduce", Comm_DenseCollectiveTraits> {
  let summary = "Allreduce of one gradient across ranks";
  let description = [{
    Reduces `input` element-wise across all ranks, or, with `group`, within
    each process group of a device grid (see `#comm.group`). `algorithm`
    (`#comm.algorithm`, optional on every dense collective) names the
    allreduce algorithm the runtime runs; without it, the runtime's default.
    `transport` (`#comm.transport`, optional likewise) names the runtime
    backend that carries it; without it, the backend in use. With a tensor
    operand the op returns the reduced tensor (of the operand's type); with
    a memref operand it reduces the buffer in place and has no result.
    `name` is the parameter's name, kept for reports.

    `wire` names a narrower floating-point type (f16 or bf16) in which the
    data travels; `prescale` multiplies the data before the cast (e.g. by
    1/world_size for an average, as PyTorch DDP's fp16 hook does).

    Example:

    ```mlir
    %r = comm.allreduce %g {name = "fc.weight", reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    comm.allreduce %m {reduce = #comm.reduce<avg>} : memref<1000xf32>
    // Within the rows of a 2x4 grid of ranks.
    %s = comm.allreduce %g {group = #comm.group<@grid, axes = [1]>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    // With the latency-optimal algorithm.
    %t = comm.allreduce %g {algorithm = #comm.algorithm<tree>}
        : tensor<1000xf32> -> tensor<1000xf32>
    // Over the MPI backend, where commrt also has NCCL.
    %u = comm.allreduce %g {algorithm = #comm.algorithm<tree>,
                            transport = #comm.transport<mpi>}
        : tensor<1000xf32> -> tensor<1000xf32>
    ```
  }];
  let arguments = !con((ins Comm_Gradient:$input),
                       Comm_CollectiveAttrs,
                       (ins OptionalAttr<StrAttr>:$name),
                       Comm_GroupAndAlgorithmArgs);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat =
      "$input attr-dict `:` type($input) (`->` type($result)^)?";
  let hasVerifier = 1;
}

def Comm_FusedAllReduceOp : Comm_Op<"fused_allreduce", Comm_BucketTraits> {
  let summary = "One allreduce over several gradients (a fusion bucket)";
  let description = [{
    Reduces all `inputs` with one collective: the runtime packs them into one
    fusion buffer, reduces it and unpacks it. Results come in operand order.
    All operands share one element type and, with `group`, one process
    group. `names` lists the parameters' names.

    A mixed-wire bucket (`comm-fuse-buckets` makes them where one message is
    cheaper than two) has `wire` and `narrowed`, one flag per gradient: the
    gradients flagged `true` travel in `wire`, multiplied by `prescale`
    first; the others travel in their own type, unscaled. Each gradient's
    result is the one a bucket of its own kind would give it; the runtime
    packs both kinds into one message and reduces each segment in its own
    type. Such a bucket runs the ring (`algorithm`, if given, must be
    `ring`); `narrowed` holds both values.

    Example:

    ```mlir
    %r:2 = comm.fused_allreduce %w, %b {names = ["fc.weight", "fc.bias"],
                                        reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32>, tensor<1000xf32>
        -> tensor<1000x2048xf32>, tensor<1000xf32>
    // The weight in f16, the bias in f32, in one message.
    %m:2 = comm.fused_allreduce %w, %b {narrowed = array<i1: true, false>,
                                        prescale = 1.250000e-01 : f64,
                                        reduce = #comm.reduce<avg>, wire = f16}
        : tensor<1000x2048xf32>, tensor<1000xf32>
        -> tensor<1000x2048xf32>, tensor<1000xf32>
    ```
  }];
  let arguments = !con((ins Variadic<Comm_Gradient>:$inputs),
                       Comm_CollectiveAttrs,
                       (ins OptionalAttr<StrArrayAttr>:$names),
                       Comm_GroupAndAlgorithmArgs,
                       Comm_NarrowedArgs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) (`->` type($results)^)?";
  let hasVerifier = 1;
}

def Comm_StartOp : Comm_Op<"start", !listconcat(Comm_BucketTraits,
    [Comm_StartedCollectiveOpInterface])> {
  let summary = "Start an asynchronous allreduce";
  let description = [{
    The first half of a collective split for overlap: starts an allreduce of
    `inputs` (one gradient, or several fused into one collective; among all
    ranks or within the process groups of `group`) and returns a token.
    Exactly one `comm.wait` consumes the token and yields the results.
    `channel` picks the communication stream (collectives on different
    channels may be in flight at once); `priority` orders collectives
    waiting for the same channel (lower is more urgent). `narrowed` makes a
    mixed-wire bucket, as on `comm.fused_allreduce`.

    Example:

    ```mlir
    %t = comm.start %w, %b {channel = 1 : i64, reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32>, tensor<1000xf32>
    // ... compute that does not need the reduced gradients ...
    %r:2 = comm.wait %t : tensor<1000x2048xf32>, tensor<1000xf32>
    ```
  }];
  let arguments = !con((ins Variadic<Comm_Gradient>:$inputs),
                       Comm_CollectiveAttrs,
                       (ins OptionalAttr<StrArrayAttr>:$names,
                            DefaultValuedAttr<ConfinedAttr<I64Attr,
                                [IntNonNegative]>, "0">:$channel,
                            OptionalAttr<I64Attr>:$priority),
                       Comm_GroupAndAlgorithmArgs,
                       Comm_NarrowedArgs);
  let results = (outs Comm_TokenType:$token);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Comm_WaitOp : Comm_Op<"wait", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Wait for an asynchronous allreduce and take its results";
  let description = [{
    Completes the collective that `comm.start` or `comm.sparse_start` began
    and returns its results: the reduced gradients in the start's operand
    order, or a sparse start's reduced gradient and new residual (nothing in
    buffer form, where the start's memrefs hold the results).

    Example:

    ```mlir
    %r = comm.wait %t : tensor<1000xf32>
    ```
  }];
  let arguments = (ins Comm_TokenType:$token);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$token attr-dict (`:` type($results)^)?";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The dense start whose collective this wait completes, or null.
    StartOp getStart();
    /// The op that started the collective: a comm.start or a
    /// comm.sparse_start (null only in IR that fails verification).
    StartedCollectiveOpInterface getStartingOp();
  }];
}

// The operands and attributes of a sparse allreduce, blocking or started.
defvar Comm_SparseArgs = (ins Comm_FloatGradient:$grad,
                              Optional<Comm_FloatGradient>:$residual_in,
                              F64Attr:$density,
                              Comm_SelectKindAttr:$select,
                              Comm_ExchangeKindAttr:$exchange,
                              DefaultValuedAttr<Comm_ReduceKindAttr,
                                  "::mlir::comm::ReduceKind::sum">:$reduce,
                              OptionalAttr<ConfinedAttr<I64Attr,
                                  [IntPositive]>>:$chunk_elements,
                              OptionalAttr<F64Attr>:$union_density,
                              OptionalAttr<StrAttr>:$name,
                              OptionalAttr<Comm_GroupAttr>:$group);

// A sparse allreduce is a collective of one gradient that has no wire type,
// prescale or allreduce algorithm of its own.
defvar Comm_SparseTraits = [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getWireType",
         "getPrescaleFactor", "getAllreduceAlgorithm",
         "setAllreduceAlgorithm", "isDenseAllreduce", "canNarrowWire",
         "narrowWire"]>,
    Comm_SparseCollectiveOpInterface];

def Comm_SparseAllReduceOp : Comm_Op<"sparse_allreduce", Comm_SparseTraits> {
  let summary = "Sparse allreduce of one gradient: compressed with a "
                "residual, or lossless by rows";
  let description = [{
    Residual gradient compression (RedSync, GradientFlow, Zen): each rank
    sends only a small part of its gradient and keeps the rest in a residual
    that is added to the next step's gradient, so that nothing is lost, only
    delayed. Or, with `select = rows` and no residual, the lossless exchange
    of a gradient that is sparse by nature (an embedding's, Zen): see the
    end.

    On every rank, with `numel` the number of elements of `grad`:

    1. `acc = grad + residual_in`, element-wise.
    2. Select entries of `acc` by magnitude, as `select` says:
       - `topk`: exactly the `k = ceil(density * numel)` entries of largest
         magnitude;
       - `threshold`: the entries whose magnitude reaches a threshold found
         by search so that approximately `k` are selected (RedSync's
         selection, cheaper than an exact top-k on GPUs);
       - `chunk`: `acc` is split, in row-major order, into chunks of
         `chunk_elements` consecutive entries (default 32768; the last chunk
         may be shorter); the ranks allreduce the chunks' norms and all
         select the same `ceil(density * chunks)` chunks of largest norm
         (GradientFlow's coarse-grained selection). `density` is then the
         fraction of chunks.
    3. Exchange the selected entries, as `exchange` says:
       - `allgather`: every rank gathers every rank's (index, value) pairs;
       - `hash`: each pair goes, by an all-to-all, to the rank owning the
         hash partition of its index; the owners reduce what they receive
         and the reduced partitions are allgathered (Zen's hash-balanced
         exchange, whose volume does not grow with the number of ranks as
         the allgather's does);
       - `chunk`: the agreed chunks are allreduced dense, without indices.
       The scheme changes the cost, not the result.
    4. `reduced` is dense: at every index, the reduction over all ranks of
       the entries they selected there (an unselected entry counts as zero),
       zero where no rank selected anything. `reduce` is `sum` or `avg`
       (the sum divided by the number of ranks).
    5. `residual_out = acc - sent`: `acc` with the entries this rank sent set
       to zero, so that what is sent plus what is kept is exactly `acc`.

    `select = chunk` goes with `exchange = chunk` and only with it: chunk
    selection is what makes all ranks agree on the chunks that the chunk
    exchange allreduces, and the other exchanges send pairs of individually
    selected entries. `chunk_elements` may be given only for that pairing.
    `density` is in (0, 1]; `name` is the parameter's name, for reports.
    With `group` (`#comm.group`, as on the dense collectives) every step
    runs within each process group of the grid: the exchange, the chunk
    norms and `avg`'s division count the group's ranks only.

    With tensors the op returns `reduced` and `residual_out`, of the
    operands' type. With memrefs (after bufferization) it works in place and
    has no results: the `grad` buffer receives `reduced` and the
    `residual_in` buffer `residual_out`.

    Worked example: two ranks, 8 elements, `density = 0.25` (so `k = 2`),
    `select = topk`, `exchange = allgather`, `reduce = sum`.

    ```
    rank 0: grad     = [0.1, 0.3, -0.9, 0, 0.2,    0,   0, 0.4]
            residual = [0,   0.5,  0,   0, 0,      0,   0, 0  ]
            acc      = [0.1, 0.8, -0.9, 0, 0.2,    0,   0, 0.4]
            sends      {2: -0.9, 1: 0.8}
            residual_out = [0.1, 0, 0, 0, 0.2, 0, 0, 0.4]
    rank 1: grad     = [0,   0,    0.6, 0, 0,   -0.7, 0.1, 0  ]
            residual = 0, so acc = grad
            sends      {5: -0.7, 2: 0.6}
            residual_out = [0, 0, 0, 0, 0, 0, 0.1, 0]
    both:   reduced  = [0,   0.8, -0.3, 0, 0,   -0.7,   0, 0  ]
    ```

    With `reduce = avg`, `reduced` would be half of that.

    `select = rows` is lossless and takes no `residual_in` (every other
    selection needs one): `grad` is seen as rows, along its first dimension
    (a 1-D gradient's rows are its entries), and every row holding an entry
    other than zero (NaN included) is sent whole, with its row index, by the
    `allgather` or `hash` exchange (whose owners own rows). `reduced` is the
    dense allreduce's result up to the order of summation. `density` is the
    fraction of rows the plan expects a rank's step to touch: the cost model
    prices the exchange with it, and the result does not depend on it. With
    tensors the op returns `reduced` alone; with memrefs `grad` receives it.

    `union_density`, in [`density`, 1], is the fraction of rows (or
    entries) that some rank of the collective sends: what the hash
    exchange's owners reduce and gather. A plan made from a profile records
    the measured figure (an embedding's popular rows are touched by every
    rank); without it the cost model takes the ranks' choices as
    independent, `1 - (1 - density)^ranks`. Like `density`, it changes the
    cost, not the result.

    ```mlir
    %reduced = comm.sparse_allreduce %emb_grad
        {density = 2.000000e-02 : f64, exchange = #comm.exchange<hash>,
         name = "embedding.weight", reduce = #comm.reduce<avg>,
         select = #comm.select<rows>}
        : tensor<100000x64xf32> -> tensor<100000x64xf32>
    ```

    The residuals live
    across steps in state that `comm-sparsify` creates
    (`ml_program.global`s):

    ```mlir
    %res = ml_program.global_load @fc_weight_residual : tensor<1000x2048xf32>
    %reduced, %residual = comm.sparse_allreduce %grad, %res
        {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>,
         name = "fc.weight", reduce = #comm.reduce<avg>,
         select = #comm.select<threshold>}
        : tensor<1000x2048xf32>, tensor<1000x2048xf32>
        -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
    ml_program.global_store @fc_weight_residual = %residual
        : tensor<1000x2048xf32>

    comm.sparse_allreduce %g, %r {chunk_elements = 4096 : i64,
        density = 1.000000e-02 : f64, exchange = #comm.exchange<chunk>,
        select = #comm.select<chunk>} : memref<1024x1024xf32>, memref<1024x1024xf32>

    // Within each row of a 2x2 grid (`shard.grid @grid(shape = 2x2)`).
    comm.sparse_allreduce %e, %s {density = 1.000000e-03 : f64,
        exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [1]>,
        select = #comm.select<topk>} : memref<4096xf32>, memref<4096xf32>
    ```
  }];
  let arguments = Comm_SparseArgs;
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $grad (`,` $residual_in^)? attr-dict `:` type($grad)
    (`,` type($residual_in)^)? (`->` type($results)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The reduced gradient (tensor form), or null (buffer form).
    ::mlir::Value getReduced() {
      return getResults().empty() ? ::mlir::Value() : getResults()[0];
    }
    /// The new residual (tensor form with a residual), or null.
    ::mlir::Value getResidualOut() {
      return getResults().size() == 2 ? getResults()[1] : ::mlir::Value();
    }
  }];
}

def Comm_SparseStartOp : Comm_Op<"sparse_start", !listconcat(Comm_SparseTraits,
    [Comm_StartedCollectiveOpInterface])> {
  let summary = "Start an asynchronous sparse allreduce";
  let description = [{
    The first half of a `comm.sparse_allreduce` split for overlap: starts the
    sparse allreduce of `grad` with `residual_in` (same attributes and
    semantics) on `channel` and returns a token. Exactly one `comm.wait`
    consumes the token and yields, in tensor form, the reduced gradient and
    the new residual (the reduced gradient alone with `select = rows`; in
    buffer form nothing: `grad` and `residual_in` hold them). `channel` and `priority` are those of `comm.start`.

    Example:

    ```mlir
    %t = comm.sparse_start %grad, %res {channel = 1 : i64,
        density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>,
        select = #comm.select<threshold>}
        : tensor<1000x2048xf32>, tensor<1000x2048xf32>
    // ... compute that does not need the reduced gradient ...
    %reduced, %residual = comm.wait %t
        : tensor<1000x2048xf32>, tensor<1000x2048xf32>
    ```
  }];
  let arguments = !con(Comm_SparseArgs,
                       (ins DefaultValuedAttr<ConfinedAttr<I64Attr,
                                [IntNonNegative]>, "0">:$channel,
                            OptionalAttr<I64Attr>:$priority));
  let results = (outs Comm_TokenType:$token);
  let assemblyFormat = [{
    $grad (`,` $residual_in^)? attr-dict `:` type($grad)
    (`,` type($residual_in)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sharded collectives (ZeRO, FSDP)
//===----------------------------------------------------------------------===//

// The attributes the sharded collectives share: the number of shards (the
// ranks of the world or of the group), the wire type and prescale, the
// parameters' names and the process group.
defvar Comm_ShardedArgs = (ins ConfinedAttr<I64Attr, [IntPositive]>:$shards,
                               OptionalAttr<TypeAttr>:$wire,
                               OptionalAttr<F64Attr>:$prescale,
                               OptionalAttr<StrArrayAttr>:$names,
                               OptionalAttr<Comm_GroupAttr>:$group);

// A sharded collective is a collective with no allreduce algorithm of its
// own.
defvar Comm_ShardedTraits = [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>];

def Comm_ReduceScatterOp : Comm_Op<"reduce_scatter", !listconcat(
    Comm_ShardedTraits,
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getAllreduceAlgorithm",
         "setAllreduceAlgorithm", "isDenseAllreduce"]>])> {
  let summary = "Reduce-scatter of gradients into each rank's shard";
  let description = [{
    Reduces the flat tensor made of `inputs` (each seen flat in row-major
    order, concatenated in operand order: FSDP's flat parameter, XLA's
    combined reduce-scatter) element-wise across the `shards` ranks (all
    ranks, or with `group` the ranks of each process group) and gives each
    rank its shard of the result: the flat tensor of N elements is cut into
    `shards` pieces of ceil(N / shards) elements, and rank r (its index in
    the group) gets piece r. Where `shards` does not divide N, the last
    pieces are shorter or empty and the shard is padded with zeros. The
    shard has ceil(N / shards) elements in any shape. `shards` must be the
    number of ranks the collective runs among; the runtime checks it. As
    sharded data parallelism (ZeRO-2, FSDP) reduces gradients. `names`
    lists the parameters' names.

    `wire` and `prescale` are those of `comm.allreduce`. In buffer form the
    result goes `into` the shard's buffer, and the inputs' buffers are the
    collective's working memory: their contents afterwards are unspecified.

    Example:

    ```mlir
    %s = comm.reduce_scatter %g {reduce = #comm.reduce<avg>, shards = 4 : i64}
        : tensor<1000x10xf32> -> tensor<250x10xf32>
    // A flat tensor of two gradients, 1010 elements: shards of 253.
    %f = comm.reduce_scatter %w, %b {names = ["fc.weight", "fc.bias"],
                                     shards = 4 : i64}
        : tensor<1000xf32>, tensor<10xf32> -> tensor<253xf32>
    // 10 elements on 4 ranks: shards of 3, the last one of 1 and padding.
    comm.reduce_scatter %m into %sm {shards = 4 : i64}
        : memref<10xf32> into memref<3xf32>
    ```
  }];
  let arguments = !con((ins Variadic<Comm_Gradient>:$inputs,
                            Optional<AnyMemRef>:$shard),
                       (ins DefaultValuedAttr<Comm_ReduceKindAttr,
                            "::mlir::comm::ReduceKind::sum">:$reduce),
                       Comm_ShardedArgs);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $inputs (`into` $shard^)? attr-dict `:` type($inputs)
    (`into` type($shard)^)? (`->` type($result)^)?
  }];
  let hasVerifier = 1;
}

def Comm_AllGatherOp : Comm_Op<"all_gather", !listconcat(
    Comm_ShardedTraits,
    [DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getReduceKind",
         "getAllreduceAlgorithm", "setAllreduceAlgorithm",
         "isDenseAllreduce", "canNarrowWire"]>])> {
  let summary = "All-gather of every rank's shard into whole tensors";
  let description = [{
    The inverse of `comm.reduce_scatter`'s sharding: every rank's `input`
    shard (ceil(N / shards) elements) goes to its place in the flat tensor
    of N elements made of the results (each seen flat in row-major order,
    concatenated in order); shard elements past N are not read. As sharded
    data parallelism (ZeRO-3, FSDP) gathers parameters before use.

    With `wire`, each shard travels rounded to `wire` after the
    multiplication by `prescale`, and every rank, the shard's owner
    included, holds the rounded values, so that all ranks hold the same
    tensors. comm-lower-precision leaves all-gathers alone: they carry
    parameters, not gradients. In buffer form the results go `into` the
    output buffers.

    Example:

    ```mlir
    %w = comm.all_gather %s {shards = 4 : i64}
        : tensor<250x10xf32> -> tensor<1000x10xf32>
    %p:2 = comm.all_gather %f {names = ["fc.weight", "fc.bias"],
                               shards = 4 : i64}
        : tensor<253xf32> -> tensor<1000xf32>, tensor<10xf32>
    comm.all_gather %sm into %m {shards = 4 : i64}
        : memref<3xf32> into memref<10xf32>
    ```
  }];
  let arguments = !con((ins Comm_Gradient:$input,
                            Variadic<AnyMemRef>:$outputs),
                       Comm_ShardedArgs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $input (`into` $outputs^)? attr-dict `:` type($input)
    (`into` type($outputs)^)? (`->` type($results)^)?
  }];
  let hasVerifier = 1;
}

// The attributes of a sharded collective's start: its channel and priority.
defvar Comm_ChannelArgs = (ins DefaultValuedAttr<ConfinedAttr<I64Attr,
                                   [IntNonNegative]>, "0">:$channel,
                               OptionalAttr<I64Attr>:$priority);

def Comm_ReduceScatterStartOp : Comm_Op<"reduce_scatter_start", !listconcat(
    Comm_ShardedTraits,
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getAllreduceAlgorithm",
         "setAllreduceAlgorithm", "isDenseAllreduce"]>,
     DeclareOpInterfaceMethods<Comm_StartedCollectiveOpInterface,
        ["getResultBuffers"]>])> {
  let summary = "Start an asynchronous reduce-scatter";
  let description = [{
    `comm.reduce_scatter` split for overlap: starts the reduce-scatter of
    `inputs` on `channel` (with `priority`, as `comm.start`) and returns a
    token, which exactly one `comm.wait` consumes; in tensor form the wait
    returns the shard, whose type the wait gives. In buffer form the shard
    goes `into` its buffer by the wait.

    ```mlir
    %t = comm.reduce_scatter_start %w, %b {channel = 1 : i64, shards = 4 : i64}
        : tensor<1000xf32>, tensor<10xf32>
    %s = comm.wait %t : tensor<253xf32>
    ```
  }];
  let arguments = !con((ins Variadic<Comm_Gradient>:$inputs,
                            Optional<AnyMemRef>:$shard),
                       (ins DefaultValuedAttr<Comm_ReduceKindAttr,
                            "::mlir::comm::ReduceKind::sum">:$reduce),
                       Comm_ShardedArgs, Comm_ChannelArgs);
  let results = (outs Comm_TokenType:$token);
  let assemblyFormat = [{
    $inputs (`into` $shard^)? attr-dict `:` type($inputs)
    (`into` type($shard)^)?
  }];
  let hasVerifier = 1;
}

def Comm_AllGatherStartOp : Comm_Op<"all_gather_start", !listconcat(
    Comm_ShardedTraits,
    [DeclareOpInterfaceMethods<Comm_CollectiveOpInterface,
        ["getGradients", "getGradientNames", "getReduceKind",
         "getAllreduceAlgorithm", "setAllreduceAlgorithm",
         "isDenseAllreduce", "canNarrowWire"]>,
     DeclareOpInterfaceMethods<Comm_StartedCollectiveOpInterface,
        ["getResultBuffers"]>])> {
  let summary = "Start an asynchronous all-gather";
  let description = [{
    `comm.all_gather` split for overlap, as `comm.reduce_scatter_start`:
    the wait returns the whole tensors (in tensor form) or fills the output
    buffers (in buffer form). A prefetched parameter is gathered this way
    ahead of the layer that needs it.

    ```mlir
    %t = comm.all_gather_start %s {channel = 1 : i64, shards = 4 : i64}
        : tensor<253xf32>
    %w, %b = comm.wait %t : tensor<1000xf32>, tensor<10xf32>
    ```
  }];
  let arguments = !con((ins Comm_Gradient:$input,
                            Variadic<AnyMemRef>:$outputs),
                       Comm_ShardedArgs, Comm_ChannelArgs);
  let results = (outs Comm_TokenType:$token);
  let assemblyFormat = [{
    $input (`into` $outputs^)? attr-dict `:` type($input)
    (`into` type($outputs)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Profile skeletons and queries
//===----------------------------------------------------------------------===//

def Comm_ComputeOp : Comm_Op<"compute", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "An opaque compute step with a measured cost";
  let description = [{
    Stands for a piece of a training step that commopt does not look into: a
    layer's forward or backward pass imported from a profile. `cost_us` is
    its duration in microseconds. The results are values it produces (for a
    backward step, the layer's gradients); their contents are unspecified.
    `name` names the step for reports and traces. `layer` (the layer's index
    in forward order) and `phase` tie the step to the model's structure: a
    layer's backward step produces its gradients, and in steady state its
    next forward step needs them reduced.

    In buffer form the step writes `outs` instead of returning tensors:
    bufferization gives each tensor result a new buffer and passes it there.
    Their contents are unspecified too; `convert-comm-to-runtime` fills them
    with synthetic gradient values (`commrt_fill_gradient`).

    Example:

    ```mlir
    comm.compute () {cost_us = 95.0 : f64, layer = 7 : i64,
                     name = "fc", phase = #comm.phase<forward>} : () -> ()
    %gw, %gb = comm.compute (%x) {cost_us = 480.0 : f64, layer = 7 : i64,
                                  name = "fc", phase = #comm.phase<backward>}
        : (tensor<32x2048xf32>) -> (tensor<1000x2048xf32>, tensor<1000xf32>)
    // The same in buffer form.
    comm.compute (%xb) outs(%gwb, %gbb : memref<1000x2048xf32>,
                                         memref<1000xf32>)
        {cost_us = 480.0 : f64, layer = 7 : i64, name = "fc",
         phase = #comm.phase<backward>} : (memref<32x2048xf32>) -> ()
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs,
                       Variadic<AnyMemRef>:$outputs, F64Attr:$cost_us,
                       OptionalAttr<StrAttr>:$name,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$layer,
                       OptionalAttr<Comm_PhaseAttr>:$phase);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    `(` $inputs `)` (`outs` `(` $outputs^ `:` type($outputs) `)`)? attr-dict
    `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def Comm_RankOp : Comm_Op<"rank", [Pure]> {
  let summary = "This process's rank";
  let description = [{
    The rank of the calling process among all ranks, in `[0, world_size)`.

    ```mlir
    %r = comm.rank
    ```
  }];
  let results = (outs Index:$rank);
  let assemblyFormat = "attr-dict";
}

def Comm_WorldSizeOp : Comm_Op<"world_size", [Pure]> {
  let summary = "The number of ranks";
  let description = [{
    The number of ranks taking part in the collectives.

    ```mlir
    %n = comm.world_size
    ```
  }];
  let results = (outs Index:$size);
  let assemblyFormat = "attr-dict";
}

#endif // COMM_OPS_TD
