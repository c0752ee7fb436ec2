// RUN: commopt-opt %s -split-input-file -verify-diagnostics --convert-comm-to-runtime | FileCheck %s

// What planning leaves of the shard dialect lowers to the runtime: process
// indices to the rank (row-major over the grid), a check on entry of every
// public function that the job has as many ranks as the grid, and no grid.
shard.grid @grid(shape = 2x4)

// CHECK-NOT: shard.
// CHECK-LABEL: func.func @indices
// CHECK-NEXT: %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK-NEXT: %[[OK:.*]] = call @commrt_expect_size(%[[EIGHT]]) : (i64) -> i32
// CHECK-NEXT: call @commrt_abort_on_error(%[[OK]]) : (i32) -> ()
// CHECK-NEXT: %[[R0:.*]] = call @commrt_rank() : () -> i32
// CHECK-NEXT: %[[LINEAR:.*]] = arith.index_cast %[[R0]] : i32 to index
// CHECK-NEXT: %[[R1:.*]] = call @commrt_rank() : () -> i32
// CHECK-NEXT: %[[RANK:.*]] = arith.index_cast %[[R1]] : i32 to index
// Axis 0 (rows): rank / 4 % 2; axis 1 (columns): rank / 1 % 4.
// CHECK-NEXT: %[[S0:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[E0:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[Q0:.*]] = arith.divui %[[RANK]], %[[S0]] : index
// CHECK-NEXT: %[[ROW:.*]] = arith.remui %[[Q0]], %[[E0]] : index
// CHECK-NEXT: %[[S1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[E1:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[Q1:.*]] = arith.divui %[[RANK]], %[[S1]] : index
// CHECK-NEXT: %[[COL:.*]] = arith.remui %[[Q1]], %[[E1]] : index
// CHECK-NEXT: return %[[LINEAR]], %[[ROW]], %[[COL]]
func.func @indices() -> (index, index, index) {
  %linear = shard.process_linear_index on @grid : index
  %row, %column = shard.process_multi_index on @grid : index, index
  return %linear, %row, %column : index, index, index
}
// Private functions are reached from public ones, which check.
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: commrt_expect_size
// CHECK: return
func.func private @helper() {
  return
}
// CHECK: func.func private @commrt_expect_size(i64) -> i32

// -----

// Grids of different sizes cannot share the runtime's one communicator.
shard.grid @a(shape = 4)
// expected-error@below {{'shard.grid' op has 8 processes where another grid of the module has 4: the runtime runs one communicator of all ranks}}
shard.grid @b(shape = 2x4)

// -----

// expected-error@below {{'shard.grid' op cannot be lowered: it has no processes (an axis of size 0)}}
shard.grid @empty(shape = 4x0)

// -----

// expected-error@below {{'shard.grid' op cannot be lowered: the runtime needs a grid of static shape to check the rank count}}
shard.grid @dynamic(shape = 2x?)

// -----

// A shard collective that was not imported is an error, not left behind.
shard.grid @line(shape = 4)
func.func @not_imported(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@below {{'shard.all_reduce' op cannot be lowered to the runtime: import the module's shard collectives with comm-import-shard first}}
  %r = shard.all_reduce %g on @line grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
