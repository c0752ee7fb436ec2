//===- CommAttrs.td - Attributes of the comm dialect -------*- tablegen -*-===//

#ifndef COMM_ATTRS_TD
#define COMM_ATTRS_TD

include "CommDialect/CommDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Comm_ReduceSum : I32EnumAttrCase<"sum", 0>;
def Comm_ReduceAvg : I32EnumAttrCase<"avg", 1>;
def Comm_ReduceMax : I32EnumAttrCase<"max", 2>;
def Comm_ReduceMin : I32EnumAttrCase<"min", 3>;

// The integer values are those of the runtime's commrt_reduce.
def Comm_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective",
    [Comm_ReduceSum, Comm_ReduceAvg, Comm_ReduceMax, Comm_ReduceMin]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_ReduceKindAttr : EnumAttr<Comm_Dialect, Comm_ReduceKind, "reduce"> {
  let summary = "The reduction a collective applies across ranks";
  let description = [{
    `#comm.reduce<sum>`, `<avg>` (sum divided by the number of ranks, the
    gradient average of data-parallel training), `<max>` or `<min>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_PhaseForward : I32EnumAttrCase<"forward", 0>;
def Comm_PhaseBackward : I32EnumAttrCase<"backward", 1>;
def Comm_PhaseOptimizer : I32EnumAttrCase<"optimizer", 2>;

def Comm_Phase : I32EnumAttr<"Phase", "part of a training step",
    [Comm_PhaseForward, Comm_PhaseBackward, Comm_PhaseOptimizer]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_PhaseAttr : EnumAttr<Comm_Dialect, Comm_Phase, "phase"> {
  let summary = "The part of a training step a compute step belongs to";
  let description = [{
    `#comm.phase<forward>`, `<backward>` or `<optimizer>`. The estimator's
    steady-state mode lets the next step's forward of a layer start as soon
    as that layer's gradients are reduced.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_SelectTopk : I32EnumAttrCase<"topk", 0>;
def Comm_SelectThreshold : I32EnumAttrCase<"threshold", 1>;
def Comm_SelectChunk : I32EnumAttrCase<"chunk", 2>;
def Comm_SelectRows : I32EnumAttrCase<"rows", 3>;

def Comm_SelectKind : I32EnumAttr<"SelectKind",
    "how a sparse collective selects the entries it sends",
    [Comm_SelectTopk, Comm_SelectThreshold, Comm_SelectChunk,
     Comm_SelectRows]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_SelectKindAttr : EnumAttr<Comm_Dialect, Comm_SelectKind, "select"> {
  let summary = "How a sparse collective selects the entries it sends";
  let description = [{
    `#comm.select<topk>`: exactly the k entries of largest magnitude.
    `#comm.select<threshold>`: the entries whose magnitude reaches a
    threshold found by search, approximately k of them (RedSync's selection,
    cheaper than an exact top-k on GPUs).
    `#comm.select<chunk>`: whole chunks of consecutive entries, chosen by
    their norms so that all ranks agree on them (GradientFlow's
    coarse-grained selection); goes with `#comm.exchange<chunk>`.
    `#comm.select<rows>`: lossless, for gradients that are sparse by nature
    (an embedding's): every row with a nonzero entry, whole, and no
    residual; goes with `#comm.exchange<allgather>` or `<hash>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_ExchangeAllgather : I32EnumAttrCase<"allgather", 0>;
def Comm_ExchangeHash : I32EnumAttrCase<"hash", 1>;
def Comm_ExchangeChunk : I32EnumAttrCase<"chunk", 2>;

def Comm_ExchangeKind : I32EnumAttr<"ExchangeKind",
    "how a sparse collective exchanges the selected entries",
    [Comm_ExchangeAllgather, Comm_ExchangeHash, Comm_ExchangeChunk]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_ExchangeKindAttr
    : EnumAttr<Comm_Dialect, Comm_ExchangeKind, "exchange"> {
  let summary = "How a sparse collective exchanges the selected entries";
  let description = [{
    `#comm.exchange<allgather>`: every rank gathers every rank's (index,
    value) pairs (RedSync); the volume grows with the number of ranks.
    `#comm.exchange<hash>`: pairs go by an all-to-all to the rank owning
    their hash partition, owners reduce them, and the reduced partitions are
    allgathered (Zen's hash-balanced exchange).
    `#comm.exchange<chunk>`: the chunks all ranks agreed on are allreduced
    dense, without indices (GradientFlow); goes with `#comm.select<chunk>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_AlgorithmRing : I32EnumAttrCase<"ring", 1>;
def Comm_AlgorithmTree : I32EnumAttrCase<"tree", 2>;
def Comm_AlgorithmHierarchical : I32EnumAttrCase<"hierarchical", 3>;

// The integer values are those of the runtime's commrt_algorithm (0 is
// COMMRT_ALGORITHM_DEFAULT, a collective without the attribute).
def Comm_AlgorithmKind : I32EnumAttr<"AlgorithmKind",
    "how a dense allreduce is carried out",
    [Comm_AlgorithmRing, Comm_AlgorithmTree, Comm_AlgorithmHierarchical]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_AlgorithmKindAttr
    : EnumAttr<Comm_Dialect, Comm_AlgorithmKind, "algorithm"> {
  let summary = "The algorithm a dense allreduce runs";
  let description = [{
    `#comm.algorithm<ring>`: the pipelined ring over all ranks of the
    collective (reduce-scatter, then allgather), bandwidth-optimal.
    `#comm.algorithm<tree>`: latency-optimal (a double binary tree in the
    cost model; the runtime's MPI_Allreduce or ncclAllReduce).
    `#comm.algorithm<hierarchical>`: reduce-scatter inside each node, an
    allreduce of the shards across nodes, allgather inside each node.
    `comm-select-algorithm` chooses one per collective with the cost model
    (docs/CostModel.md); a collective without it runs the runtime's default
    (`COMMRT_ALLREDUCE`).
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_TransportNccl : I32EnumAttrCase<"nccl", 2>;
def Comm_TransportMpi : I32EnumAttrCase<"mpi", 1>;

// The integer values are those of the runtime's commrt_backend (0 is
// COMMRT_BACKEND_AUTO, a collective without the attribute).
def Comm_TransportKind : I32EnumAttr<"TransportKind",
    "the runtime backend that carries a dense allreduce",
    [Comm_TransportNccl, Comm_TransportMpi]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_TransportKindAttr
    : EnumAttr<Comm_Dialect, Comm_TransportKind, "transport"> {
  let summary = "The runtime backend a dense allreduce runs on";
  let description = [{
    `#comm.transport<nccl>`: commrt's NCCL backend.
    `#comm.transport<mpi>`: commrt's MPI backend, which stages device
    buffers through pinned host memory where MPI does not read device
    memory.
    Where commrt has both backends, each dense allreduce may run on either
    one; `comm-select-algorithm` chooses by cost when the cluster describes
    a second transport (`alternate`, docs/Cluster.md). A collective without
    it runs on the backend in use (`COMMRT_BACKEND`).
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_GroupAttr : AttrDef<Comm_Dialect, "Group"> {
  let mnemonic = "group";
  let summary = "The process group a collective runs among";
  let description = [{
    `#comm.group<@grid, axes = [0, 2]>` names a device grid, a `shard.grid`
    symbol, and axes of it. Ranks are laid out on the grid in row-major
    order (rank = linear index of the grid coordinates, as upstream's
    `convert-shard-to-mpi` numbers them), and the ranks that share their
    coordinates on every axis *not* listed form one group: a collective
    with this group runs independently within each group, as
    `shard.all_reduce`'s `grid_axes` do. `avg` divides by the group's size.

    For example, on `shard.grid @g(shape = 2x4)` (ranks 0-7), the group
    `#comm.group<@g, axes = [1]>` is {0, 1, 2, 3} and {4, 5, 6, 7} (the
    rows), and `#comm.group<@g, axes = [0]>` is {0, 4}, {1, 5}, {2, 6} and
    {3, 7} (the columns).

    The axes are listed in increasing order, each at most once; there is at
    least one. A collective without a group runs among all ranks, so a
    group listing every axis of its grid means the same as no group.
    Collectives check that the grid is a `shard.grid` of the module and
    that each axis is below its rank.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$grid,
                        ArrayRefParameter<"int64_t", "grid axes">:$axes);
  let assemblyFormat = "`<` $grid `,` `axes` `=` custom<GridAxes>($axes) `>`";
  let genVerifyDecl = 1;
}

#endif // COMM_ATTRS_TD
