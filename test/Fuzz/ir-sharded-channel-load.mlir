// A sharded collective through comm-optimize, found by commopt-ir-fuzzer
// (docs/Robustness.md): comm-schedule-overlap splits it into a started
// reduce-scatter, and the channel assignment read every start's load as a
// comm.start's (an assertion; in a release build, the operands of another
// op). It plans and estimates.
//
// RUN: commopt-opt %S/Inputs/ir-sharded-channel-load.mlir --comm-optimize="estimate=step report=none" | FileCheck %s
//
// CHECK: comm.estimate = {
// CHECK: %[[T:.*]] = comm.reduce_scatter_start %{{.*}} {{{.*}}group = #comm.group<@grid, axes = [1]>, shards = 2 : i64} : tensor<8xf32>
// CHECK: comm.wait %[[T]] : tensor<4xf32>
