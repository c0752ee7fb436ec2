// RUN: commopt-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: commopt-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --convert-comm-to-runtime --canonicalize | FileCheck %s
// RUN: commopt-opt %s -split-input-file --commopt-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// The lossless rows exchange bufferizes in place (the gradient's buffer
// receives the result; there is no residual) and lowers to
// commrt_sparse_allreduce with a null residual and the row length where
// chunk selection passes its chunk size.

// BUF-LABEL: func.func @embedding
// BUF-SAME: (%[[G:.*]]: memref<1000x64xf32>)
// BUF-NOT: memref.alloc
// BUF: comm.sparse_allreduce %[[G]] {density = 2.000000e-02 : f64, exchange = #comm.exchange<hash>, name = "emb", reduce = #comm.reduce<avg>, select = #comm.select<rows>} : memref<1000x64xf32>{{$}}
// BUF: return %[[G]]

// CHECK-LABEL: func.func @embedding
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 64000 : i64
// CHECK-DAG: %[[DENSITY:.*]] = arith.constant 2.000000e-02 : f64
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 3 : i32
// CHECK-DAG: %[[ROW:.*]] = arith.constant 64 : i64
// Exchange hash (1) and reduction avg (1) share one constant.
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: call @commrt_sparse_allreduce(%{{.*}}, %[[NULL]], %[[COUNT]], %[[DENSITY]], %[[ROWS]], %[[ONE]], %[[ONE]], %[[ROW]])

// LLVM-LABEL: llvm.func @embedding
// LLVM: llvm.call @commrt_sparse_allreduce({{.*}}) : (!llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64) -> i32
// LLVM-NOT: comm.
func.func @embedding(%g: tensor<1000x64xf32>) -> tensor<1000x64xf32> {
  %0 = comm.sparse_allreduce %g
      {density = 0.02, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<avg>,
       name = "emb"}
      : tensor<1000x64xf32> -> tensor<1000x64xf32>
  return %0 : tensor<1000x64xf32>
}

// -----

// A 1-D gradient's rows are its entries; the start takes its channel and a
// handle slot.
// CHECK-LABEL: func.func @started
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// Select rows (3) and channel 3 share one constant.
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3 : i32
// CHECK: call @commrt_sparse_allreduce_start(%{{.*}}, %[[NULL]], %{{.*}}, %{{.*}}, %[[THREE]], %{{.*}}, %{{.*}}, %[[ONE]], %[[THREE]], %{{.*}})
// CHECK: call @commrt_wait
func.func @started(%g: tensor<512xf32>) -> tensor<512xf32> {
  %t = comm.sparse_start %g
      {channel = 3 : i64, density = 0.1, select = #comm.select<rows>,
       exchange = #comm.exchange<allgather>}
      : tensor<512xf32>
  %0 = comm.wait %t : tensor<512xf32>
  return %0 : tensor<512xf32>
}
