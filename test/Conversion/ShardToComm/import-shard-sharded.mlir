// RUN: commopt-opt %s --comm-import-shard -split-input-file | FileCheck %s
// RUN: commopt-opt %s --pass-pipeline="builtin.module(func.func(shard-partition),comm-import-shard)" -split-input-file | FileCheck %s --check-prefix=PARTITIONED

// shard.reduce_scatter and shard.all_gather along their tensor's first
// axis become comm's row-major shards: over all ranks where the grid axes
// span them, within a group otherwise, and nothing at all where each rank
// is alone.
shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func.func @zero
// CHECK-SAME: (%[[G:.*]]: tensor<8x3xf32>, %[[S:.*]]: tensor<2x3xf32>, %[[H:.*]]: tensor<8x3xf16>)
// CHECK-NEXT: %[[ROW:.*]] = comm.reduce_scatter %[[G]] {group = #comm.group<@grid, axes = [1]>, shards = 2 : i64} : tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[ALL:.*]] = comm.reduce_scatter %[[G]] {reduce = #comm.reduce<avg>, shards = 4 : i64} : tensor<8x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[GATHERED:.*]] = comm.all_gather %[[S]] {group = #comm.group<@grid, axes = [0]>, shards = 2 : i64} : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[WIDE:.*]] = arith.extf %[[H]] : tensor<8x3xf16> to tensor<8x3xf32>
// CHECK-NEXT: %[[MAX:.*]] = comm.reduce_scatter %[[WIDE]] {reduce = #comm.reduce<max>, shards = 4 : i64} : tensor<8x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: return %[[ROW]], %[[ALL]], %[[GATHERED]], %[[MAX]]
// CHECK-NOT: shard.{{(reduce_scatter|all_gather)}}
func.func @zero(%g: tensor<8x3xf32>, %s: tensor<2x3xf32>, %h: tensor<8x3xf16>)
    -> (tensor<4x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) {
  %0 = shard.reduce_scatter %g on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<8x3xf32> -> tensor<4x3xf32>
  %1 = shard.reduce_scatter %g on @grid grid_axes = [0, 1] reduction = average scatter_axis = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  %2 = shard.all_gather %s on @grid grid_axes = [0] gather_axis = 0 : tensor<2x3xf32> -> tensor<4x3xf32>
  // Elements are converted to the result's type first, as shard does.
  %3 = shard.reduce_scatter %h on @grid grid_axes = [0, 1] reduction = max scatter_axis = 0 : tensor<8x3xf16> -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>
}

// -----

// An axis after dimensions of size 1 shards the tensor in row-major order
// too; a grid axis of size 1 leaves each rank alone.
shard.grid @line(shape = 4x1)

// CHECK-LABEL: func.func @inner_axis
// CHECK-SAME: (%[[G:.*]]: tensor<1x8xf32>)
// CHECK-NEXT: %[[S:.*]] = comm.reduce_scatter %[[G]] {shards = 4 : i64} : tensor<1x8xf32> -> tensor<1x2xf32>
// CHECK-NEXT: return %[[S]], %[[G]]
func.func @inner_axis(%g: tensor<1x8xf32>) -> (tensor<1x2xf32>, tensor<1x8xf32>) {
  %0 = shard.reduce_scatter %g on @line grid_axes = [0] reduction = sum scatter_axis = 1 : tensor<1x8xf32> -> tensor<1x2xf32>
  %1 = shard.all_gather %g on @line grid_axes = [1] gather_axis = 1 : tensor<1x8xf32> -> tensor<1x8xf32>
  return %0, %1 : tensor<1x2xf32>, tensor<1x8xf32>
}

// -----

// Upstream's partitioner turns a parameter sharded along its first axis,
// used replicated, into shard.all_gather, which the import makes a
// comm.all_gather.
shard.grid @data(shape = 4)

// PARTITIONED-LABEL: func.func @gather_parameter
// PARTITIONED-SAME: (%[[P:.*]]: tensor<2x2xf32>)
// PARTITIONED: comm.all_gather %[[P]] {shards = 4 : i64} : tensor<2x2xf32> -> tensor<8x2xf32>
// PARTITIONED-NOT: shard.all_gather
func.func @gather_parameter(%p: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %split = shard.sharding @data split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %p to %split : tensor<8x2xf32>
  %replicated = shard.sharding @data split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %replicated annotate_for_users : tensor<8x2xf32>
  return %1 : tensor<8x2xf32>
}

// -----

// shard.all_slice communicates nothing: upstream's lowering gives each
// process its piece (its place in the group in the order of grid_axes, on
// any tensor axis), and comm-import-shard folds the grid's sizes.
shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func.func @slices
// CHECK-SAME: (%[[P:.*]]: tensor<3x8xf32>, %[[Q:.*]]: tensor<8xi32>)
// CHECK: %[[BOTH:.*]]:2 = shard.process_multi_index on @grid axes = [1, 0] : index, index
// CHECK: %[[PLACE:.*]] = affine.apply #{{.*}}()[%[[BOTH]]#0, %{{.*}}, %[[BOTH]]#1]
// CHECK: %[[AT:.*]] = arith.muli %[[PLACE]], %{{.*}} : index
// CHECK: %[[FOUR:.*]] = tensor.extract_slice %[[P]][0, %[[AT]]] [3, 2] [1, 1] : tensor<3x8xf32> to tensor<3x2xf32>
// CHECK: %[[ROW:.*]] = shard.process_multi_index on @grid axes = [0] : index
// CHECK: %[[AT2:.*]] = arith.muli %[[ROW]], %{{.*}} : index
// CHECK: %[[TWO:.*]] = tensor.extract_slice %[[Q]][%[[AT2]]] [4] [1] : tensor<8xi32> to tensor<4xi32>
// CHECK: return %[[FOUR]], %[[TWO]], %[[P]]
// CHECK-NOT: shard.all_slice
// CHECK-NOT: cf.assert
func.func @slices(%p: tensor<3x8xf32>, %q: tensor<8xi32>) -> (tensor<3x2xf32>, tensor<4xi32>, tensor<3x8xf32>) {
  %0 = shard.all_slice %p on @grid grid_axes = [1, 0] slice_axis = 1 : tensor<3x8xf32> -> tensor<3x2xf32>
  %1 = shard.all_slice %q on @grid grid_axes = [0] slice_axis = 0 : tensor<8xi32> -> tensor<4xi32>
  return %0, %1, %p : tensor<3x2xf32>, tensor<4xi32>, tensor<3x8xf32>
}

// -----

// Upstream's partitioner turns a replicated parameter used sharded along
// its first axis into shard.all_slice, which the import lowers to each
// process's rows.
shard.grid @data(shape = 4)

// PARTITIONED-LABEL: func.func @slice_parameter
// PARTITIONED-SAME: (%[[P:.*]]: tensor<8x2xf32>) -> tensor<2x2xf32>
// PARTITIONED: %[[R:.*]] = shard.process_multi_index on @data axes = [0] : index
// PARTITIONED: %[[AT:.*]] = arith.muli %[[R]], %{{.*}} : index
// PARTITIONED: %[[S:.*]] = tensor.extract_slice %[[P]][%[[AT]], 0] [2, 2] [1, 1] : tensor<8x2xf32> to tensor<2x2xf32>
// PARTITIONED: return %[[S]]
// PARTITIONED-NOT: shard.all_slice
func.func @slice_parameter(%p: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %replicated = shard.sharding @data split_axes = [[]] : !shard.sharding
  %0 = shard.shard %p to %replicated : tensor<8x2xf32>
  %split = shard.sharding @data split_axes = [[0]] : !shard.sharding
  %1 = shard.shard %0 to %split annotate_for_users : tensor<8x2xf32>
  return %1 : tensor<8x2xf32>
}

// -----

// Edge cases of shard.all_slice: a slice of no elements is an empty
// tensor; no grid axes leave the operand; a dynamic axis is divided at run
// time, with upstream's check that the group divides it; a slice inside a
// loop is lowered in place.
shard.grid @g(shape = 4x2)

// CHECK-LABEL: func.func @slice_edges
// CHECK-SAME: (%[[E:.*]]: tensor<0x8xindex>, %[[Q:.*]]: tensor<8xf32>, %[[D:.*]]: tensor<?x4xf32>, %[[N:.*]]: index)
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<0x2xindex>
// CHECK: %[[COL:.*]] = shard.process_multi_index on @g axes = [1] : index
// CHECK: %[[ROWS:.*]] = tensor.dim %[[D]]
// CHECK: cf.assert
// CHECK: %[[PART:.*]] = arith.divui %[[ROWS]]
// CHECK: %[[AT:.*]] = arith.muli %[[COL]], %[[PART]] : index
// CHECK: %[[DYN:.*]] = tensor.extract_slice %[[D]][%[[AT]], 0] [%[[PART]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK: scf.for
// CHECK: shard.process_multi_index on @g axes = [0, 1] : index, index
// CHECK: tensor.extract_slice %{{.*}} [1] [1] : tensor<8xf32> to tensor<1xf32>
// CHECK: scf.yield
// CHECK: return %[[EMPTY]], %[[Q]], %[[DYN]]
// CHECK-NOT: shard.all_slice
func.func @slice_edges(%e: tensor<0x8xindex>, %q: tensor<8xf32>, %d: tensor<?x4xf32>, %n: index) -> (tensor<0x2xindex>, tensor<8xf32>, tensor<?x4xf32>, tensor<8xf32>) {
  %0 = shard.all_slice %e on @g grid_axes = [0] slice_axis = 1 : tensor<0x8xindex> -> tensor<0x2xindex>
  %1 = shard.all_slice %q on @g grid_axes = [] slice_axis = 0 : tensor<8xf32> -> tensor<8xf32>
  %2 = shard.all_slice %d on @g grid_axes = [1] slice_axis = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %3 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %q) -> tensor<8xf32> {
    %s = shard.all_slice %acc on @g grid_axes = [0, 1] slice_axis = 0 : tensor<8xf32> -> tensor<1xf32>
    %t = tensor.insert_slice %s into %acc[0] [1] [1] : tensor<1xf32> into tensor<8xf32>
    scf.yield %t : tensor<8xf32>
  }
  return %0, %1, %2, %3 : tensor<0x2xindex>, tensor<8xf32>, tensor<?x4xf32>, tensor<8xf32>
}
