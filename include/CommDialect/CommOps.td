//===- CommOps.td - Operations of the comm dialect ---------*- tablegen -*-===//

#ifndef COMM_OPS_TD
#define COMM_OPS_TD

include "CommDialect/CommDialect.td"
include "CommDialect/CommAttrs.td"
include "CommDialect/CommTypes.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
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

// The process group a collective runs among; none means all ranks.
defvar Comm_GroupArg = (ins OptionalAttr<Comm_GroupAttr>:$group);

// Collectives read and write their gradients and, beyond that, talk to other
// ranks: they may not be removed or reordered by generic transformations.
// Their group refers to a grid symbol, checked against the module.
defvar Comm_CollectiveTraits = [
  DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
  DeclareOpInterfaceMethods<SymbolUserOpInterface>,
  DeclareOpInterfaceMethods<BufferizableOpInterface,
      ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
       "getAliasingValues", "bufferize"]>];

def Comm_AllReduceOp : Comm_Op<"allreduce", Comm_CollectiveTraits> {
  let summary = "Allreduce of one gradient across ranks";
  let description = [{
    Reduces `input` element-wise across all ranks, or, with `group`, within
    each process group of a device grid (see `#comm.group`). With a tensor
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
    ```
  }];
  let arguments = !con((ins Comm_Gradient:$input),
                       Comm_CollectiveAttrs,
                       (ins OptionalAttr<StrAttr>:$name),
                       Comm_GroupArg);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat =
      "$input attr-dict `:` type($input) (`->` type($result)^)?";
  let hasVerifier = 1;
}

def Comm_FusedAllReduceOp : Comm_Op<"fused_allreduce", Comm_CollectiveTraits> {
  let summary = "One allreduce over several gradients (a fusion bucket)";
  let description = [{
    Reduces all `inputs` with one collective: the runtime packs them into one
    fusion buffer, reduces it and unpacks it. Results come in operand order.
    All operands share one element type and, with `group`, one process
    group. `names` lists the parameters' names.

    Example:

    ```mlir
    %r:2 = comm.fused_allreduce %w, %b {names = ["fc.weight", "fc.bias"],
                                        reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32>, tensor<1000xf32>
        -> tensor<1000x2048xf32>, tensor<1000xf32>
    ```
  }];
  let arguments = !con((ins Variadic<Comm_Gradient>:$inputs),
                       Comm_CollectiveAttrs,
                       (ins OptionalAttr<StrArrayAttr>:$names),
                       Comm_GroupArg);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat =
      "$inputs attr-dict `:` type($inputs) (`->` type($results)^)?";
  let hasVerifier = 1;
}

def Comm_StartOp : Comm_Op<"start", Comm_CollectiveTraits> {
  let summary = "Start an asynchronous allreduce";
  let description = [{
    The first half of a collective split for overlap: starts an allreduce of
    `inputs` (one gradient, or several fused into one collective; among all
    ranks or within the process groups of `group`) and returns a token.
    Exactly one `comm.wait` consumes the token and yields the results.
    `channel` picks the communication stream (collectives on different
    channels may be in flight at once); `priority` orders collectives
    waiting for the same channel (lower is more urgent).

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
                       Comm_GroupArg);
  let results = (outs Comm_TokenType:$token);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def Comm_WaitOp : Comm_Op<"wait", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToAllocation", "bufferize"]>]> {
  let summary = "Wait for an asynchronous allreduce and take its results";
  let description = [{
    Completes the collective that `comm.start` began and returns the reduced
    gradients in the start's operand order (nothing in buffer form, where the
    start's memrefs hold the results).

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
    /// The start whose collective this wait completes.
    StartOp getStart();
  }];
}

//===----------------------------------------------------------------------===//
// Profile skeletons and queries
//===----------------------------------------------------------------------===//

def Comm_ComputeOp : Comm_Op<"compute", [
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

    Example:

    ```mlir
    comm.compute () {cost_us = 95.0 : f64, layer = 7 : i64,
                     name = "fc", phase = #comm.phase<forward>} : () -> ()
    %gw, %gb = comm.compute (%x) {cost_us = 480.0 : f64, layer = 7 : i64,
                                  name = "fc", phase = #comm.phase<backward>}
        : (tensor<32x2048xf32>) -> (tensor<1000x2048xf32>, tensor<1000xf32>)
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, F64Attr:$cost_us,
                       OptionalAttr<StrAttr>:$name,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$layer,
                       OptionalAttr<Comm_PhaseAttr>:$phase);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat =
      "`(` $inputs `)` attr-dict `:` functional-type($inputs, $results)";
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
