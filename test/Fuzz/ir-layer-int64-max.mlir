// Layer numbers at the top of int64, found by commopt-ir-fuzzer
// (docs/Robustness.md): comm-shard-data-parallel and the steady-state
// timeline kept each layer's steps in a DenseMap keyed by its number, and
// DenseMap reserves INT64_MAX and INT64_MAX - 1 as its empty and tombstone
// keys (an assertion, or a corrupt map without assertions); the
// steady-state simulation refused INT64_MAX as a forward layer for that
// reason and took INT64_MAX - 1 into a DenseSet. Both now use std::map and
// std::set: the step shards and is estimated as with small numbers.
//
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/../Transforms/Inputs/flat-4.json" | FileCheck %s
// RUN: commopt-opt %s --comm-estimate="cluster=%S/../Transforms/Inputs/flat-4.json mode=steady" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STEADY

// CHECK-LABEL: func.func @top_layers(
// CHECK: comm.all_gather_start
// CHECK: comm.compute({{.*}}name = "fc1", phase = #comm.phase<forward>}
// CHECK: comm.compute({{.*}}name = "fc2", phase = #comm.phase<forward>}
// CHECK: comm.reduce_scatter_start
// STEADY: comm-estimate: @top_layers
// STEADY-NOT: error
// STEADY: mode           steady
func.func @top_layers() -> (i32, tensor<1024xf32>, tensor<1024xf32>) {
  comm.compute () {cost_us = 1.0 : f64, layer = 9223372036854775806 : i64, name = "fc1", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 1.0 : f64, layer = 9223372036854775807 : i64, name = "fc2", phase = #comm.phase<forward>} : () -> ()
  %g2 = comm.compute () {cost_us = 2.0 : f64, layer = 9223372036854775807 : i64, name = "fc2", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
  %w2 = comm.allreduce %g2 {name = "fc2.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
  %g1 = comm.compute () {cost_us = 2.0 : f64, layer = 9223372036854775806 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
  %w1 = comm.allreduce %g1 {name = "fc1.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
  %n = comm.compute (%w2, %w1) {cost_us = 10.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<1024xf32>, tensor<1024xf32>) -> i32
  return %n, %w2, %w1 : i32, tensor<1024xf32>, tensor<1024xf32>
}
