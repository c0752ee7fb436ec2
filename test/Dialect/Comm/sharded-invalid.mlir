// RUN: commopt-opt %s -split-input-file -verify-diagnostics

// Every verifier error of the sharded collectives.

func.func @wrong_shard_size(%g: tensor<10xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op shard of type 'tensor<2xf32>' has 2 elements, but a flat tensor of 10 elements has shards of ceil(10 / 4) = 3}}
  %s = comm.reduce_scatter %g {shards = 4} : tensor<10xf32> -> tensor<2xf32>
  return
}

// -----

func.func @wrong_gathered_size(%p: tensor<3xf32>) {
  // expected-error @+1 {{'comm.all_gather' op shard of type 'tensor<3xf32>' has 3 elements, but a flat tensor of 16 elements has shards of ceil(16 / 4) = 4}}
  %w = comm.all_gather %p {shards = 4} : tensor<3xf32> -> tensor<16xf32>
  return
}

// -----

func.func @no_shards(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op requires attribute 'shards'}}
  %s = comm.reduce_scatter %g {} : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

func.func @zero_shards(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.all_gather' op attribute 'shards' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %s = comm.all_gather %g {shards = 0} : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @element_types_differ(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op expects one element type, but the shard has 'f16' and whole tensor #0 has 'f32'}}
  %s = comm.reduce_scatter %g {shards = 4} : tensor<8xf32> -> tensor<2xf16>
  return
}

// -----

func.func @tensor_without_result(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op on tensors returns its shard and takes no buffers to write into}}
  comm.reduce_scatter %g {shards = 4} : tensor<8xf32>
  return
}

// -----

func.func @memref_without_output(%g: memref<3xf32>) {
  // expected-error @+1 {{'comm.all_gather' op on memrefs writes its whole tensors `into` buffers and has no results}}
  comm.all_gather %g {shards = 4} : memref<3xf32>
  return
}

// -----

func.func @memref_with_result(%g: memref<8xf32>, %s: memref<2xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op on memrefs writes its shard `into` buffers and has no results}}
  %r = comm.reduce_scatter %g into %s {shards = 4} : memref<8xf32> into memref<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @avg_of_integers(%g: tensor<8xi32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op reduce <avg> needs a floating-point element type, but the gradients are 'i32'}}
  %s = comm.reduce_scatter %g {shards = 4, reduce = #comm.reduce<avg>} : tensor<8xi32> -> tensor<2xi32>
  return
}

// -----

func.func @wire_not_narrower(%g: tensor<8xf16>) {
  // expected-error @+1 {{'comm.all_gather' op wire type 'f16' must be narrower than the element type 'f16'}}
  %w = comm.all_gather %g {shards = 4, wire = f16} : tensor<8xf16> -> tensor<32xf16>
  return
}

// -----

func.func @bad_prescale(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op prescale must be a positive finite number, got -1}}
  %s = comm.reduce_scatter %g {shards = 4, wire = f16, prescale = -1.0} : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @shards_are_not_the_group(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op has 2 shards, but its group has 4 ranks}}
  %s = comm.reduce_scatter %g {shards = 2, group = #comm.group<@grid, axes = [1]>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unknown_grid(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.all_gather' op group refers to an unknown grid @nowhere}}
  %w = comm.all_gather %g {shards = 2, group = #comm.group<@nowhere, axes = [0]>} : tensor<8xf32> -> tensor<16xf32>
  return
}

// -----

func.func @bad_name(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op name '...' is not valid UTF-8 at byte 0}}
  %s = comm.reduce_scatter %g {shards = 4, names = ["\FF"]} : tensor<8xf32> -> tensor<2xf32>
  return
}

// -----

func.func @names_for_other_tensors(%w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op has 1 names for 2 whole tensors}}
  %s = comm.reduce_scatter %w, %b {shards = 4, names = ["w"]} : tensor<8xf32>, tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @gradients_of_two_types(%w: tensor<8xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'comm.reduce_scatter' op expects all gradients to share one element type, but operand #1 has 'f16' and operand #0 has 'f32'}}
  %s = comm.reduce_scatter %w, %b {shards = 4} : tensor<8xf32>, tensor<4xf16> -> tensor<3xf32>
  return
}

// -----

func.func @outputs_of_two_types(%s: tensor<3xf32>) {
  // expected-error @+1 {{'comm.all_gather' op expects one element type, but the shard has 'f32' and whole tensor #1 has 'f16'}}
  %p:2 = comm.all_gather %s {shards = 4} : tensor<3xf32> -> tensor<8xf32>, tensor<4xf16>
  return
}

// -----

func.func @tensor_into_memref(%g: tensor<8xf32>, %s: memref<2xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter' op on tensors returns its shard and takes no buffers to write into}}
  comm.reduce_scatter %g into %s {shards = 4} : tensor<8xf32> into memref<2xf32>
  return
}

// -----

func.func @started_wrong_shard(%g: tensor<10xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter_start' op shard of type 'tensor<2xf32>' has 2 elements, but a flat tensor of 10 elements has shards of ceil(10 / 4) = 3}}
  %t = comm.reduce_scatter_start %g {shards = 4} : tensor<10xf32>
  %s = comm.wait %t : tensor<2xf32>
  return
}

// -----

func.func @started_two_shards(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter_start' op expects its comm.wait to return the shard, one tensor, but it returns 2}}
  %t = comm.reduce_scatter_start %g {shards = 4} : tensor<8xf32>
  %s:2 = comm.wait %t : tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @started_never_waited(%g: tensor<8xf32>) {
  // expected-error @+1 {{'comm.all_gather_start' op token is never waited on: every comm.all_gather_start needs exactly one comm.wait}}
  %t = comm.all_gather_start %g {shards = 4} : tensor<8xf32>
  return
}

// -----

func.func @started_gathered_wrong(%s: tensor<3xf32>) {
  // expected-error @+1 {{'comm.all_gather_start' op shard of type 'tensor<3xf32>' has 3 elements, but a flat tensor of 16 elements has shards of ceil(16 / 4) = 4}}
  %t = comm.all_gather_start %s {shards = 4} : tensor<3xf32>
  %p = comm.wait %t : tensor<16xf32>
  return
}

// -----

func.func @started_memref_without_shard(%g: memref<8xf32>) {
  // expected-error @+1 {{'comm.reduce_scatter_start' op on memrefs writes its shard `into` buffers and has no results}}
  %t = comm.reduce_scatter_start %g {shards = 4} : memref<8xf32>
  comm.wait %t
  return
}
