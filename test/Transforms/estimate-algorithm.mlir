// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/four-nodes-of-four.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/four-nodes-of-four.json" --comm-estimate="cluster=%S/Inputs/four-nodes-of-four.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SELECTED

// A dense collective is priced with its `algorithm` when it has one, else
// with the cluster's (ring here). 16 MiB among 16 ranks on 4 nodes of 4
// (inside a node 5 us and 1e-5 us/B, between nodes 10 us and 1e-3 us/B):
//   ring:         2 * 15 * 10 + 2 * 15/16 * n * 1e-3            = 31757.280 us
//   tree:         2 * 4 * 10 + 2 * n * 1e-3                     = 33634.432 us
//   hierarchical: 2 * 3 * 5 + 2 * 3/4 * n * 1e-5
//                 + 2 * 3 * 10 + 2 * 3/4 * n * 1e-3             = 25507.482 us
// so the step, the four run one after another, is their sum.

// CHECK: step               122656.474 us
// CHECK: tree                16777216        0       63514.560       97148.992       33634.432
// CHECK: default             16777216        0           0.000       31757.280       31757.280
// CHECK: ring                16777216        0       31757.280       63514.560       31757.280
// CHECK: hierarchical        16777216        0       97148.992      122656.474       25507.482

// comm-select-algorithm replaces every collective's algorithm by the
// cheapest, hierarchical, and the communication time falls to 4 x 25507.482.
// SELECTED: communication      102029.929 us
// SELECTED: tree                16777216        0           {{.*}}       25507.482
// SELECTED: default             16777216        0           0.000       25507.482       25507.482

func.func @step(%a: tensor<4194304xf32>)
    -> (tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>,
        tensor<4194304xf32>) {
  %0 = comm.allreduce %a {name = "default"}
      : tensor<4194304xf32> -> tensor<4194304xf32>
  %1 = comm.allreduce %a {name = "ring", algorithm = #comm.algorithm<ring>}
      : tensor<4194304xf32> -> tensor<4194304xf32>
  %2 = comm.allreduce %a {name = "tree", algorithm = #comm.algorithm<tree>}
      : tensor<4194304xf32> -> tensor<4194304xf32>
  %3 = comm.allreduce %a {name = "hierarchical",
                          algorithm = #comm.algorithm<hierarchical>}
      : tensor<4194304xf32> -> tensor<4194304xf32>
  return %0, %1, %2, %3 : tensor<4194304xf32>, tensor<4194304xf32>,
      tensor<4194304xf32>, tensor<4194304xf32>
}
