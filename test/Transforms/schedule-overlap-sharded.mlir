// RUN: commopt-opt %s --comm-schedule-overlap | FileCheck %s
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCKING
// RUN: commopt-opt %s --comm-schedule-overlap --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVERLAPPED

// comm-schedule-overlap splits the sharded collectives as it does the
// allreduces: the reduce-scatter of fc's gradient starts as soon as the
// gradient is produced (with its layer's priority) and is waited for where
// its shard is first used, after the 4 ms of the conv layer's backward
// pass; the all-gather, whose shard is ready only then, is started and
// waited for in place.
// CHECK-LABEL: func.func @step
// CHECK: %[[G:.*]] = comm.compute() {{.*}}name = "backward fc"
// CHECK-NEXT: %[[T:.*]] = comm.reduce_scatter_start %[[G]] {names = ["fc.weight"], priority = 1 : i64, shards = 4 : i64} : tensor<1048576xf32>
// CHECK-NEXT: comm.compute() {{.*}}name = "backward conv"
// CHECK-NEXT: %[[S:.*]] = comm.wait %[[T]] : tensor<262144xf32>
// CHECK-NEXT: %[[U:.*]] = comm.all_gather_start %[[S]] {names = ["fc.weight"], shards = 4 : i64} : tensor<262144xf32>
// CHECK-NEXT: %[[P:.*]] = comm.wait %[[U]] : tensor<1048576xf32>
// CHECK-NEXT: return %[[S]], %[[P]]

// Blocking, both collectives (3148.728 us each on flat-4, estimate-sharded
// .mlir) add to the 5 ms of compute; started, the reduce-scatter hides
// behind the conv layer's 4 ms.
// BLOCKING: step                11297.456 us
// BLOCKING: exposed              6297.456 us
// OVERLAPPED: step                 8148.728 us
// OVERLAPPED: exposed              3148.728 us
// OVERLAPPED: fc.weight         4194304        0        1000.000        4148.728           0.000
func.func @step() -> (tensor<262144xf32>, tensor<1048576xf32>) {
  %g = comm.compute () {cost_us = 1000.0 : f64, layer = 1 : i64, name = "backward fc", phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
  %s = comm.reduce_scatter %g {names = ["fc.weight"], shards = 4} : tensor<1048576xf32> -> tensor<262144xf32>
  comm.compute () {cost_us = 4000.0 : f64, layer = 0 : i64, name = "backward conv", phase = #comm.phase<backward>} : () -> ()
  %p = comm.all_gather %s {names = ["fc.weight"], shards = 4} : tensor<262144xf32> -> tensor<1048576xf32>
  return %s, %p : tensor<262144xf32>, tensor<1048576xf32>
}
