// RUN: commopt-opt %s -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file | commopt-opt -split-input-file | FileCheck %s
// RUN: commopt-opt %s -split-input-file --mlir-print-op-generic | commopt-opt -split-input-file | FileCheck %s

// The lossless exchange of a gradient that is sparse by nature:
// `select = rows` takes no residual and returns the reduced gradient alone,
// blocking or started, in tensor and in buffer form.

// CHECK-LABEL: func.func @embedding
func.func @embedding(%g: tensor<100000x64xf32>) -> tensor<100000x64xf32> {
  // CHECK: %{{.*}} = comm.sparse_allreduce %{{.*}} {density = 2.000000e-02 : f64, exchange = #comm.exchange<hash>, name = "embedding.weight", reduce = #comm.reduce<avg>, select = #comm.select<rows>} : tensor<100000x64xf32> -> tensor<100000x64xf32>
  %0 = comm.sparse_allreduce %g
      {density = 0.02, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<avg>,
       name = "embedding.weight"}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  return %0 : tensor<100000x64xf32>
}

// -----

// CHECK-LABEL: func.func @started
func.func @started(%g: tensor<5000xf32>) -> tensor<5000xf32> {
  // CHECK: %[[T:.*]] = comm.sparse_start %{{.*}} {channel = 2 : i64, density = 1.000000e-01 : f64, exchange = #comm.exchange<allgather>, select = #comm.select<rows>} : tensor<5000xf32>{{$}}
  // CHECK: comm.wait %[[T]] : tensor<5000xf32>
  %t = comm.sparse_start %g
      {channel = 2 : i64, density = 0.1, select = #comm.select<rows>,
       exchange = #comm.exchange<allgather>}
      : tensor<5000xf32>
  %0 = comm.wait %t : tensor<5000xf32>
  return %0 : tensor<5000xf32>
}

// -----

// CHECK-LABEL: func.func @buffers
func.func @buffers(%g: memref<300x16xf32>) {
  // CHECK: comm.sparse_allreduce %{{.*}} {density = 5.000000e-01 : f64, exchange = #comm.exchange<hash>, select = #comm.select<rows>} : memref<300x16xf32>{{$}}
  comm.sparse_allreduce %g
      {density = 0.5, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>}
      : memref<300x16xf32>
  return
}
