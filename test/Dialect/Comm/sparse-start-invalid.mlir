// RUN: commopt-opt %s -split-input-file -verify-diagnostics

// Verifier errors of comm.sparse_start and of the comm.wait that completes
// it. It shares comm.sparse_allreduce's checks of its operands and
// attributes (sparse-invalid.mlir); a sample of them is repeated here.

func.func @never_waited(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op token is never waited on: every comm.sparse_start needs exactly one comm.wait}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @waited_twice(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op token is waited on more than once: every comm.sparse_start needs exactly one comm.wait}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  %1:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @wait_one_result(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{'comm.wait' op expects one result per operand of its comm.sparse_start (2), but has 1}}
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @wait_result_type(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{'comm.wait' op result #1 has type 'tensor<4xf16>', but the operand started has type 'tensor<4xf32>'}}
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @wait_buffer_form_with_results(%g: memref<4xf32>, %r: memref<4xf32>) {
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<4xf32>, memref<4xf32>
  // expected-error @+1 {{'comm.wait' op waits on a collective over memrefs, which reduces them in place: expected no results, got 1}}
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @residual_type(%g: tensor<4xf32>, %r: tensor<4xf16>) {
  // expected-error @+1 {{'comm.sparse_start' op expects residual_in to have the type of grad ('tensor<4xf32>'), but it has 'tensor<4xf16>'}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf16>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @density(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op density must be in (0, 1], got 0}}
  %t = comm.sparse_start %g, %r {density = 0.0, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @reduce(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op reduce must be <sum> or <avg>, got <max>}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, reduce = #comm.reduce<max>}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @chunk_pairing(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op select <chunk> and exchange <chunk> go together, got select <chunk> and exchange <hash>}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<chunk>, exchange = #comm.exchange<hash>}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @chunk_elements(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op chunk_elements applies to select <chunk> and exchange <chunk> only, got select <topk>}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, chunk_elements = 2}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @negative_channel(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op attribute 'channel' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, channel = -1}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unknown_grid(%g: tensor<4xf32>, %r: tensor<4xf32>) {
  // expected-error @+1 {{'comm.sparse_start' op group refers to an unknown grid @nowhere}}
  %t = comm.sparse_start %g, %r {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, group = #comm.group<@nowhere, axes = [0]>}
      : tensor<4xf32>, tensor<4xf32>
  %0:2 = comm.wait %t : tensor<4xf32>, tensor<4xf32>
  return
}
