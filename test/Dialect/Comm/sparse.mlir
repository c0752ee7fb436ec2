// RUN: commopt-opt %s | FileCheck %s
// RUN: commopt-opt %s | commopt-opt | FileCheck %s
// RUN: commopt-opt %s --mlir-print-op-generic | commopt-opt | FileCheck %s

// Round trips of comm.sparse_allreduce, in tensor and in buffer form, with
// every selection and exchange.

// CHECK-LABEL: func.func @tensor_form
func.func @tensor_form(%g: tensor<1000x2048xf32>, %r: tensor<1000x2048xf32>)
    -> (tensor<1000x2048xf32>, tensor<1000x2048xf32>) {
  // CHECK: %{{.*}}:2 = comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", reduce = #comm.reduce<avg>, select = #comm.select<threshold>} : tensor<1000x2048xf32>, tensor<1000x2048xf32> -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
  %reduced, %residual = comm.sparse_allreduce %g, %r
      {density = 1.000000e-03 : f64, select = #comm.select<threshold>,
       exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>,
       name = "fc.weight"}
      : tensor<1000x2048xf32>, tensor<1000x2048xf32>
      -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
  return %reduced, %residual : tensor<1000x2048xf32>, tensor<1000x2048xf32>
}

// CHECK-LABEL: func.func @schemes
func.func @schemes(%g: tensor<64xf16>, %r: tensor<64xf16>,
                   %h: tensor<4x4xbf16>, %s: tensor<4x4xbf16>,
                   %x: tensor<?xf64>, %y: tensor<?xf64>) {
  // The default reduction, sum, is not printed.
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 2.500000e-01 : f64, exchange = #comm.exchange<hash>, select = #comm.select<topk>} : tensor<64xf16>, tensor<64xf16> -> tensor<64xf16>, tensor<64xf16>
  %0:2 = comm.sparse_allreduce %g, %r
      {density = 0.25, select = #comm.select<topk>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<sum>}
      : tensor<64xf16>, tensor<64xf16> -> tensor<64xf16>, tensor<64xf16>
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {chunk_elements = 4 : i64, density = 5.000000e-01 : f64, exchange = #comm.exchange<chunk>, select = #comm.select<chunk>} : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>, tensor<4x4xbf16>
  %1:2 = comm.sparse_allreduce %h, %s
      {density = 0.5, select = #comm.select<chunk>,
       exchange = #comm.exchange<chunk>, chunk_elements = 4}
      : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>, tensor<4x4xbf16>
  // Chunks without chunk_elements take the default size; density 1 sends
  // everything.
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 1.000000e+00 : f64, exchange = #comm.exchange<chunk>, reduce = #comm.reduce<avg>, select = #comm.select<chunk>} : tensor<?xf64>, tensor<?xf64> -> tensor<?xf64>, tensor<?xf64>
  %2:2 = comm.sparse_allreduce %x, %y
      {density = 1.0, select = #comm.select<chunk>,
       exchange = #comm.exchange<chunk>, reduce = #comm.reduce<avg>}
      : tensor<?xf64>, tensor<?xf64> -> tensor<?xf64>, tensor<?xf64>
  return
}

// CHECK-LABEL: func.func @buffer_form
func.func @buffer_form(%g: memref<1024xf32>, %r: memref<1024xf32>,
                       %s: memref<1024xf32, strided<[1], offset: ?>>) {
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 1.000000e-02 : f64, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<1024xf32>, memref<1024xf32>{{$}}
  comm.sparse_allreduce %g, %r
      {density = 0.01, select = #comm.select<topk>,
       exchange = #comm.exchange<allgather>}
      : memref<1024xf32>, memref<1024xf32>
  // In buffer form the two buffers may have different layouts.
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 1.000000e-02 : f64, exchange = #comm.exchange<hash>, select = #comm.select<threshold>} : memref<1024xf32>, memref<1024xf32, strided<[1], offset: ?>>
  comm.sparse_allreduce %g, %s
      {density = 0.01, select = #comm.select<threshold>,
       exchange = #comm.exchange<hash>}
      : memref<1024xf32>, memref<1024xf32, strided<[1], offset: ?>>
  return
}

// A sparse collective communicates: it survives even when its results are
// unused.
// RUN: commopt-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEEP
// KEEP-LABEL: func.func @schemes
// KEEP-COUNT-3: comm.sparse_allreduce
