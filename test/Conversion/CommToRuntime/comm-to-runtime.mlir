// RUN: commopt-opt %s --convert-comm-to-runtime --canonicalize | FileCheck %s
// RUN: commopt-opt %s --convert-comm-to-runtime="compute-delay" | FileCheck %s --check-prefix=DELAY

// With compute-delay, a profiled compute step sleeps for its cost, counted
// from the step's beginning (compute.mlir has steps with outputs).
// DELAY-LABEL: func.func @start_wait
// DELAY: call @commrt_fused_allreduce_start
// DELAY: %[[BEGAN:.*]] = call @commrt_time_us() : () -> f64
// DELAY-NEXT: %[[COST:.*]] = arith.constant 1.000000e+01 : f64
// DELAY-NEXT: call @commrt_sleep_since_us(%[[COST]], %[[BEGAN]]) : (f64, f64) -> ()
// DELAY: call @commrt_wait
// DELAY: func.func private @commrt_sleep_since_us(f64, f64)

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

// A strided view is staged through a contiguous copy, reduced by the
// runtime's fused entry point (which takes any number of buffers) and
// copied back.
// CHECK-LABEL: func.func @strided_view
// CHECK-DAG: %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[NOSCALE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[COUNTS:.*]] = memref.alloca() : memref<1xi64>
// CHECK-DAG: %[[ADDRS:.*]] = memref.alloca() : memref<1xi64>
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[STAGE:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: memref.copy %[[VIEW]], %[[STAGE]]
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[STAGE]]
// CHECK: %[[ADDR:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK: memref.store %[[ADDR]], %[[ADDRS]][%{{.*}}]
// CHECK: memref.store %[[EIGHT]], %[[COUNTS]][%{{.*}}]
// CHECK: %[[STATUS:.*]] = call @commrt_fused_allreduce(%{{.*}}, %{{.*}}, %[[ONE]], %[[F32]], %[[F32]], %[[NONE]], %[[NOSCALE]])
// CHECK: call @commrt_abort_on_error(%[[STATUS]])
// CHECK: memref.copy %[[STAGE]], %[[VIEW]]
// CHECK: memref.dealloc %[[STAGE]]
func.func @strided_view(%m: memref<4x4xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  comm.allreduce %v : memref<4x2xf32, strided<[4, 1], offset: 1>>
  return
}

// A bucket: the buffers' addresses and element counts go to the runtime in
// two arrays on the function's stack; the runtime packs, reduces once and
// unpacks.
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[A:.*]]: memref<8xf16>, %[[B:.*]]: memref<?x3xf16>)
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[NONE:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[COUNTS:.*]] = memref.alloca() : memref<2xi64>
// CHECK-DAG: %[[ADDRS:.*]] = memref.alloca() : memref<2xi64>
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: memref.store %{{.*}}, %[[ADDRS]][%[[C0:.*]]]
// CHECK: memref.store %{{.*}}, %[[COUNTS]][%[[C0]]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[ROWS:.*]] = memref.dim %[[B]]
// CHECK: %[[N:.*]] = arith.muli %[[ROWS]], %{{.*}} : index
// CHECK: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: memref.store %{{.*}}, %[[ADDRS]][%[[C1:.*]]]
// CHECK: memref.store %[[N64]], %[[COUNTS]][%[[C1]]]
// CHECK: call @commrt_fused_allreduce(%{{.*}}, %{{.*}}, %[[TWO]], %[[TWO]], %[[MIN]], %[[NONE]], %{{.*}})
// CHECK-NOT: memref.copy
func.func @fused(%a: memref<8xf16>, %b: memref<?x3xf16>) {
  comm.fused_allreduce %a, %b {reduce = #comm.reduce<min>} : memref<8xf16>, memref<?x3xf16>
  return
}

// Wire precision: the runtime casts while packing, with the prescale.
// CHECK-LABEL: func.func @wire_f16
// CHECK-DAG: %[[PRESCALE:.*]] = arith.constant 1.562500e-02 : f32
// CHECK-DAG: %[[F16:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[AVG:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: call @commrt_fused_allreduce(%{{.*}}, %{{.*}}, %[[AVG]], %[[F32]], %[[AVG]], %[[F16]], %[[PRESCALE]])
func.func @wire_f16(%m: memref<8xf32>) {
  comm.allreduce %m {prescale = 0.015625 : f64, reduce = #comm.reduce<avg>, wire = f16} : memref<8xf32>
  return
}

// f64 gradients and buckets travel in a wire type too; without a prescale
// the factor is 1; bf16 is wire code 3.
// CHECK-LABEL: func.func @wire_bf16_bucket
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[BF16:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[F64:.*]] = arith.constant 1 : i32
// CHECK: call @commrt_fused_allreduce(%{{.*}}, %{{.*}}, %[[MAX]], %[[F64]], %[[MAX]], %[[BF16]], %[[ONE]])
func.func @wire_bf16_bucket(%a: memref<?xf64>, %b: memref<4xf64>) {
  comm.fused_allreduce %a, %b {reduce = #comm.reduce<max>, wire = bf16} : memref<?xf64>, memref<4xf64>
  return
}

// An asynchronous collective: the start hands the buffers to the runtime on
// its channel and keeps the handle in a stack slot; the wait completes it,
// then the staged view is copied back.
// CHECK-LABEL: func.func @start_wait
// CHECK-DAG: %[[CHANNEL:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[SLOT:.*]] = memref.alloca() : memref<1xi64>
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[STAGE:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: memref.copy %[[VIEW]], %[[STAGE]]
// CHECK: %[[SLOTBASE:.*]] = memref.extract_aligned_pointer_as_index %[[SLOT]]
// CHECK: %[[SLOTADDR:.*]] = arith.index_cast %[[SLOTBASE]] : index to i64
// CHECK: %[[SLOTPTR:.*]] = llvm.inttoptr %[[SLOTADDR]] : i64 to !llvm.ptr
// CHECK: %[[STARTED:.*]] = call @commrt_fused_allreduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CHANNEL]], %[[SLOTPTR]])
// CHECK: call @commrt_abort_on_error(%[[STARTED]])
// CHECK-NOT: comm.compute
// CHECK: %[[HANDLE:.*]] = memref.load %[[SLOT]]
// CHECK: %[[WAITED:.*]] = call @commrt_wait(%[[HANDLE]]) : (i64) -> i32
// CHECK: call @commrt_abort_on_error(%[[WAITED]])
// CHECK: memref.copy %[[STAGE]], %[[VIEW]]
// CHECK: memref.dealloc %[[STAGE]]
// CHECK-NOT: comm.start
// CHECK-NOT: comm.wait
func.func @start_wait(%a: memref<8xf32>, %m: memref<4x4xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  %t = comm.start %a, %v {channel = 3, reduce = #comm.reduce<avg>}
      : memref<8xf32>, memref<4x2xf32, strided<[4, 1], offset: 1>>
  comm.compute () {cost_us = 10.0} : () -> ()
  comm.wait %t
  return
}

// The stack slots are made at the function's entry, not in the loop.
// CHECK-LABEL: func.func @start_in_loop
// CHECK: memref.alloca
// CHECK: scf.for
// CHECK-NOT: memref.alloca
// CHECK: call @commrt_fused_allreduce_start
// CHECK: call @commrt_wait
func.func @start_in_loop(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = comm.start %a : memref<8xf32>
    comm.wait %t
  }
  return
}

// A sparse allreduce passes its buffers, element count and attributes on:
// density as an f64, select, exchange and reduce as their enum values.
// CHECK-LABEL: func.func @sparse
// CHECK-SAME: (%[[G:.*]]: memref<4x8xf32>, %[[R:.*]]: memref<4x8xf32>)
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[DENSITY:.*]] = arith.constant 2.500000e-01 : f64
// CHECK-DAG: %[[THRESHOLD:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ALLGATHER:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[DEFAULT_CHUNK:.*]] = arith.constant 32768 : i64
// CHECK: %[[GPTR:.*]] = llvm.inttoptr {{.*}} : i64 to !llvm.ptr
// CHECK: %[[RPTR:.*]] = llvm.inttoptr {{.*}} : i64 to !llvm.ptr
// CHECK: %[[STATUS:.*]] = call @commrt_sparse_allreduce(%[[GPTR]], %[[RPTR]], %[[COUNT]], %[[DENSITY]], %[[THRESHOLD]], %[[ALLGATHER]], %[[THRESHOLD]], %[[DEFAULT_CHUNK]]) : (!llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64) -> i32
// CHECK: call @commrt_abort_on_error(%[[STATUS]])
// CHECK-NOT: comm.
func.func @sparse(%g: memref<4x8xf32>, %r: memref<4x8xf32>) {
  comm.sparse_allreduce %g, %r {density = 0.25, select = #comm.select<threshold>,
      exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>}
      : memref<4x8xf32>, memref<4x8xf32>
  return
}

// A strided gradient is staged through a contiguous copy and copied back;
// chunk_elements is passed on.
// CHECK-LABEL: func.func @sparse_strided
// CHECK-DAG: %[[CHUNK:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[SUM:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ELEMENTS:.*]] = arith.constant 4 : i64
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<2x4xf32>
// CHECK: memref.copy %{{.*}}, %[[COPY]]
// CHECK: call @commrt_sparse_allreduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CHUNK]], %[[CHUNK]], %[[SUM]], %[[ELEMENTS]])
// CHECK: memref.copy %[[COPY]], %{{.*}}
// CHECK: memref.dealloc %[[COPY]]
func.func @sparse_strided(%m: memref<4x4xf32>, %r: memref<2x4xf32>) {
  %v = memref.subview %m[0, 0] [2, 4] [2, 1]
      : memref<4x4xf32> to memref<2x4xf32, strided<[8, 1]>>
  comm.sparse_allreduce %v, %r {chunk_elements = 4 : i64, density = 0.5,
      select = #comm.select<chunk>, exchange = #comm.exchange<chunk>}
      : memref<2x4xf32, strided<[8, 1]>>, memref<2x4xf32>
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
// CHECK-DAG: func.func private @commrt_fused_allreduce(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32) -> i32
// CHECK-DAG: func.func private @commrt_fused_allreduce_start(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32, i32, !llvm.ptr) -> i32
// CHECK-DAG: func.func private @commrt_wait(i64) -> i32
// CHECK-DAG: func.func private @commrt_sparse_allreduce(!llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64) -> i32
// CHECK-DAG: func.func private @commrt_abort_on_error(i32)
// CHECK-DAG: func.func private @commrt_rank() -> i32
// CHECK-DAG: func.func private @commrt_size() -> i32
