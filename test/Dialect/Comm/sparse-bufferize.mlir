// RUN: commopt-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// comm.sparse_allreduce updates both of its buffers in place: the gradient's
// receives the reduced gradient, the residual's the new residual. One-shot
// bufferization copies an operand first only when its old value is still
// read afterwards.

// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[G:.*]]: memref<1024xf32>, %[[R:.*]]: memref<1024xf32>) -> (memref<1024xf32>, memref<1024xf32>)
// CHECK-NOT: memref.alloc
// CHECK: comm.sparse_allreduce %[[G]], %[[R]] {density = 1.000000e-02 : f64, exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>, select = #comm.select<threshold>} : memref<1024xf32>, memref<1024xf32>{{$}}
// CHECK: return %[[G]], %[[R]]
func.func @in_place(%g: tensor<1024xf32>, %r: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>) {
  %0:2 = comm.sparse_allreduce %g, %r
      {density = 0.01, select = #comm.select<threshold>,
       exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>}
      : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
  return %0#0, %0#1 : tensor<1024xf32>, tensor<1024xf32>
}

// The old residual is still returned: the collective works on a copy of the
// residual, and the gradient's buffer is still updated in place.
// CHECK-LABEL: func.func @old_residual_still_read
// CHECK-SAME: (%[[G:.*]]: memref<8xf32>, %[[R:.*]]: memref<8xf32>)
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: memref.copy %[[R]], %[[COPY]]
// CHECK: comm.sparse_allreduce %[[G]], %[[COPY]]
// CHECK: return %[[G]], %[[COPY]], %[[R]]
func.func @old_residual_still_read(%g: tensor<8xf32>, %r: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0:2 = comm.sparse_allreduce %g, %r
      {density = 0.25, select = #comm.select<topk>,
       exchange = #comm.exchange<hash>}
      : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  return %0#0, %0#1, %r : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// The residual is created in the function: a fresh buffer, no copy.
// CHECK-LABEL: func.func @fresh_residual
// CHECK-SAME: (%[[G:.*]]: memref<8xf32>)
// CHECK: %[[ZERO:.*]] = memref.alloc() {{.*}} : memref<8xf32>
// CHECK: linalg.fill {{.*}} outs(%[[ZERO]] : memref<8xf32>)
// CHECK-NOT: memref.copy
// CHECK: comm.sparse_allreduce %[[G]], %[[ZERO]] {chunk_elements = 4 : i64
// CHECK: return %[[G]], %[[ZERO]]
func.func @fresh_residual(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %cst = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %0:2 = comm.sparse_allreduce %g, %zero
      {density = 0.5, select = #comm.select<chunk>,
       exchange = #comm.exchange<chunk>, chunk_elements = 4}
      : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  return %0#0, %0#1 : tensor<8xf32>, tensor<8xf32>
}

// A started sparse allreduce works in place too: the wait's results are the
// gradient's and the residual's buffers.
// CHECK-LABEL: func.func @started
// CHECK-SAME: (%[[G:.*]]: memref<1024xf32>, %[[R:.*]]: memref<1024xf32>) -> (memref<1024xf32>, memref<1024xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[T:.*]] = comm.sparse_start %[[G]], %[[R]] {channel = 1 : i64, density = 1.000000e-02 : f64, exchange = #comm.exchange<hash>, select = #comm.select<topk>} : memref<1024xf32>, memref<1024xf32>{{$}}
// CHECK: comm.wait %[[T]]{{$}}
// CHECK: return %[[G]], %[[R]]
func.func @started(%g: tensor<1024xf32>, %r: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>) {
  %t = comm.sparse_start %g, %r
      {density = 0.01, select = #comm.select<topk>,
       exchange = #comm.exchange<hash>, channel = 1}
      : tensor<1024xf32>, tensor<1024xf32>
  %0:2 = comm.wait %t : tensor<1024xf32>, tensor<1024xf32>
  return %0#0, %0#1 : tensor<1024xf32>, tensor<1024xf32>
}
