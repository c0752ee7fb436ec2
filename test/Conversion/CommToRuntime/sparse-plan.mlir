// RUN: commopt-opt %s --comm-sparsify --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: not commopt-opt %s --comm-sparsify --commopt-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=LOWER

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

// The runtime has no sparse path yet: the lowering stops there and says so.
// LOWER: error: 'comm.sparse_allreduce' op cannot be lowered yet by convert-comm-to-runtime: the runtime has no sparse exchange

func.func @step(%g: tensor<1000x2048xf32>) -> tensor<1000x2048xf32> {
  %w = comm.allreduce %g {name = "fc.weight", reduce = #comm.reduce<avg>}
      : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  return %w : tensor<1000x2048xf32>
}
