// RUN: commopt-opt %s | FileCheck %s
// RUN: commopt-opt %s | commopt-opt | FileCheck %s
// RUN: commopt-opt %s --mlir-print-op-generic | commopt-opt | FileCheck %s
// RUN: commopt-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEEP

// Round trips of comm.sparse_start and its comm.wait, in tensor form (the
// wait yields the reduced gradient and the new residual) and in buffer form
// (the wait yields nothing).

// CHECK-LABEL: func.func @tensor_form
// CHECK: %[[T:.*]] = comm.sparse_start %{{.*}}, %{{.*}} {channel = 1 : i64, density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", priority = 7 : i64, reduce = #comm.reduce<avg>, select = #comm.select<threshold>} : tensor<1000x2048xf32>, tensor<1000x2048xf32>{{$}}
// CHECK: %[[R:.*]]:2 = comm.wait %[[T]] : tensor<1000x2048xf32>, tensor<1000x2048xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @tensor_form(%g: tensor<1000x2048xf32>, %r: tensor<1000x2048xf32>)
    -> (tensor<1000x2048xf32>, tensor<1000x2048xf32>) {
  %t = comm.sparse_start %g, %r
      {density = 1.000000e-03 : f64, select = #comm.select<threshold>,
       exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>,
       name = "fc.weight", channel = 1, priority = 7}
      : tensor<1000x2048xf32>, tensor<1000x2048xf32>
  %reduced, %residual = comm.wait %t
      : tensor<1000x2048xf32>, tensor<1000x2048xf32>
  return %reduced, %residual : tensor<1000x2048xf32>, tensor<1000x2048xf32>
}

// Channel 0 is the default and is not printed; chunk exchange with its size.
// CHECK-LABEL: func.func @buffer_form
// CHECK: %[[T:.*]] = comm.sparse_start %{{.*}}, %{{.*}} {chunk_elements = 64 : i64, density = 1.000000e-01 : f64, exchange = #comm.exchange<chunk>, select = #comm.select<chunk>} : memref<1024xf32>, memref<1024xf32, strided<[1], offset: ?>>{{$}}
// CHECK: comm.wait %[[T]]{{$}}
// KEEP-LABEL: func.func @buffer_form
// KEEP: comm.sparse_start
// KEEP: comm.wait
func.func @buffer_form(%g: memref<1024xf32>,
                       %r: memref<1024xf32, strided<[1], offset: ?>>) {
  %t = comm.sparse_start %g, %r
      {density = 0.1, select = #comm.select<chunk>,
       exchange = #comm.exchange<chunk>, chunk_elements = 64}
      : memref<1024xf32>, memref<1024xf32, strided<[1], offset: ?>>
  comm.wait %t
  return
}

// Among the ranks of a process group.
shard.grid @grid(shape = 2x2)
// CHECK-LABEL: func.func @group
// CHECK: comm.sparse_start {{.*}}group = #comm.group<@grid, axes = [1]>
func.func @group(%g: tensor<64xf32>, %r: tensor<64xf32>) -> tensor<64xf32> {
  %t = comm.sparse_start %g, %r
      {density = 0.25, select = #comm.select<topk>,
       exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [1]>}
      : tensor<64xf32>, tensor<64xf32>
  %0:2 = comm.wait %t : tensor<64xf32>, tensor<64xf32>
  return %0#0 : tensor<64xf32>
}
