// RUN: commopt-opt %s -split-input-file -verify-diagnostics

// Every verifier error of comm.sparse_allreduce.

func.func @mixed_forms(%g: tensor<4xf32>, %r: memref<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op expects grad and residual_in to be both tensors or both memrefs, but grad is 'tensor<4xf32>' and residual_in is 'memref<4xf32>'}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, memref<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @residual_type(%g: tensor<4xf32>, %r: tensor<4xf16>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op expects residual_in to have the type of grad ('tensor<4xf32>'), but it has 'tensor<4xf16>'}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @tensor_result_count(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op on tensors returns the reduced gradient and the new residual (2 results), but has 1}}
  %0 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @tensor_without_results(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op on tensors returns the reduced gradient and the new residual (2 results), but has 0}}
  comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @result_type(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op result #1 has type 'tensor<8xf32>', but the gradient has type 'tensor<4xf32>'}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @buffer_shape(%g: memref<4xf32>, %r: memref<2x2xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op expects residual_in to have the shape and element type of grad ('memref<4xf32>'), but it is 'memref<2x2xf32>'}}
  comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<4xf32>, memref<2x2xf32>
  return
}

// -----

func.func @buffer_element_type(%g: memref<4xf32>, %r: memref<4xf64>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op expects residual_in to have the shape and element type of grad ('memref<4xf32>'), but it is 'memref<4xf64>'}}
  comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<4xf32>, memref<4xf64>
  return
}

// -----

func.func @buffer_with_results(%g: memref<4xf32>, %r: memref<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op on memrefs updates its operands in place and has no results, but has 2}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<4xf32>, memref<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @integer_gradient(%g: tensor<4xi32>, %r: tensor<4xi32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op operand #0 must be ranked tensor or memref of floats, but got 'tensor<4xi32>'}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>, tensor<4xi32>
  return
}

// -----

func.func @integer_residual(%g: memref<4xf32>, %r: memref<4xi32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op operand #1 must be ranked tensor or memref of floats, but got 'memref<4xi32>'}}
  comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<4xf32>, memref<4xi32>
  return
}

// -----

func.func @density_zero(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op density must be in (0, 1], got 0}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.0, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @density_above_one(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op density must be in (0, 1], got 1.5}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 1.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @density_nan(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op density must be in (0, 1], got nan}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0x7FF8000000000000 : f64, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @missing_density(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op requires attribute 'density'}}
  %0:2 = comm.sparse_allreduce %g, %r {select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @reduce_max(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op reduce must be <sum> or <avg>, got <max>: ranks exchange selected entries and add them up}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, reduce = #comm.reduce<max>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @reduce_min(%g: memref<4xf32>, %r: memref<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op reduce must be <sum> or <avg>, got <min>}}
  comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<threshold>, exchange = #comm.exchange<hash>, reduce = #comm.reduce<min>}
      : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @chunk_select_without_chunk_exchange(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <chunk> and exchange <chunk> go together, got select <chunk> and exchange <allgather>: the chunk exchange sends the chunks that chunk selection makes all ranks agree on}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<chunk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @chunk_exchange_without_chunk_select(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op select <chunk> and exchange <chunk> go together, got select <topk> and exchange <chunk>}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<chunk>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @chunk_elements_without_chunks(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op chunk_elements applies to select <chunk> and exchange <chunk> only, got select <threshold>}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<threshold>, exchange = #comm.exchange<hash>, chunk_elements = 2}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @chunk_elements_zero(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op attribute 'chunk_elements' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<chunk>, exchange = #comm.exchange<chunk>, chunk_elements = 0}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @missing_exchange(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op requires attribute 'exchange'}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unknown_select(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::comm::SelectKind to be one of: topk, threshold, chunk}}
  // expected-error @+1 {{failed to parse Comm_SelectKindAttr parameter 'value' which is to be a `::mlir::comm::SelectKind`}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<random>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unknown_exchange(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::comm::ExchangeKind to be one of: allgather, hash, chunk}}
  // expected-error @+1 {{failed to parse Comm_ExchangeKindAttr parameter 'value' which is to be a `::mlir::comm::ExchangeKind`}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<ring>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}
