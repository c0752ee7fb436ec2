// RUN: commopt-opt %s --convert-comm-to-runtime --canonicalize | FileCheck %s

// A mixed-wire bucket becomes one commrt_mixed_allreduce call (its start
// form on a channel): the group's handle (0 for all ranks), the buffers'
// addresses and counts, the narrowed flags as i32 in operand order, the
// count, and dtype, reduce, wire and prescale. Uniform buckets keep
// commrt_fused_allreduce.

shard.grid @grid(shape = 2x2)

// CHECK-LABEL: func.func @mixed
// The flags: 1 for the narrowed gradient, 0 for the others.
// CHECK: %[[FLAGS:.*]] = memref.alloca() : memref<3xi32>
// CHECK: memref.store %c1_i32, %[[FLAGS]][%c0]
// CHECK: memref.store %c0_i32, %[[FLAGS]][%c1]
// CHECK: memref.store %c0_i32, %[[FLAGS]][%c2]
// CHECK: %[[FLAGS_INDEX:.*]] = memref.extract_aligned_pointer_as_index %[[FLAGS]]
// CHECK: %[[FLAGS_I64:.*]] = arith.index_cast %[[FLAGS_INDEX]]
// CHECK: %[[FLAGS_PTR:.*]] = llvm.inttoptr %[[FLAGS_I64]] : i64 to !llvm.ptr
// CHECK: call @commrt_mixed_allreduce(%c0_i32, %{{.*}}, %{{.*}}, %[[FLAGS_PTR]], %c3_i32, %c0_i32, %c1_i32, %c2_i32, %{{cst[_0-9]*}}) : (i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32) -> i32
// A start: the same arguments, then the channel and the handle's slot.
// CHECK: call @commrt_mixed_allreduce_start(%c0_i32, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i32, %c0_i32, %c0_i32, %c3_i32, %{{cst[_0-9]*}}, %c1_i32, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32, !llvm.ptr) -> i32
// Over the rows of the grid: the group's handle first.
// CHECK: call @commrt_group_split(
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[ROWS:.*]] = memref.load
// CHECK: call @commrt_mixed_allreduce(%[[ROWS]],
// A uniform bucket.
// CHECK: call @commrt_fused_allreduce(
// CHECK-NOT: @commrt_mixed_allreduce(
// CHECK: call @commrt_wait
func.func @mixed(%w: memref<64xf32>, %b: memref<8xf32>, %c: memref<4xf32>) {
  comm.fused_allreduce %w, %b, %c {narrowed = array<i1: true, false, false>,
      prescale = 0.25, reduce = #comm.reduce<avg>, wire = f16}
      : memref<64xf32>, memref<8xf32>, memref<4xf32>
  %t = comm.start %w, %b {channel = 1, narrowed = array<i1: false, true>,
      wire = bf16} : memref<64xf32>, memref<8xf32>
  comm.fused_allreduce %w, %b {group = #comm.group<@grid, axes = [1]>,
      narrowed = array<i1: true, false>, wire = f16}
      : memref<64xf32>, memref<8xf32>
  comm.fused_allreduce %w, %b {wire = f16} : memref<64xf32>, memref<8xf32>
  comm.wait %t
  return
}
