// RUN: commopt-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: commopt-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-comm-to-runtime --canonicalize | FileCheck %s
// RUN: commopt-opt %s -split-input-file --commopt-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// The sharded collectives bufferize into a new buffer for their result
// (the reduce-scatter also uses its operand's as working memory, so a
// gradient still read afterwards is copied first) and lower to
// commrt_reduce_scatter and commrt_all_gather with the shard's element
// count, which the runtime checks against the ranks.

// BUF-LABEL: func.func @step
// BUF-SAME: (%[[G:.*]]: memref<10xf32>, %[[P:.*]]: memref<3xf32>)
// BUF: %[[S:.*]] = memref.alloc() : memref<3xf32>
// BUF: comm.reduce_scatter %[[G]] into %[[S]] {reduce = #comm.reduce<avg>, shards = 4 : i64} : memref<10xf32> into memref<3xf32>
// BUF: %[[W:.*]] = memref.alloc() : memref<10xf32>
// BUF: comm.all_gather %[[P]] into %[[W]] {shards = 4 : i64, wire = bf16} : memref<3xf32> into memref<10xf32>
// BUF: return %[[S]], %[[W]]

// CHECK-LABEL: func.func @step
// The group (0: all ranks) and the dtype (f32) are 0; the buffer count and
// the reduction (avg) 1.
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[SHARD:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[UNSCALED:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[RS:.*]] = call @commrt_reduce_scatter(%[[ZERO]], %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %[[SHARD]], %[[ZERO]], %[[ONE]], %[[NONE]], %[[UNSCALED]])
// CHECK: call @commrt_abort_on_error(%[[RS]])
// CHECK: %[[AG:.*]] = call @commrt_all_gather(%[[ZERO]], %{{.*}}, %[[SHARD]], %{{.*}}, %{{.*}}, %[[ONE]], %[[ZERO]], %[[BF16]], %[[UNSCALED]])
// CHECK: call @commrt_abort_on_error(%[[AG]])
// CHECK-NOT: comm.

// LLVM-LABEL: llvm.func @step
// LLVM: llvm.call @commrt_reduce_scatter(
// LLVM: llvm.call @commrt_all_gather(
func.func @step(%g: tensor<10xf32>, %p: tensor<3xf32>) -> (tensor<3xf32>, tensor<10xf32>) {
  %s = comm.reduce_scatter %g {reduce = #comm.reduce<avg>, shards = 4} : tensor<10xf32> -> tensor<3xf32>
  %w = comm.all_gather %p {shards = 4, wire = bf16} : tensor<3xf32> -> tensor<10xf32>
  return %s, %w : tensor<3xf32>, tensor<10xf32>
}

// -----

// A gradient read after its reduce-scatter is copied first: the runtime
// uses the buffer it reduces as working memory.

// BUF-LABEL: func.func @gradient_read_after
// BUF-SAME: (%[[G:.*]]: memref<8xf32>)
// BUF: %[[COPY:.*]] = memref.alloc() {{.*}}: memref<8xf32>
// BUF: memref.copy %[[G]], %[[COPY]]
// BUF: comm.reduce_scatter %[[COPY]] into %{{.*}} {shards = 2 : i64}
// BUF: return %{{.*}}, %[[G]]
func.func @gradient_read_after(%g: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %s = comm.reduce_scatter %g {shards = 2} : tensor<8xf32> -> tensor<4xf32>
  return %s, %g : tensor<4xf32>, tensor<8xf32>
}

// -----

// Among the rows of a 2x2 grid: the group's handle goes first.

shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func.func @grouped
// CHECK: %[[SPLIT:.*]] = call @commrt_group_split(
// CHECK: %[[GROUP:.*]] = memref.load
// CHECK: call @commrt_reduce_scatter(%[[GROUP]],
func.func @grouped(%g: tensor<8xf32>) -> tensor<4xf32> {
  %s = comm.reduce_scatter %g {shards = 2, group = #comm.group<@grid, axes = [1]>} : tensor<8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A shard that is not contiguous goes through a contiguous copy, which is
// written back.

// CHECK-LABEL: func.func @strided_shard
// CHECK: %[[STAGE:.*]] = memref.alloc() : memref<2xf32>
// CHECK: memref.copy %{{.*}}, %[[STAGE]]
// CHECK: call @commrt_reduce_scatter(
// CHECK: memref.copy %[[STAGE]], %{{.*}} : memref<2xf32> to memref<2xf32, strided<[2]>>
func.func @strided_shard(%g: memref<4xf32>, %s: memref<2xf32, strided<[2]>>) {
  comm.reduce_scatter %g into %s {shards = 2} : memref<4xf32> into memref<2xf32, strided<[2]>>
  return
}

// -----

// The flat tensor of two gradients: one call with both buffers' addresses
// and counts (2), and the shard's 3 elements; gathered back into both.

// CHECK-LABEL: func.func @flat
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[SHARD:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6 : i64
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: memref.store %[[SIX]], %[[COUNTS:.*]][%{{.*}}] : memref<2xi64>
// CHECK: memref.store %[[FOUR]], %[[COUNTS]][%{{.*}}] : memref<2xi64>
// CHECK: call @commrt_reduce_scatter(%{{.*}}, %{{.*}}, %{{.*}}, %[[TWO]], %{{.*}}, %[[SHARD]],
// CHECK: call @commrt_all_gather(%{{.*}}, %{{.*}}, %[[SHARD]], %{{.*}}, %{{.*}}, %[[TWO]],
func.func @flat(%a: tensor<6xf32>, %b: tensor<4xf32>) -> (tensor<6xf32>, tensor<4xf32>) {
  %s = comm.reduce_scatter %a, %b {shards = 4} : tensor<6xf32>, tensor<4xf32> -> tensor<3xf32>
  %p:2 = comm.all_gather %s {shards = 4} : tensor<3xf32> -> tensor<6xf32>, tensor<4xf32>
  return %p#0, %p#1 : tensor<6xf32>, tensor<4xf32>
}

// -----

// Started on channel 1: the `_start` forms with the channel and a slot for
// the handle, and commrt_wait where the wait stands.

// CHECK-LABEL: func.func @started
// CHECK-DAG: %[[CHANNEL:.*]] = arith.constant 1 : i32
// CHECK: call @commrt_reduce_scatter_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CHANNEL]], %{{.*}})
// CHECK: call @commrt_wait(
// CHECK: call @commrt_all_gather_start(
// CHECK: call @commrt_wait(
// CHECK-NOT: comm.
func.func @started(%g: tensor<8xf32>) -> tensor<8xf32> {
  %t = comm.reduce_scatter_start %g {channel = 1 : i64, shards = 2} : tensor<8xf32>
  %s = comm.wait %t : tensor<4xf32>
  %u = comm.all_gather_start %s {shards = 2} : tensor<4xf32>
  %p = comm.wait %u : tensor<8xf32>
  return %p : tensor<8xf32>
}
