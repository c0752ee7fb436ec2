// RUN: commopt-opt %s --allow-unregistered-dialect --comm-import-shard -split-input-file | FileCheck %s

// Each reduction comm can express, on a grid of one axis: reducing over
// its only axis means all ranks, so there is no group.
shard.grid @line(shape = 4)

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[F:.*]]: tensor<8xf32>, %[[I:.*]]: tensor<8xi32>)
// CHECK-NEXT: %[[SUM:.*]] = comm.allreduce %[[F]] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[MAX:.*]] = comm.allreduce %[[F]] {reduce = #comm.reduce<max>} : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[MIN:.*]] = comm.allreduce %[[I]] {reduce = #comm.reduce<min>} : tensor<8xi32> -> tensor<8xi32>
// CHECK-NEXT: %[[AVG:.*]] = comm.allreduce %[[F]] {reduce = #comm.reduce<avg>} : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[DEFAULT:.*]] = comm.allreduce %[[I]] : tensor<8xi32> -> tensor<8xi32>
// CHECK-NEXT: return %[[SUM]], %[[MAX]], %[[MIN]], %[[AVG]], %[[DEFAULT]]
// CHECK-NOT: shard.all_reduce
func.func @reductions(%f: tensor<8xf32>, %i: tensor<8xi32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xf32>, tensor<8xi32>) {
  %0 = shard.all_reduce %f on @line grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %1 = shard.all_reduce %f on @line grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
  %2 = shard.all_reduce %i on @line grid_axes = [0] reduction = min : tensor<8xi32> -> tensor<8xi32>
  %3 = shard.all_reduce %f on @line grid_axes = [0] reduction = average : tensor<8xf32> -> tensor<8xf32>
  %4 = shard.all_reduce %i on @line grid_axes = [0] : tensor<8xi32> -> tensor<8xi32>
  return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xf32>, tensor<8xi32>
}

// -----

// A 2x4 grid: one axis is a group (the rows or the columns), both axes in
// any order are all ranks.
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @two_axes
// CHECK-SAME: (%[[G:.*]]: tensor<16x4xf32>)
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@grid, axes = [1]>} : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@grid, axes = [0]>, reduce = #comm.reduce<max>} : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@grid, axes = [1]>, reduce = #comm.reduce<avg>} : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: comm.allreduce %[[G]] : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {reduce = #comm.reduce<min>} : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: return
func.func @two_axes(%g: tensor<16x4xf32>)
    -> (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>) {
  %0 = shard.all_reduce %g on @grid grid_axes = [1] reduction = sum : tensor<16x4xf32> -> tensor<16x4xf32>
  %1 = shard.all_reduce %g on @grid grid_axes = [0] reduction = max : tensor<16x4xf32> -> tensor<16x4xf32>
  %2 = shard.all_reduce %g on @grid grid_axes = [1] reduction = average : tensor<16x4xf32> -> tensor<16x4xf32>
  %3 = shard.all_reduce %g on @grid grid_axes = [0, 1] reduction = sum : tensor<16x4xf32> -> tensor<16x4xf32>
  %4 = shard.all_reduce %g on @grid grid_axes = [1, 0] reduction = min : tensor<16x4xf32> -> tensor<16x4xf32>
  return %0, %1, %2, %3, %4 : tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x4xf32>
}

// -----

// A 3-D grid with an axis of unknown size: group axes come out sorted, a
// dynamic axis is a group like any other, all three axes are all ranks.
// Dynamically shaped gradients are imported too.
shard.grid @cube(shape = 2x?x4)

// CHECK-LABEL: func.func @three_axes
// CHECK-SAME: (%[[G:.*]]: tensor<?x8xf32>)
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@cube, axes = [0, 2]>} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@cube, axes = [1]>, reduce = #comm.reduce<max>} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {group = #comm.group<@cube, axes = [1, 2]>, reduce = #comm.reduce<min>} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: comm.allreduce %[[G]] {reduce = #comm.reduce<avg>} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: return
func.func @three_axes(%g: tensor<?x8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = shard.all_reduce %g on @cube grid_axes = [2, 0] : tensor<?x8xf32> -> tensor<?x8xf32>
  %1 = shard.all_reduce %g on @cube grid_axes = [1] reduction = max : tensor<?x8xf32> -> tensor<?x8xf32>
  %2 = shard.all_reduce %g on @cube grid_axes = [2, 1] reduction = min : tensor<?x8xf32> -> tensor<?x8xf32>
  %3 = shard.all_reduce %g on @cube grid_axes = [0, 2, 1] reduction = average : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0, %1, %2, %3 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Axes of size 1 do not change which ranks meet. On a 1x4x1 grid, axis 1
// alone is all ranks; axes 0 and 2 (or no axes, on any grid) leave each
// rank alone: nothing is communicated and the result is the operand.
shard.grid @thin(shape = 1x4x1)
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @trivial_axes
// CHECK-SAME: (%[[G:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[ALL:.*]] = comm.allreduce %[[G]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: return %[[ALL]], %[[G]], %[[G]]
func.func @trivial_axes(%g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = shard.all_reduce %g on @thin grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  %1 = shard.all_reduce %g on @thin grid_axes = [0, 2] reduction = max : tensor<4xf32> -> tensor<4xf32>
  %2 = shard.all_reduce %g on @grid grid_axes = [] : tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A result element type other than the operand's: the operand is converted
// first (integers as signed), then reduced in the result's type. Without
// communication only the conversion remains.
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @element_types
// CHECK-SAME: (%[[H:.*]]: tensor<4xf16>, %[[F:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xi8>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NEXT: %[[EXTF:.*]] = arith.extf %[[H]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT: comm.allreduce %[[EXTF]] {group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[TRUNCF:.*]] = arith.truncf %[[F]] : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT: comm.allreduce %[[TRUNCF]] {reduce = #comm.reduce<max>} : tensor<4xf16> -> tensor<4xf16>
// CHECK-NEXT: %[[WIDE:.*]] = arith.extf %[[H]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT: %[[BF16:.*]] = arith.truncf %[[WIDE]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: comm.allreduce %[[BF16]] : tensor<4xbf16> -> tensor<4xbf16>
// CHECK-NEXT: %[[EXTSI:.*]] = arith.extsi %[[B]] : tensor<4xi8> to tensor<4xi32>
// CHECK-NEXT: comm.allreduce %[[EXTSI]] {group = #comm.group<@grid, axes = [0]>} : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: %[[TRUNCI:.*]] = arith.trunci %[[I]] : tensor<4xi32> to tensor<4xi8>
// CHECK-NEXT: comm.allreduce %[[TRUNCI]] {reduce = #comm.reduce<min>} : tensor<4xi8> -> tensor<4xi8>
// CHECK-NEXT: %[[SITOFP:.*]] = arith.sitofp %[[B]] : tensor<4xi8> to tensor<4xf32>
// CHECK-NEXT: comm.allreduce %[[SITOFP]] {reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[FPTOSI:.*]] = arith.fptosi %[[F]] : tensor<4xf32> to tensor<4xi32>
// CHECK-NEXT: comm.allreduce %[[FPTOSI]] : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: %[[ALONE:.*]] = arith.extf %[[H]] : tensor<4xf16> to tensor<4xf64>
// CHECK-NEXT: return {{.*}}, %[[ALONE]] :
func.func @element_types(%h: tensor<4xf16>, %f: tensor<4xf32>, %b: tensor<4xi8>, %i: tensor<4xi32>)
    -> (tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi8>, tensor<4xf32>, tensor<4xi32>, tensor<4xf64>) {
  %0 = shard.all_reduce %h on @grid grid_axes = [1] : tensor<4xf16> -> tensor<4xf32>
  %1 = shard.all_reduce %f on @grid grid_axes = [0, 1] reduction = max : tensor<4xf32> -> tensor<4xf16>
  %2 = shard.all_reduce %h on @grid grid_axes = [0, 1] : tensor<4xf16> -> tensor<4xbf16>
  %3 = shard.all_reduce %b on @grid grid_axes = [0] : tensor<4xi8> -> tensor<4xi32>
  %4 = shard.all_reduce %i on @grid grid_axes = [0, 1] reduction = min : tensor<4xi32> -> tensor<4xi8>
  %5 = shard.all_reduce %b on @grid grid_axes = [0, 1] reduction = average : tensor<4xi8> -> tensor<4xf32>
  %6 = shard.all_reduce %f on @grid grid_axes = [0, 1] : tensor<4xf32> -> tensor<4xi32>
  %7 = shard.all_reduce %h on @grid grid_axes = [] : tensor<4xf16> -> tensor<4xf64>
  return %0, %1, %2, %3, %4, %5, %6, %7
      : tensor<4xf32>, tensor<4xf16>, tensor<4xbf16>, tensor<4xi32>, tensor<4xi8>, tensor<4xf32>, tensor<4xi32>, tensor<4xf64>
}

// -----

// Left alone: the grid, comm ops, StableHLO's other collectives and other
// ops, registered or not (shard.reduce_scatter and shard.all_gather are
// imported: import-shard-sharded.mlir).
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: comm.allreduce %{{.*}} {reduce = #comm.reduce<avg>}
// CHECK-NEXT: "stablehlo.reduce_scatter"
// CHECK: "stablehlo.add"
// CHECK-NEXT: return
func.func @left_alone(%g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>) {
  %2 = comm.allreduce %g {reduce = #comm.reduce<avg>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = "stablehlo.reduce_scatter"(%g) <{scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %4 = "stablehlo.add"(%g, %g) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2, %3, %4 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>
}

// -----

// StableHLO's allreduce in generic form, as JAX prints it: the reduction
// comes from the region, and one group of all replicas (or none) means all
// ranks. Attributes may be properties or discardable; the region's
// arguments may come in either order.
module attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  // CHECK-LABEL: func.func public @stablehlo(
  // CHECK-SAME: %[[X:.*]]: tensor<1024xf32>, %[[I:.*]]: tensor<16xi32>)
  // CHECK-NEXT: %[[SUM:.*]] = comm.allreduce %[[X]] : tensor<1024xf32> -> tensor<1024xf32>
  // CHECK-NEXT: %[[MAX:.*]] = comm.allreduce %[[X]] {reduce = #comm.reduce<max>} : tensor<1024xf32> -> tensor<1024xf32>
  // CHECK-NEXT: %[[MIN:.*]] = comm.allreduce %[[I]] {reduce = #comm.reduce<min>} : tensor<16xi32> -> tensor<16xi32>
  // CHECK-NEXT: %[[SWAP:.*]] = comm.allreduce %[[X]] : tensor<1024xf32> -> tensor<1024xf32>
  // CHECK-NEXT: %[[EMPTY:.*]] = comm.allreduce %[[I]] : tensor<16xi32> -> tensor<16xi32>
  // CHECK-NEXT: return %[[SUM]], %[[MAX]], %[[MIN]], %[[SWAP]], %[[EMPTY]]
  // CHECK-NOT: stablehlo
  func.func public @stablehlo(%x: tensor<1024xf32>, %i: tensor<16xi32>)
      -> (tensor<1024xf32>, tensor<1024xf32>, tensor<16xi32>, tensor<1024xf32>, tensor<16xi32>) {
    %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<1024xf32>) -> tensor<1024xf32>
    %1 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%m) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[2, 0, 3, 1]]> : tensor<1x4xi64>} : (tensor<1024xf32>) -> tensor<1024xf32>
    %2 = "stablehlo.all_reduce"(%i) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %m = "stablehlo.minimum"(%a, %b) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%m) : (tensor<i32>) -> ()
    }) : (tensor<16xi32>) -> tensor<16xi32>
    %3 = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%b, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<1024xf32>) -> tensor<1024xf32>
    %4 = "stablehlo.all_reduce"(%i) <{replica_groups = dense<> : tensor<0x0xi64>}> ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%s) : (tensor<i32>) -> ()
    }) : (tensor<16xi32>) -> tensor<16xi32>
    return %0, %1, %2, %3, %4 : tensor<1024xf32>, tensor<1024xf32>, tensor<16xi32>, tensor<1024xf32>, tensor<16xi32>
  }
}

// -----

// JAX's shard_map form: partitions, global device ids, one group of all
// eight devices. Several operands become one allreduce each, and an
// operand of a narrower type is converted to the reduction's type.
module attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  // CHECK-LABEL: func.func public @stablehlo_devices
  // CHECK-SAME: (%[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xbf16>)
  // CHECK-NEXT: %[[RW:.*]] = comm.allreduce %[[W]] : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK-NEXT: %[[EXT:.*]] = arith.extf %[[B]] : tensor<16xbf16> to tensor<16xf32>
  // CHECK-NEXT: %[[RB:.*]] = comm.allreduce %[[EXT]] : tensor<16xf32> -> tensor<16xf32>
  // CHECK-NEXT: return %[[RW]], %[[RB]]
  func.func public @stablehlo_devices(%w: tensor<8x16xf32>, %b: tensor<16xbf16>) -> (tensor<8x16xf32>, tensor<16xf32>) {
    %0:2 = "stablehlo.all_reduce"(%w, %b) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = "stablehlo.add"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<8x16xf32>, tensor<16xbf16>) -> (tensor<8x16xf32>, tensor<16xf32>)
    return %0#0, %0#1 : tensor<8x16xf32>, tensor<16xf32>
  }
}
