// RUN: commopt-opt %s --convert-comm-to-runtime --canonicalize | FileCheck %s

// A collective over a process group runs on the calling rank's group: its
// coordinates on the grid (row-major, from commrt_rank) give the color (the
// other axes) and the key (the group's axes) of commrt_group_split, whose id
// names the grid and the axes, and the collective's commrt_group_ form
// takes the handle. The grid is 2x3: rank r is at (r / 3 % 2, r % 3).

shard.grid @grid(shape = 2x3)

// CHECK-LABEL: func.func @groups
// CHECK: call @commrt_expect_size(%c6_i64)

// Rows (axis 1): color = row, key = column.
// CHECK: %[[RANK:.*]] = call @commrt_rank()
// CHECK: %[[R:.*]] = arith.index_cast %[[RANK]] : i32 to index
// CHECK: %[[Q:.*]] = arith.divui %[[R]], %c3
// CHECK: %[[ROW:.*]] = arith.remui %[[Q]], %c2
// CHECK: %[[COL:.*]] = arith.remui %[[R]], %c3
// CHECK: %[[COLOR:.*]] = arith.index_cast %[[ROW]] : index to i32
// CHECK: %[[KEY:.*]] = arith.index_cast %[[COL]] : index to i32
// CHECK: call @commrt_group_split(%[[ROWS_ID:c[0-9]+_i64]], %[[COLOR]], %[[KEY]], %{{.*}}) : (i64, i32, i32, !llvm.ptr) -> i32
// CHECK: %[[ROWS:.*]] = memref.load
// Without an `algorithm`, the runtime's default (COMMRT_ALGORITHM_DEFAULT,
// 0) after the prescale.
// CHECK: call @commrt_group_fused_allreduce(%[[ROWS]], %{{.*}}, %{{.*}}, %c2_i32, %c0_i32, %c1_i32, %c-1_i32, %{{cst[_0-9]*}}, %c0_i32) : (i32, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32) -> i32

// Columns (axis 0): color = column, key = row; a single gradient goes
// through the group's fused allreduce too.
// CHECK: call @commrt_rank()
// CHECK: %[[ROW2:.*]] = arith.remui %{{.*}}, %c2
// CHECK: %[[COL2:.*]] = arith.remui %{{.*}}, %c3
// CHECK: %[[COLOR2:.*]] = arith.index_cast %[[COL2]] : index to i32
// CHECK: %[[KEY2:.*]] = arith.index_cast %[[ROW2]] : index to i32
// CHECK: call @commrt_group_split(%[[COLS_ID:c[0-9]+_i64]], %[[COLOR2]], %[[KEY2]], %{{.*}})
// CHECK: call @commrt_group_fused_allreduce(

// A start on a channel, on the rows.
// CHECK: call @commrt_group_split(%[[ROWS_ID]],
// CHECK: call @commrt_group_fused_allreduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c0_i32, %c1_i32, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32, i32, !llvm.ptr) -> i32
// CHECK: call @commrt_wait(

// A sparse allreduce over the columns: commrt_group_sparse_allreduce takes
// the handle first, then commrt_sparse_allreduce's arguments.
// CHECK: call @commrt_group_split(%[[COLS_ID]],
// CHECK: %[[COLS:.*]] = memref.load
// CHECK: call @commrt_group_sparse_allreduce(%[[COLS]], %{{.*}}, %{{.*}}, %c8_i64, %{{cst[_0-9]*}}, %c0_i32, %c1_i32, %c0_i32, %c32768_i64) : (i32, !llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64) -> i32

// Without a group: the collectives of all ranks.
// CHECK: call @commrt_allreduce(
// CHECK-NOT: commrt_group
// CHECK: return
func.func @groups(%m: memref<4xf32>, %n: memref<8xf32>, %r: memref<8xf32>) {
  comm.fused_allreduce %m, %n {group = #comm.group<@grid, axes = [1]>,
                               reduce = #comm.reduce<avg>}
      : memref<4xf32>, memref<8xf32>
  comm.allreduce %m {group = #comm.group<@grid, axes = [0]>} : memref<4xf32>
  %t = comm.start %m {group = #comm.group<@grid, axes = [1]>, channel = 1 : i64}
      : memref<4xf32>
  comm.wait %t
  comm.sparse_allreduce %n, %r {density = 2.500000e-01 : f64,
      exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [0]>,
      select = #comm.select<topk>} : memref<8xf32>, memref<8xf32>
  comm.allreduce %m : memref<4xf32>
  return
}
