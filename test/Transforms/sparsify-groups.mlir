// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json exchange=allgather" | FileCheck %s

// An allreduce over a process group is priced on the group's ranks, and the
// sparse allreduce that replaces it keeps the group. On a 64x1 grid of the
// 64-rank cluster, the group along axis 0 holds all 64 ranks, where the
// sparse exchange pays (as without a group, sparsify.mlir); the group along
// axis 1 holds one rank, which a dense allreduce costs nothing on, so that
// gradient stays dense.

shard.grid @grid(shape = 64x1)

// CHECK-LABEL: func.func @grouped
// CHECK: %[[RES:.*]] = ml_program.global_load @wide_weight_residual
// CHECK: comm.sparse_allreduce %{{.*}}, %[[RES]] {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, group = #comm.group<@grid, axes = [0]>, name = "wide.weight", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}
// CHECK: comm.allreduce %{{.*}} {group = #comm.group<@grid, axes = [1]>, name = "narrow.weight", reduce = #comm.reduce<avg>}
// CHECK-NOT: comm.sparse_allreduce
func.func @grouped(%a: tensor<1000x2048xf32>, %b: tensor<1000x2048xf32>)
    -> (tensor<1000x2048xf32>, tensor<1000x2048xf32>) {
  %0 = comm.allreduce %a {group = #comm.group<@grid, axes = [0]>,
                          name = "wide.weight", reduce = #comm.reduce<avg>}
      : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  %1 = comm.allreduce %b {group = #comm.group<@grid, axes = [1]>,
                          name = "narrow.weight", reduce = #comm.reduce<avg>}
      : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  return %0, %1 : tensor<1000x2048xf32>, tensor<1000x2048xf32>
}
