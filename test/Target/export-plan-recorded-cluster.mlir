// RUN: commopt-translate %s --export-plan | FileCheck %s
// RUN: commopt-opt %s --comm-fuse-buckets | commopt-translate --export-plan | FileCheck %s --check-prefix=FUSED

// Planned without an estimate: the world size comes from the cluster that
// comm-record-cluster (or comm-optimize cluster=...) recorded on the module,
// here the 8-rank nvlink-8 preset, and the plan carries no estimate.

// CHECK:      "function": "train_step",
// CHECK-NEXT: "world_size": 8,
// CHECK-NEXT: "cluster": {
// CHECK-NEXT:  "name": "nvlink-8",
// CHECK-NEXT:  "ranks": 8,
// CHECK-NEXT:  "description": {
// CHECK-NOT:  "estimate"
// CHECK:      "collectives": [
// CHECK:       "kind": "dense",
// CHECK:         "name": "w1",
// CHECK:         "name": "w2",

// FUSED:      "world_size": 8,
// FUSED-NOT:  "estimate"
// FUSED:      "collectives": [

module attributes {comm.cluster = "nvlink-8", comm.model = "tiny"} {
  func.func @train_step() -> (tensor<4xf32>, tensor<8xf32>) {
    %g1 = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
    %r1 = comm.allreduce %g1 {name = "w1"} : tensor<4xf32> -> tensor<4xf32>
    %g2 = comm.compute () {cost_us = 1.0} : () -> tensor<8xf32>
    %r2 = comm.allreduce %g2 {name = "w2"} : tensor<8xf32> -> tensor<8xf32>
    return %r1, %r2 : tensor<4xf32>, tensor<8xf32>
  }
}
