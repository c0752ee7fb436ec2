// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/flat-16.json" | FileCheck %s --check-prefix=FLAT
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/four-nodes-of-four.json" | FileCheck %s --check-prefix=NODES
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/four-nodes-of-four.json algorithm=tree" | FileCheck %s --check-prefix=TREE
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/flat-16.json algorithm=ring" | FileCheck %s --check-prefix=RING
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/one-rank-tree.json" | FileCheck %s --check-prefix=TIE
// RUN: commopt-opt %s --comm-record-cluster="cluster=%S/Inputs/flat-16.json" --comm-select-algorithm | FileCheck %s --check-prefix=FLAT

// comm-select-algorithm gives every dense collective the allreduce
// algorithm of least cost (docs/CostModel.md, section 2.1) for its bytes on
// the wire, on the cluster it runs on.
//
// flat-16: 16 ranks, one per node, alpha 10 us, beta 1e-3 us/B. Hierarchical
// is no candidate (one rank per node). For n bytes:
//   ring: 2 * 15 * 10 = 300 us + 2 * 15/16 * n * 1e-3 = 300 + 1.875e-3 n
//   tree: 2 * lg(16) * 10 = 80 us + 2 * n * 1e-3    =  80 + 2e-3 n
// The tree is cheaper below n = 1.76 MB:
//   4 KiB:   ring 307.7, tree 88.2            -> tree
//   16 MiB:  ring 31757, tree 33634           -> ring
//   256 KiB: ring 791.5, tree 604.3           -> tree
//   2.4 MB (600000 f32): ring 4800, tree 4880 -> ring; with wire = f16 the
//            same gradient is 1.2 MB: ring 2550, tree 2480 -> tree.
//
// four-nodes-of-four: 4 nodes of 4 ranks; inside a node alpha 5 us, beta
// 1e-5 us/B; between nodes alpha 10 us, beta 1e-3 us/B. Among all 16 ranks
// (the flat algorithms cross the network):
//   ring: 300 + 1.875e-3 n; tree: 80 + 2e-3 n;
//   hierarchical: 2 * 3 * 5 + 2 * 3 * 10 = 90 us + (1.5e-5 + 1.5e-3) n
//   4 KiB:   ring 307.7, tree 88.2, hierarchical 96.2       -> tree
//   16 MiB:  ring 31757, tree 33634, hierarchical 25509     -> hierarchical
//   256 KiB: ring 791.5, tree 604.3, hierarchical 487.1     -> hierarchical
// The same 256 KiB on a row of the 4x4 grid (4 ranks of one node: intra
// links, no hierarchical): ring 2 * 3 * 5 + 1.5e-5 n = 33.9, tree
// 2 * 2 * 5 + 2e-5 n = 25.2 -> tree; on a column (4 ranks on 4 nodes, the
// network): ring 60 + 1.5e-3 n = 453.2, tree 40 + 2e-3 n = 564.3 -> ring.
//
// one-rank-tree: a single rank, where every algorithm costs nothing: the tie
// goes to the cluster's own algorithm, the tree.

shard.grid @grid(shape = 4x4)

// FLAT-LABEL: func.func @sizes
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, name = "small"}
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>, name = "large"}
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, name = "medium"}
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>, name = "f32"}
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, name = "f16 wire", prescale = 6.250000e-02 : f64, wire = f16}

// NODES-LABEL: func.func @sizes
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, name = "small"}
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<hierarchical>, name = "large"}
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<hierarchical>, name = "medium"}

// TREE-LABEL: func.func @sizes
// TREE-COUNT-5: algorithm = #comm.algorithm<tree>
// TREE-NOT: algorithm = #comm.algorithm<
// TREE-LABEL: func.func @groups
// RING-LABEL: func.func @sizes
// RING-COUNT-5: algorithm = #comm.algorithm<ring>
// RING-NOT: algorithm = #comm.algorithm<
// RING-LABEL: func.func @groups
// TIE-LABEL: func.func @sizes
// TIE-COUNT-5: algorithm = #comm.algorithm<tree>
func.func @sizes(%s: tensor<1024xf32>, %l: tensor<4194304xf32>,
                 %m: tensor<65536xf32>, %w: tensor<600000xf32>)
    -> (tensor<1024xf32>, tensor<4194304xf32>, tensor<65536xf32>,
        tensor<600000xf32>, tensor<600000xf32>) {
  %0 = comm.allreduce %s {name = "small"} : tensor<1024xf32> -> tensor<1024xf32>
  %1 = comm.allreduce %l {name = "large"}
      : tensor<4194304xf32> -> tensor<4194304xf32>
  %2 = comm.allreduce %m {name = "medium"} : tensor<65536xf32> -> tensor<65536xf32>
  %3 = comm.allreduce %w {name = "f32"} : tensor<600000xf32> -> tensor<600000xf32>
  %4 = comm.allreduce %w {name = "f16 wire", wire = f16, prescale = 0.0625}
      : tensor<600000xf32> -> tensor<600000xf32>
  return %0, %1, %2, %3, %4 : tensor<1024xf32>, tensor<4194304xf32>,
      tensor<65536xf32>, tensor<600000xf32>, tensor<600000xf32>
}

// Grouped collectives are priced on their group's ranks and links.
// NODES-LABEL: func.func @groups
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<hierarchical>, name = "all"}
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, group = #comm.group<@grid, axes = [1]>, name = "row"}
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>, group = #comm.group<@grid, axes = [0]>, name = "column"}
// A group of every axis is all ranks.
// NODES: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<hierarchical>, group = #comm.group<@grid, axes = [0, 1]>, name = "every axis"}
func.func @groups(%m: tensor<65536xf32>)
    -> (tensor<65536xf32>, tensor<65536xf32>, tensor<65536xf32>,
        tensor<65536xf32>) {
  %0 = comm.allreduce %m {name = "all"} : tensor<65536xf32> -> tensor<65536xf32>
  %1 = comm.allreduce %m {name = "row", group = #comm.group<@grid, axes = [1]>}
      : tensor<65536xf32> -> tensor<65536xf32>
  %2 = comm.allreduce %m {name = "column", group = #comm.group<@grid, axes = [0]>}
      : tensor<65536xf32> -> tensor<65536xf32>
  %3 = comm.allreduce %m {name = "every axis",
                          group = #comm.group<@grid, axes = [0, 1]>}
      : tensor<65536xf32> -> tensor<65536xf32>
  return %0, %1, %2, %3
      : tensor<65536xf32>, tensor<65536xf32>, tensor<65536xf32>,
        tensor<65536xf32>
}

// Every dense collective, in tensor and in buffer form, gets one; an
// algorithm it had is replaced. A bucket is priced on its total bytes
// (2 x 2 MiB on flat-16: ring). Sparse collectives are left alone, and a
// collective of dynamic shape, of unknown size, gets the cluster's
// algorithm (ring).
// FLAT-LABEL: func.func @forms
// FLAT: comm.fused_allreduce %{{.*}}, %{{.*}} {algorithm = #comm.algorithm<ring>}
// FLAT: comm.start %{{.*}} {algorithm = #comm.algorithm<tree>, channel = 1 : i64}
// FLAT: comm.wait
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>} : memref<16xf32>
// FLAT: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>} : tensor<?xf32>
// FLAT: comm.sparse_allreduce
// FLAT-NOT: algorithm
// FLAT: return
func.func @forms(%a: tensor<524288xf32>, %b: tensor<524288xf32>,
                 %c: tensor<16xf32>, %d: memref<16xf32>, %e: tensor<?xf32>,
                 %r: tensor<524288xf32>)
    -> (tensor<524288xf32>, tensor<524288xf32>, tensor<16xf32>,
        tensor<?xf32>, tensor<524288xf32>, tensor<524288xf32>) {
  %0:2 = comm.fused_allreduce %a, %b {algorithm = #comm.algorithm<tree>}
      : tensor<524288xf32>, tensor<524288xf32>
      -> tensor<524288xf32>, tensor<524288xf32>
  %t = comm.start %c {channel = 1} : tensor<16xf32>
  %1 = comm.wait %t : tensor<16xf32>
  comm.allreduce %d : memref<16xf32>
  %2 = comm.allreduce %e : tensor<?xf32> -> tensor<?xf32>
  %3:2 = comm.sparse_allreduce %a, %r {density = 1.000000e-02 : f64,
      exchange = #comm.exchange<allgather>, select = #comm.select<topk>}
      : tensor<524288xf32>, tensor<524288xf32>
      -> tensor<524288xf32>, tensor<524288xf32>
  return %0#0, %0#1, %1, %2, %3#0, %3#1
      : tensor<524288xf32>, tensor<524288xf32>, tensor<16xf32>,
        tensor<?xf32>, tensor<524288xf32>, tensor<524288xf32>
}
