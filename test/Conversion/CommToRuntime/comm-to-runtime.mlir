// RUN: commopt-opt %s --convert-comm-to-runtime --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @contiguous
// CHECK-SAME: (%[[M:.*]]: memref<8xf32>)
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[AVG:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 8 : i64
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[M]]
// CHECK: %[[ADDR:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK: %[[STATUS:.*]] = call @commrt_allreduce(%[[PTR]], %[[COUNT]], %[[F32]], %[[AVG]]) : (!llvm.ptr, i64, i32, i32) -> i32
// CHECK: call @commrt_abort_on_error(%[[STATUS]]) : (i32) -> ()
// CHECK-NOT: comm.
func.func @contiguous(%m: memref<8xf32>) {
  comm.allreduce %m {reduce = #comm.reduce<avg>} : memref<8xf32>
  return
}

// A view with an offset is still contiguous: its address includes the
// offset, and no staging copy is made.
// CHECK-LABEL: func.func @offset_view
// CHECK-SAME: (%[[M:.*]]: memref<4x4xf64>)
// CHECK-DAG: %[[F64:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[OFFSET_BYTES:.*]] = arith.constant 32 : index
// CHECK-NOT: memref.alloc
// CHECK: %[[VIEW:.*]] = memref.subview %[[M]][1, 0] [2, 4] [1, 1]
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: %[[ADDR:.*]] = arith.addi %[[BASE]], %[[OFFSET_BYTES]] : index
// CHECK: %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[ADDR64]] : i64 to !llvm.ptr
// CHECK: call @commrt_allreduce(%[[PTR]], %[[COUNT]], %[[F64]], %[[MAX]])
// CHECK-NOT: memref.copy
func.func @offset_view(%m: memref<4x4xf64>) {
  %v = memref.subview %m[1, 0] [2, 4] [1, 1]
      : memref<4x4xf64> to memref<2x4xf64, strided<[4, 1], offset: 4>>
  comm.allreduce %v {reduce = #comm.reduce<max>} : memref<2x4xf64, strided<[4, 1], offset: 4>>
  return
}

// A strided view is staged through a contiguous copy and copied back.
// CHECK-LABEL: func.func @strided_view
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[STAGE:.*]] = memref.alloc
// CHECK: %[[PACKED:.*]] = memref.reinterpret_cast %[[STAGE]]
// CHECK: memref.copy %[[VIEW]], %[[PACKED]]
// CHECK: call @commrt_allreduce
// CHECK: memref.copy %[[PACKED]], %[[VIEW]]
// CHECK: memref.dealloc %[[STAGE]]
func.func @strided_view(%m: memref<4x4xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  comm.allreduce %v : memref<4x2xf32, strided<[4, 1], offset: 1>>
  return
}

// A bucket is packed into one fusion buffer and reduced with one call.
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[A:.*]]: memref<8xf16>, %[[B:.*]]: memref<?x3xf16>)
// CHECK-DAG: %[[F16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant 3 : i32
// CHECK: %[[FUSION:.*]] = memref.alloc(%[[TOTAL:.*]]) : memref<?xf16>
// CHECK: %[[VA:.*]] = memref.reinterpret_cast %[[FUSION]] to offset: [0], sizes: [8], strides: [1]
// CHECK: memref.copy %[[A]], %[[VA]]
// CHECK: %[[VB:.*]] = memref.reinterpret_cast %[[FUSION]] to offset: [8], sizes: [%{{.*}}, 3], strides: [3, 1]
// CHECK: memref.copy %[[B]], %[[VB]]
// CHECK: %[[N:.*]] = arith.index_cast %[[TOTAL]] : index to i64
// CHECK: call @commrt_allreduce(%{{.*}}, %[[N]], %[[F16]], %[[MIN]])
// CHECK-NOT: call @commrt_allreduce
// CHECK: memref.copy %[[VA]], %[[A]]
// CHECK: memref.copy %[[VB]], %[[B]]
// CHECK: memref.dealloc %[[FUSION]]
func.func @fused(%a: memref<8xf16>, %b: memref<?x3xf16>) {
  comm.fused_allreduce %a, %b {reduce = #comm.reduce<min>} : memref<8xf16>, memref<?x3xf16>
  return
}

// An f32 gradient with a wire type travels as f16 through
// commrt_allreduce_wire, pre-divided by the op's prescale.
// CHECK-LABEL: func.func @wire_f16
// CHECK-SAME: (%[[M:.*]]: memref<8xf32>)
// CHECK-DAG: %[[AVG:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[F16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[PRESCALE:.*]] = arith.constant 1.562500e-02 : f32
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 8 : i64
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[M]]
// CHECK: %[[ADDR:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK: %[[STATUS:.*]] = call @commrt_allreduce_wire(%[[PTR]], %[[COUNT]], %[[F16]], %[[AVG]], %[[PRESCALE]]) : (!llvm.ptr, i64, i32, i32, f32) -> i32
// CHECK: call @commrt_abort_on_error(%[[STATUS]]) : (i32) -> ()
// CHECK-NOT: call @commrt_allreduce(
func.func @wire_f16(%m: memref<8xf32>) {
  comm.allreduce %m {prescale = 0.015625 : f64, reduce = #comm.reduce<avg>, wire = f16} : memref<8xf32>
  return
}

// Without a prescale the factor is 1; bf16 is wire code 3.
// CHECK-LABEL: func.func @wire_bf16_no_prescale
// CHECK-DAG: %[[MAX:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: call @commrt_allreduce_wire(%{{.*}}, %{{.*}}, %[[BF16]], %[[MAX]], %[[ONE]])
func.func @wire_bf16_no_prescale(%m: memref<?xf32>) {
  comm.allreduce %m {reduce = #comm.reduce<max>, wire = bf16} : memref<?xf32>
  return
}

// A strided view with a wire type is staged like the plain path.
// CHECK-LABEL: func.func @wire_strided_view
// CHECK-DAG: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[F16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[PRESCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[STAGE:.*]] = memref.alloc
// CHECK: %[[PACKED:.*]] = memref.reinterpret_cast %[[STAGE]]
// CHECK: memref.copy %[[VIEW]], %[[PACKED]]
// CHECK: %[[STATUS:.*]] = call @commrt_allreduce_wire(%{{.*}}, %{{.*}}, %[[F16]], %[[SUM]], %[[PRESCALE]])
// CHECK: call @commrt_abort_on_error(%[[STATUS]])
// CHECK: memref.copy %[[PACKED]], %[[VIEW]]
// CHECK: memref.dealloc %[[STAGE]]
func.func @wire_strided_view(%m: memref<4x4xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  comm.allreduce %v {prescale = 0.25 : f64, wire = f16} : memref<4x2xf32, strided<[4, 1], offset: 1>>
  return
}

// CHECK-LABEL: func.func @queries
// CHECK: %[[R:.*]] = call @commrt_rank() : () -> i32
// CHECK: %[[RI:.*]] = arith.index_cast %[[R]] : i32 to index
// CHECK: %[[N:.*]] = call @commrt_size() : () -> i32
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : i32 to index
// CHECK: return %[[RI]], %[[NI]]
func.func @queries() -> (index, index) {
  %r = comm.rank
  %n = comm.world_size
  return %r, %n : index, index
}

// Functions that were not touched keep their bodies.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: return
func.func @left_alone(%m: memref<8xf32>) {
  return
}

// CHECK-DAG: func.func private @commrt_allreduce(!llvm.ptr, i64, i32, i32) -> i32
// CHECK-DAG: func.func private @commrt_allreduce_wire(!llvm.ptr, i64, i32, i32, f32) -> i32
// CHECK-DAG: func.func private @commrt_abort_on_error(i32)
// CHECK-DAG: func.func private @commrt_rank() -> i32
// CHECK-DAG: func.func private @commrt_size() -> i32
