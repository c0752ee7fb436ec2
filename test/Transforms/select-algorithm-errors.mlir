// RUN: commopt-opt %s -split-input-file -verify-diagnostics --comm-select-algorithm="cluster=%S/Inputs/four-nodes-of-four.json algorithm=hierarchical"
// RUN: not commopt-opt %s -split-input-file --comm-select-algorithm="cluster=%S/Inputs/flat-16.json algorithm=hierarchical" 2>&1 | FileCheck %s --check-prefix=FLAT
// RUN: not commopt-opt %s -split-input-file --comm-select-algorithm="algorithm=rings" 2>&1 | FileCheck %s --check-prefix=SPELLING
// RUN: not commopt-opt %s -split-input-file --comm-select-algorithm="cluster=ib56-64" 2>&1 | FileCheck %s --check-prefix=PRESET

// algorithm=hierarchical needs a second level: a collective on one node,
// or on one rank per node, is an error naming the cluster (and the group).

// FLAT: error: comm-select-algorithm: algorithm=hierarchical needs several nodes of several ranks each, but cluster '{{.*}}flat-16.json' has 16 nodes of 1 rank: there is no second level to reduce in; choose ring, tree or auto
// SPELLING: error: comm-select-algorithm: option 'algorithm': unknown value 'rings'; expected one of auto, ring, tree, hierarchical (did you mean 'ring'?)
// PRESET: error: comm-select-algorithm: cluster 'ib56-64': 'ib56-64' is neither a cluster preset

shard.grid @grid(shape = 4x4)

// Among all ranks (4 nodes of 4 ranks), hierarchical it is.
func.func @all(%m: tensor<64xf32>) -> tensor<64xf32> {
  %0 = comm.allreduce %m : tensor<64xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

shard.grid @grid(shape = 4x4)

func.func @row(%m: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error-re @+1 {{comm-select-algorithm: algorithm=hierarchical needs several nodes of several ranks each, but its process group #comm.group<@grid, axes = [1]> on cluster '{{.*}}four-nodes-of-four.json' has 1 node of 4 ranks: there is no second level to reduce in; choose ring, tree or auto}}
  %0 = comm.allreduce %m {group = #comm.group<@grid, axes = [1]>}
      : tensor<64xf32> -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// -----

shard.grid @grid(shape = 4x4)

func.func @column(%m: memref<64xf32>) {
  // expected-error-re @+1 {{its process group #comm.group<@grid, axes = [0]> on cluster '{{.*}}four-nodes-of-four.json' has 4 nodes of 1 rank: there is no second level}}
  %t = comm.start %m {group = #comm.group<@grid, axes = [0]>} : memref<64xf32>
  comm.wait %t
  return
}
