// RUN: commopt-opt %s -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file | commopt-opt -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file --mlir-print-op-generic | commopt-opt -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF

// The sharded collectives split for overlap: a start on a channel returns a
// token, and its one comm.wait returns the shard (a reduce-scatter's) or
// the whole tensors (an all-gather's). Bufferized, the start takes new
// buffers for them `into`, and the wait returns nothing.

// CHECK-LABEL: func.func @started
// CHECK: %[[T:.*]] = comm.reduce_scatter_start %{{.*}}, %{{.*}} {channel = 1 : i64, names = ["w", "b"], priority = 2 : i64, reduce = #comm.reduce<avg>, shards = 4 : i64} : tensor<6xf32>, tensor<4xf32>
// CHECK: %[[S:.*]] = comm.wait %[[T]] : tensor<3xf32>
// CHECK: %[[U:.*]] = comm.all_gather_start %[[S]] {shards = 4 : i64, wire = bf16} : tensor<3xf32>
// CHECK: %{{.*}}:2 = comm.wait %[[U]] : tensor<6xf32>, tensor<4xf32>

// BUF-LABEL: func.func @started
// BUF-SAME: (%[[W:.*]]: memref<6xf32>, %[[B:.*]]: memref<4xf32>)
// BUF: %[[SHARD:.*]] = memref.alloc() : memref<3xf32>
// BUF: %[[T:.*]] = comm.reduce_scatter_start %[[W]], %[[B]] into %[[SHARD]] {{.*}} : memref<6xf32>, memref<4xf32> into memref<3xf32>
// BUF: comm.wait %[[T]]{{$}}
// BUF: %[[W2:.*]] = memref.alloc() : memref<6xf32>
// BUF: %[[B2:.*]] = memref.alloc() : memref<4xf32>
// BUF: %[[U:.*]] = comm.all_gather_start %[[SHARD]] into %[[W2]], %[[B2]] {shards = 4 : i64, wire = bf16} : memref<3xf32> into memref<6xf32>, memref<4xf32>
// BUF: comm.wait %[[U]]{{$}}
// BUF: return %[[SHARD]], %[[W2]], %[[B2]]
func.func @started(%w: tensor<6xf32>, %b: tensor<4xf32>) -> (tensor<3xf32>, tensor<6xf32>, tensor<4xf32>) {
  %t = comm.reduce_scatter_start %w, %b {channel = 1 : i64, priority = 2 : i64, names = ["w", "b"], reduce = #comm.reduce<avg>, shards = 4 : i64} : tensor<6xf32>, tensor<4xf32>
  %s = comm.wait %t : tensor<3xf32>
  %u = comm.all_gather_start %s {shards = 4 : i64, wire = bf16} : tensor<3xf32>
  %p:2 = comm.wait %u : tensor<6xf32>, tensor<4xf32>
  return %s, %p#0, %p#1 : tensor<3xf32>, tensor<6xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @buffers
// CHECK: %[[T:.*]] = comm.reduce_scatter_start %{{.*}} into %{{.*}} {shards = 2 : i64} : memref<8xf32> into memref<4xf32>
// CHECK: comm.wait %[[T]]
// CHECK: %[[U:.*]] = comm.all_gather_start %{{.*}} into %{{.*}} {channel = 1 : i64, shards = 2 : i64} : memref<4xf32> into memref<8xf32>
// CHECK: comm.wait %[[U]]
func.func @buffers(%g: memref<8xf32>, %s: memref<4xf32>, %p: memref<8xf32>) {
  %t = comm.reduce_scatter_start %g into %s {shards = 2} : memref<8xf32> into memref<4xf32>
  comm.wait %t
  %u = comm.all_gather_start %s into %p {channel = 1 : i64, shards = 2} : memref<4xf32> into memref<8xf32>
  comm.wait %u
  return
}
