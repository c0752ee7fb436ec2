// RUN: commopt-opt %s -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file | commopt-opt -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file --mlir-print-op-generic | commopt-opt -split-input-file | FileCheck %s

// Sharded data parallelism's collectives: gradients reduce-scattered into
// each rank's shard and parameters all-gathered from every rank's shard, one
// tensor or the flat tensor of several (FSDP's flat parameter), in tensor
// and in buffer form, among all ranks or a group, in a narrower wire type.

// CHECK-LABEL: func.func @zero
func.func @zero(%g: tensor<1000x10xf32>, %p: tensor<250x10xf32>)
    -> (tensor<250x10xf32>, tensor<1000x10xf32>) {
  // CHECK: %{{.*}} = comm.reduce_scatter %{{.*}} {names = ["fc.weight"], reduce = #comm.reduce<avg>, shards = 4 : i64} : tensor<1000x10xf32> -> tensor<250x10xf32>
  %s = comm.reduce_scatter %g {reduce = #comm.reduce<avg>, shards = 4,
                               names = ["fc.weight"]}
      : tensor<1000x10xf32> -> tensor<250x10xf32>
  // CHECK: %{{.*}} = comm.all_gather %{{.*}} {names = ["fc.weight"], shards = 4 : i64} : tensor<250x10xf32> -> tensor<1000x10xf32>
  %w = comm.all_gather %p {shards = 4, names = ["fc.weight"]}
      : tensor<250x10xf32> -> tensor<1000x10xf32>
  return %s, %w : tensor<250x10xf32>, tensor<1000x10xf32>
}

// -----

// A flat parameter of a weight and a bias, 1010 elements: shards of 253.

// CHECK-LABEL: func.func @flat
func.func @flat(%w: tensor<1000xf32>, %b: tensor<10xf32>) {
  // CHECK: %[[S:.*]] = comm.reduce_scatter %{{.*}}, %{{.*}} {names = ["fc.weight", "fc.bias"], shards = 4 : i64} : tensor<1000xf32>, tensor<10xf32> -> tensor<253xf32>
  %s = comm.reduce_scatter %w, %b {names = ["fc.weight", "fc.bias"], shards = 4}
      : tensor<1000xf32>, tensor<10xf32> -> tensor<253xf32>
  // CHECK: %{{.*}}:2 = comm.all_gather %[[S]] {shards = 4 : i64} : tensor<253xf32> -> tensor<1000xf32>, tensor<10xf32>
  %p:2 = comm.all_gather %s {shards = 4} : tensor<253xf32> -> tensor<1000xf32>, tensor<10xf32>
  return
}

// -----

// A tensor that 4 ranks do not divide: shards of ceil(10 / 4) = 3, in any
// shape of 3 elements.

// CHECK-LABEL: func.func @padded
func.func @padded(%g: tensor<10xf32>, %p: tensor<3x1xf32>) {
  // CHECK: comm.reduce_scatter %{{.*}} {shards = 4 : i64} : tensor<10xf32> -> tensor<3x1xf32>
  %s = comm.reduce_scatter %g {shards = 4} : tensor<10xf32> -> tensor<3x1xf32>
  // CHECK: comm.all_gather %{{.*}} {shards = 4 : i64} : tensor<3x1xf32> -> tensor<2x5xf32>
  %w = comm.all_gather %p {shards = 4} : tensor<3x1xf32> -> tensor<2x5xf32>
  return
}

// -----

// CHECK-LABEL: func.func @buffers
func.func @buffers(%g: memref<10xf32>, %h: memref<2xf32>, %s: memref<3xf32>,
                   %w: memref<10xf32>, %b: memref<2xf32>) {
  // CHECK: comm.reduce_scatter %{{.*}}, %{{.*}} into %{{.*}} {shards = 4 : i64} : memref<10xf32>, memref<2xf32> into memref<3xf32>
  comm.reduce_scatter %g, %h into %s {shards = 4} : memref<10xf32>, memref<2xf32> into memref<3xf32>
  // CHECK: comm.all_gather %{{.*}} into %{{.*}}, %{{.*}} {shards = 4 : i64} : memref<3xf32> into memref<10xf32>, memref<2xf32>
  comm.all_gather %s into %w, %b {shards = 4} : memref<3xf32> into memref<10xf32>, memref<2xf32>
  return
}

// -----

// Within the columns of a 2x4 grid (groups of 2 ranks), in bf16 on the wire.

shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @grouped_narrow
func.func @grouped_narrow(%g: tensor<64xf32>, %p: tensor<32xf32>) {
  // CHECK: comm.reduce_scatter %{{.*}} {group = #comm.group<@grid, axes = [0]>, prescale = 5.000000e-01 : f64, shards = 2 : i64, wire = bf16} : tensor<64xf32> -> tensor<32xf32>
  %s = comm.reduce_scatter %g {group = #comm.group<@grid, axes = [0]>,
                               shards = 2, wire = bf16, prescale = 0.5}
      : tensor<64xf32> -> tensor<32xf32>
  // CHECK: comm.all_gather %{{.*}} {group = #comm.group<@grid, axes = [0]>, shards = 2 : i64, wire = f16} : tensor<32xf32> -> tensor<64xf32>
  %w = comm.all_gather %p {group = #comm.group<@grid, axes = [0]>, shards = 2,
                           wire = f16}
      : tensor<32xf32> -> tensor<64xf32>
  return
}
