// RUN: commopt-opt %s --comm-schedule-overlap="channels=2" | FileCheck %s

// Channels count a sharded start's flat tensor as its load: with two
// channels, the 16 KiB reduce-scatter goes beside the 4 MiB one in flight,
// and so does the all-gather started once it is waited for.
// CHECK-LABEL: func.func @channels
// CHECK: comm.reduce_scatter_start %{{.*}} {shards = 4 : i64} : tensor<1048576xf32>
// CHECK: %[[T:.*]] = comm.reduce_scatter_start %{{.*}} {channel = 1 : i64, shards = 4 : i64} : tensor<4096xf32>
// CHECK: %[[S:.*]] = comm.wait %[[T]] : tensor<1024xf32>
// CHECK: comm.all_gather_start %[[S]] {channel = 1 : i64, shards = 4 : i64} : tensor<1024xf32>
func.func @channels() -> (tensor<262144xf32>, tensor<1024xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 1000.0 : f64, name = "backward"} : () -> tensor<1048576xf32>
  %h = comm.compute () {cost_us = 1000.0 : f64, name = "backward 2"} : () -> tensor<4096xf32>
  %s = comm.reduce_scatter %g {shards = 4} : tensor<1048576xf32> -> tensor<262144xf32>
  %t = comm.reduce_scatter %h {shards = 4} : tensor<4096xf32> -> tensor<1024xf32>
  %p = comm.all_gather %t {shards = 4} : tensor<1024xf32> -> tensor<4096xf32>
  return %s, %t, %p : tensor<262144xf32>, tensor<1024xf32>, tensor<4096xf32>
}
