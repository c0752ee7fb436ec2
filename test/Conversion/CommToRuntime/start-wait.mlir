// RUN: commopt-opt %s -split-input-file --convert-comm-to-runtime --canonicalize | FileCheck %s

// Collectives in flight together on different channels, waited in another
// order than started: each wait takes its own start's handle and writes
// back its own start's staged copies, whatever the order.
// CHECK-LABEL: func.func @interleaved
// CHECK-SAME: (%[[M:.*]]: memref<4x4xf32>, %[[N:.*]]: memref<4x4xf32>, %[[A:.*]]: memref<8xf32>)
// CHECK-DAG: %[[CH1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[CH2:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[CH3:.*]] = arith.constant 3 : i32
// CHECK: %[[VIEW1:.*]] = memref.subview %[[M]]
// CHECK: %[[VIEW2:.*]] = memref.subview %[[N]]
// CHECK: %[[STAGE1:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: memref.copy %[[VIEW1]], %[[STAGE1]]
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH1]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H1:.*]] = memref.load
// CHECK: %[[STAGE2:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: memref.copy %[[VIEW2]], %[[STAGE2]]
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH2]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H2:.*]] = memref.load
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH3]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H3:.*]] = memref.load
// CHECK: call @commrt_wait(%[[H2]])
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: memref.copy %[[STAGE2]], %[[VIEW2]]
// CHECK-NEXT: memref.dealloc %[[STAGE2]]
// CHECK-NEXT: call @commrt_wait(%[[H3]])
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: call @commrt_wait(%[[H1]])
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: memref.copy %[[STAGE1]], %[[VIEW1]]
// CHECK-NEXT: memref.dealloc %[[STAGE1]]
// CHECK-NEXT: return
func.func @interleaved(%m: memref<4x4xf32>, %n: memref<4x4xf32>, %a: memref<8xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  %w = memref.subview %n[0, 2] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 2>>
  %t1 = comm.start %v {channel = 1}
      : memref<4x2xf32, strided<[4, 1], offset: 1>>
  %t2 = comm.start %w {channel = 2}
      : memref<4x2xf32, strided<[4, 1], offset: 2>>
  %t3 = comm.start %a {channel = 3} : memref<8xf32>
  comm.wait %t2
  comm.wait %t3
  comm.wait %t1
  return
}

// A collective in flight across a loop whose iterations overlap their own,
// one of them started and waited in a branch, and a wait in another region
// than its start.
// CHECK-LABEL: func.func @across_regions
// CHECK-SAME: (%[[M:.*]]: memref<4x4xf32>, %[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<16xf64>, %[[N:.*]]: index, %[[FLAG:.*]]: i1)
// CHECK-DAG: %[[CH1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[CH2:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[CH3:.*]] = arith.constant 3 : i32
// CHECK: %[[VIEW:.*]] = memref.subview %[[M]]
// CHECK: %[[STAGE:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH1]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H1:.*]] = memref.load
// CHECK: scf.for
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH2]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H2:.*]] = memref.load
// CHECK: scf.if %[[FLAG]] {
// CHECK: call @commrt_fused_allreduce_start({{.*}}, %[[CH3]], %{{.*}})
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H3:.*]] = memref.load
// CHECK: call @commrt_wait(%[[H3]])
// CHECK: }
// CHECK: call @commrt_wait(%[[H2]])
// CHECK: }
// CHECK: scf.execute_region no_inline {
// CHECK-NEXT: call @commrt_wait(%[[H1]])
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: memref.copy %[[STAGE]], %[[VIEW]]
// CHECK-NEXT: memref.dealloc %[[STAGE]]
// CHECK-NEXT: scf.yield
// CHECK-NOT: comm.
func.func @across_regions(%m: memref<4x4xf32>, %a: memref<8xf32>, %b: memref<16xf64>,
                          %n: index, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  %outer = comm.start %v {channel = 1}
      : memref<4x2xf32, strided<[4, 1], offset: 1>>
  scf.for %i = %c0 to %n step %c1 {
    %inner = comm.start %a {channel = 2} : memref<8xf32>
    scf.if %flag {
      %nested = comm.start %b {channel = 3} : memref<16xf64>
      comm.compute () {cost_us = 5.0} : () -> ()
      comm.wait %nested
    }
    comm.wait %inner
  }
  scf.execute_region no_inline {
    comm.wait %outer
    scf.yield
  }
  return
}

// -----

// A module without comm ops is left as it is: no runtime declarations.
// CHECK-LABEL: func.func @no_comm_ops
// CHECK-NEXT: arith.addi
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: commrt
func.func @no_comm_ops(%x: index) -> index {
  %y = arith.addi %x, %x : index
  return %y : index
}

// -----

// A started sparse allreduce: commrt_sparse_allreduce_start takes
// commrt_sparse_allreduce's arguments, then the channel and the handle's
// slot; the wait takes that handle. A residual of strided layout is staged
// into a contiguous copy, written back after the wait.
// CHECK-LABEL: func.func @sparse_started
// CHECK-SAME: (%[[G:.*]]: memref<64xf32>, %[[R:.*]]: memref<64xf32, strided<[2]>>)
// CHECK-DAG: %[[CH2:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[CHUNK:.*]] = arith.constant 16 : i64
// CHECK: %[[SLOT:.*]] = memref.alloca() : memref<1xi64>
// CHECK: %[[STAGE:.*]] = memref.alloc() : memref<64xf32>
// CHECK: memref.copy %[[R]], %[[STAGE]]
// CHECK: call @commrt_sparse_allreduce_start(%{{.*}}, %{{.*}}, %c64_i64, %{{.*}}, %c2_i32, %c2_i32, %c1_i32, %[[CHUNK]], %[[CH2]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64, i32, !llvm.ptr) -> i32
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: %[[H:.*]] = memref.load %[[SLOT]]
// CHECK: call @commrt_wait(%[[H]])
// CHECK-NEXT: call @commrt_abort_on_error
// CHECK-NEXT: memref.copy %[[STAGE]], %[[R]]
// CHECK-NEXT: memref.dealloc %[[STAGE]]
// CHECK-NEXT: return
func.func @sparse_started(%g: memref<64xf32>, %r: memref<64xf32, strided<[2]>>) {
  %t = comm.sparse_start %g, %r {channel = 2 : i64, chunk_elements = 16 : i64,
      density = 2.500000e-01 : f64, exchange = #comm.exchange<chunk>,
      reduce = #comm.reduce<avg>, select = #comm.select<chunk>}
      : memref<64xf32>, memref<64xf32, strided<[2]>>
  comm.compute () {cost_us = 5.0 : f64} : () -> ()
  comm.wait %t
  return
}

// -----

// Within a process group: commrt_group_sparse_allreduce_start, the group's
// handle first.
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @sparse_started_group
// CHECK: call @commrt_group_split(
// CHECK: %[[GROUP:.*]] = memref.load
// CHECK: call @commrt_group_sparse_allreduce_start(%[[GROUP]], %{{.*}}, %{{.*}}, %c8_i64, %{{.*}}, %c1_i32, %c1_i32, %c0_i32, %c32768_i64, %c1_i32, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64, i32, !llvm.ptr) -> i32
// CHECK: call @commrt_wait(
func.func @sparse_started_group(%g: memref<8xf32>, %r: memref<8xf32>) {
  %t = comm.sparse_start %g, %r {channel = 1 : i64, density = 2.500000e-01 : f64,
      exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [1]>,
      select = #comm.select<threshold>} : memref<8xf32>, memref<8xf32>
  comm.wait %t
  return
}
