// RUN: commopt-opt %s --comm-sparsify --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: commopt-opt %s --comm-sparsify --commopt-lower-to-llvm | FileCheck %s --check-prefix=LOWER

// A plan of comm-sparsify bufferizes: the residual global becomes a memref
// global that the collective updates through a copy (ml_program's
// bufferization copies on every load and store), and the gradient's buffer
// receives the reduced gradient in place.
// BUF: memref.global "private" @fc_weight_residual : memref<1000x2048xf32> = dense<0.000000e+00>
// BUF-LABEL: func.func @step
// BUF-SAME: (%[[G:.*]]: memref<1000x2048xf32>)
// BUF: %[[GLOBAL:.*]] = memref.get_global @fc_weight_residual
// BUF: %[[RES:.*]] = memref.alloc
// BUF: memref.copy %[[GLOBAL]], %[[RES]]
// BUF: comm.sparse_allreduce %[[G]], %[[RES]] {{.*}} : memref<1000x2048xf32>, memref<1000x2048xf32>{{$}}
// BUF: %[[GLOBAL2:.*]] = memref.get_global @fc_weight_residual
// BUF: memref.copy %[[RES]], %[[GLOBAL2]]
// BUF: return %[[G]]

// The plan lowers to the LLVM dialect: the residual global becomes an LLVM
// global, and the collective a call of the runtime's sparse allreduce.
// LOWER: llvm.mlir.global private @fc_weight_residual(dense<0.000000e+00> : tensor<1000x2048xf32>)
// LOWER-LABEL: llvm.func @step
// LOWER: llvm.call @commrt_sparse_allreduce({{.*}}) : (!llvm.ptr, !llvm.ptr, i64, f64, i32, i32, i32, i64) -> i32
// LOWER-NEXT: llvm.call @commrt_abort_on_error
// LOWER-NOT: comm.
// LOWER-NOT: bufferization.

func.func @step(%g: tensor<1000x2048xf32>) -> tensor<1000x2048xf32> {
  %w = comm.allreduce %g {name = "fc.weight", reduce = #comm.reduce<avg>}
      : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  return %w : tensor<1000x2048xf32>
}
