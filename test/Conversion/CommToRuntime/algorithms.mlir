// RUN: commopt-opt %s --convert-comm-to-runtime --canonicalize | FileCheck %s

// A collective with `algorithm` lowers to the commrt_group_ form of the
// fused allreduce (or of its start), group 0 (all ranks) without a `group`,
// with the algorithm's commrt_algorithm value after the prescale: ring 1,
// tree 2, hierarchical 3. Arguments: group, buffers, counts, nbuffers,
// dtype (f32: 0), reduce (sum 0, avg 1), wire (none: -1), prescale,
// algorithm[, channel, handle].

shard.grid @grid(shape = 2x3)

// CHECK-LABEL: func.func @all_ranks
// A single contiguous f32 gradient, which would otherwise take
// commrt_allreduce: ring.
// CHECK: call @commrt_group_fused_allreduce(%c0_i32, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c1_i32) : (i32, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32) -> i32
// CHECK-NEXT: call @commrt_abort_on_error
// A bucket: tree.
// CHECK: call @commrt_group_fused_allreduce(%c0_i32, %{{.*}}, %{{.*}}, %c2_i32, %c0_i32, %c1_i32, %c-1_i32, %{{cst[_0-9]*}}, %c2_i32)
// A start on channel 1: hierarchical, then the channel and the handle.
// CHECK: call @commrt_group_fused_allreduce_start(%c0_i32, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c3_i32, %c1_i32, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32, i32, !llvm.ptr) -> i32
// CHECK: call @commrt_wait(
// Neither algorithm nor group: today's calls.
// CHECK: call @commrt_allreduce(
// CHECK: call @commrt_fused_allreduce(%{{.*}}, %{{.*}}, %c2_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}) : (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32) -> i32
// CHECK: call @commrt_fused_allreduce_start(
// CHECK-NOT: commrt_group_split
// CHECK: return
func.func @all_ranks(%m: memref<4xf32>, %n: memref<8xf32>) {
  comm.allreduce %m {algorithm = #comm.algorithm<ring>} : memref<4xf32>
  comm.fused_allreduce %m, %n {algorithm = #comm.algorithm<tree>,
                               reduce = #comm.reduce<avg>}
      : memref<4xf32>, memref<8xf32>
  %t = comm.start %m {algorithm = #comm.algorithm<hierarchical>,
                      channel = 1 : i64} : memref<4xf32>
  comm.wait %t
  comm.allreduce %m : memref<4xf32>
  comm.fused_allreduce %m, %n : memref<4xf32>, memref<8xf32>
  %u = comm.start %m : memref<4xf32>
  comm.wait %u
  return
}

// With a group, the group's handle and the algorithm.
// CHECK-LABEL: func.func @grouped
// CHECK: call @commrt_group_split(
// CHECK: %[[ROWS:.*]] = memref.load
// CHECK: call @commrt_group_fused_allreduce(%[[ROWS]], %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c2_i32)
// CHECK: call @commrt_group_split(
// CHECK: %[[COLUMNS:.*]] = memref.load
// CHECK: call @commrt_group_fused_allreduce_start(%[[COLUMNS]], %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c1_i32, %c0_i32, %{{.*}})
// CHECK: call @commrt_wait(
// CHECK: call @commrt_group_split(
// CHECK: call @commrt_group_fused_allreduce(%{{.*}}, %{{.*}}, %{{.*}}, %c2_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c3_i32)
// CHECK: return
func.func @grouped(%m: memref<4xf32>, %n: memref<8xf32>) {
  comm.allreduce %m {algorithm = #comm.algorithm<tree>,
                     group = #comm.group<@grid, axes = [1]>} : memref<4xf32>
  %t = comm.start %m {algorithm = #comm.algorithm<ring>,
                      group = #comm.group<@grid, axes = [0]>} : memref<4xf32>
  comm.wait %t
  comm.fused_allreduce %m, %n {algorithm = #comm.algorithm<hierarchical>,
                               group = #comm.group<@grid, axes = [0, 1]>}
      : memref<4xf32>, memref<8xf32>
  return
}

// A transport goes into the same argument, shifted by
// COMMRT_TRANSPORT_SHIFT (8): MPI 1 << 8, NCCL 2 << 8. Its function makes
// each transport it names available on entry (commrt_use_transport, MPI 1,
// NCCL 2), before a group's collective needs it.
// The job's size is checked first (the grid's 6 ranks).
// CHECK-LABEL: func.func @transports
// CHECK: call @commrt_expect_size(%c6_i64)
// CHECK: call @commrt_use_transport(%c1_i32) : (i32) -> i32
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK: call @commrt_use_transport(%c2_i32) : (i32) -> i32
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK: call @commrt_group_fused_allreduce(%c0_i32, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c258_i32)
// Without an algorithm: the runtime's default, on NCCL.
// CHECK: call @commrt_group_fused_allreduce_start(%c0_i32, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c512_i32, %c0_i32, %{{.*}})
// A group's ring on MPI: 1 | 1 << 8.
// CHECK: call @commrt_group_split(
// CHECK: call @commrt_group_fused_allreduce(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i32, %c0_i32, %c0_i32, %c-1_i32, %{{cst[_0-9]*}}, %c257_i32)
// CHECK-NOT: commrt_use_transport
// CHECK: return
func.func @transports(%m: memref<4xf32>) {
  comm.allreduce %m {algorithm = #comm.algorithm<tree>,
                     transport = #comm.transport<mpi>} : memref<4xf32>
  %t = comm.start %m {transport = #comm.transport<nccl>} : memref<4xf32>
  comm.wait %t
  comm.allreduce %m {algorithm = #comm.algorithm<ring>,
                     group = #comm.group<@grid, axes = [1]>,
                     transport = #comm.transport<mpi>} : memref<4xf32>
  return
}

// A function without one calls nothing more.
// CHECK-LABEL: func.func @no_transport
// CHECK-NOT: commrt_use_transport
// CHECK: return
func.func @no_transport(%m: memref<4xf32>) {
  comm.allreduce %m {algorithm = #comm.algorithm<ring>} : memref<4xf32>
  return
}
