// RUN: commopt-opt %s --comm-import-shard -split-input-file -verify-diagnostics

// Sharded collectives that comm's row-major shards cannot express: each is
// reported and the module is left as it was.
shard.grid @grid(shape = 2x4)

func.func @second_axis(%g: tensor<2x8xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'shard.reduce_scatter' op cannot be imported: it shards tensor axis 1 of 'tensor<2x8xf32>', and comm shards the tensor in row-major order, which is sharding along an axis only where every dimension before it is 1 (transpose the axis to the front first)}}
  %0 = shard.reduce_scatter %g on @grid grid_axes = [1] reduction = sum scatter_axis = 1 : tensor<2x8xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

shard.grid @grid(shape = 2x4)

func.func @unsorted_axes(%s: tensor<1x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'shard.all_gather' op cannot be imported: its grid_axes [1, 0] are not in ascending order, and its shards follow that order, where comm's groups order their ranks by ascending axes}}
  %0 = shard.all_gather %s on @grid grid_axes = [1, 0] gather_axis = 0 : tensor<1x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

shard.grid @grid(shape = 2x4)

func.func @product(%g: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'shard.reduce_scatter' op cannot be imported: reduction 'product' has no comm equivalent (comm reduces with sum, max, min and average)}}
  %0 = shard.reduce_scatter %g on @grid grid_axes = [1] reduction = product scatter_axis = 0 : tensor<8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

shard.grid @grid(shape = 2x?)

func.func @dynamic_grid(%g: tensor<8xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'shard.reduce_scatter' op cannot be imported: comm shards tensors of static shape, got 'tensor<8xf32>' and 'tensor<?xf32>'}}
  %0 = shard.reduce_scatter %g on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<8xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

shard.grid @grid(shape = 4)

func.func @average_of_integers(%g: tensor<8xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'shard.reduce_scatter' op cannot be imported: an average of 'i32' elements has no comm equivalent (comm averages floating-point gradients only)}}
  %0 = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = average scatter_axis = 0 : tensor<8xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

shard.grid @grid(shape = 4)

func.func @index_elements(%g: tensor<8xindex>) -> tensor<2xindex> {
  // expected-error @+1 {{'shard.reduce_scatter' op cannot be imported: comm communicates floats and signless integers, got 'index' -> 'index'}}
  %0 = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<8xindex> -> tensor<2xindex>
  return %0 : tensor<2xindex>
}

// -----

// Each process's place in the grid comes from its rank through the grid's
// shape, which must be static for shard.all_slice.
shard.grid @dynamic(shape = 2x?)

func.func @dynamic_grid(%p: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.all_slice' op cannot be imported: grid @dynamic has a dynamic size, and comm finds each process's place in it from its rank through the grid's shape}}
  %0 = shard.all_slice %p on @dynamic grid_axes = [0] slice_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
