// RUN: commopt-opt %s -split-input-file -verify-diagnostics

// Every verifier error that is particular to the lossless rows exchange.

func.func @rows_with_residual(%g: tensor<8x4xf32>, %r: tensor<8x4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <rows> is lossless and takes no residual_in, but has one}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<hash>}
      : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @lossy_without_residual(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <topk> keeps what it does not send in a residual: expected residual_in}}
  %0 = comm.sparse_allreduce %g {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<hash>}
      : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @rows_with_chunk_exchange(%g: tensor<8x4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <rows> goes with exchange <allgather> or <hash>, got exchange <chunk>}}
  %0 = comm.sparse_allreduce %g {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<chunk>}
      : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @rows_with_chunk_elements(%g: tensor<8x4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op chunk_elements applies to select <chunk> and exchange <chunk> only, got select <rows>}}
  %0 = comm.sparse_allreduce %g {chunk_elements = 4 : i64, density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<hash>}
      : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @rows_two_results(%g: tensor<8x4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op on tensors without a residual returns the reduced gradient (1 result), but has 2}}
  %0:2 = comm.sparse_allreduce %g {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<hash>}
      : tensor<8x4xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @rows_of_a_scalar(%g: tensor<f32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <rows> needs a gradient with rows (rank >= 1), but grad is 'tensor<f32>'}}
  %0 = comm.sparse_allreduce %g {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<hash>}
      : tensor<f32> -> tensor<f32>
  return
}

// -----

func.func @rows_max(%g: tensor<8x4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op reduce must be <sum> or <avg>, got <max>: ranks exchange selected entries and add them up}}
  %0 = comm.sparse_allreduce %g {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<hash>, reduce = #comm.reduce<max>}
      : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @rows_start_with_residual(%g: tensor<8xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op select <rows> is lossless and takes no residual_in, but has one}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<allgather>}
      : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rows_wait_results(%g: tensor<8xf32>) {
  %t = comm.sparse_start %g {density = 0.5, select = #comm.select<rows>, exchange = #comm.exchange<allgather>}
      : tensor<8xf32>
  // expected-error @+1 {{'comm.wait' op expects one result per operand of its comm.sparse_start (1), but has 2}}
  %0:2 = comm.wait %t : tensor<8xf32>, tensor<8xf32>
  return
}
