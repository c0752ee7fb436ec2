// RUN: commopt-opt %s --allow-unregistered-dialect --comm-import-shard -split-input-file -verify-diagnostics

// Reductions comm cannot express: every one is reported, naming its
// reduction.
shard.grid @grid(shape = 2x4)

func.func @reductions(%f: tensor<4xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'shard.all_reduce' op cannot be imported: reduction 'product' has no comm equivalent (comm reduces with sum, max, min and average)}}
  %0 = shard.all_reduce %f on @grid grid_axes = [0] reduction = product : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{reduction 'bitwise_and' has no comm equivalent}}
  %1 = shard.all_reduce %i on @grid grid_axes = [0] reduction = bitwise_and : tensor<4xi32> -> tensor<4xi32>
  // expected-error @+1 {{reduction 'bitwise_or' has no comm equivalent}}
  %2 = shard.all_reduce %i on @grid grid_axes = [1] reduction = bitwise_or : tensor<4xi32> -> tensor<4xi32>
  // expected-error @+1 {{reduction 'bitwise_xor' has no comm equivalent}}
  %3 = shard.all_reduce %i on @grid grid_axes = [0, 1] reduction = bitwise_xor : tensor<4xi32> -> tensor<4xi32>
  // expected-error @+1 {{reduction 'generic' has no comm equivalent}}
  %4 = shard.all_reduce %f on @grid grid_axes = [0] reduction = generic : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @average_of_integers(%i: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'shard.all_reduce' op cannot be imported: an average of 'i32' elements has no comm equivalent (comm averages floating-point gradients only)}}
  %0 = shard.all_reduce %i on @grid grid_axes = [0] reduction = average : tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

shard.grid @grid(shape = 2x4)

func.func @buffers(%m: memref<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{'shard.all_reduce' op cannot be imported: it must reduce ranked tensors (run comm-import-shard before bufferization), but has 'memref<4xf32>' -> 'memref<4xf32>'}}
  %0 = shard.all_reduce %m on @grid grid_axes = [0] : memref<4xf32> -> memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

shard.grid @grid(shape = 2x4)

func.func @element_types(%f: tensor<4xf32>, %u: tensor<4xui32>, %c: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'shard.all_reduce' op cannot be imported: comm communicates floats and signless integers, got 'f32' -> 'index'}}
  %0 = shard.all_reduce %f on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xindex>
  // expected-error @+1 {{comm communicates floats and signless integers, got 'ui32' -> 'ui32'}}
  %1 = shard.all_reduce %u on @grid grid_axes = [0] : tensor<4xui32> -> tensor<4xui32>
  // expected-error @+1 {{comm communicates floats and signless integers, got 'complex<f32>' -> 'f32'}}
  %2 = shard.all_reduce %c on @grid grid_axes = [0] : tensor<4xcomplex<f32>> -> tensor<4xf32>
  return
}

// -----

// StableHLO: regions that are not one sum, maximum or minimum of the two
// arguments.
func.func @stablehlo_regions(%x: tensor<4xf32>) {
  // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: its reduction region must combine its two arguments with one stablehlo.add, stablehlo.maximum or stablehlo.minimum and return the result, but it combines them with 'stablehlo.multiply'}}
  %0 = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = "stablehlo.multiply"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%p) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{but its region has 2 arguments and 3 ops}}
  %1 = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %n = "stablehlo.negate"(%s) : (tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%n) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{but its 'stablehlo.add' is not applied to both arguments and returned}}
  %2 = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{but its 'stablehlo.maximum' is not applied to both arguments and returned}}
  %3 = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%a) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{but it has no single-block region}}
  %4 = "stablehlo.all_reduce"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// StableHLO: replica groups other than one group of all replicas.
module attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func @stablehlo_groups(%x: tensor<4xf32>) {
    // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: replica_groups other than one group of all replicas are not imported, got dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}}
    %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    // Two of the module's four replicas.
    // expected-error @+1 {{replica_groups other than one group of all replicas are not imported, got dense<[[0, 1]]> : tensor<1x2xi64>}}
    %1 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    // Not each of 0..3 once.
    // expected-error @+1 {{replica_groups other than one group of all replicas are not imported, got dense<[[0, 1, 1, 4]]> : tensor<1x4xi64>}}
    %2 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 1, 4]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: replica_groups must be a 2-D dense integer attribute, got [0, 1, 2, 3]}}
    %3 = "stablehlo.all_reduce"(%x) <{replica_groups = [0, 1, 2, 3]}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// Without global device ids, the groups of a module with several
// partitions hold the replicas of one partition.
module attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 4 : i32} {
  func.func @stablehlo_partitions(%x: tensor<4xf32>) {
    // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: the module has 2 partitions, and replica_groups without use_global_device_ids group the replicas of each partition}}
    %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return
  }
}

// -----

// StableHLO: operands and results that do not pair up.
func.func @stablehlo_types(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: expected one result per operand and at least one, got 2 operands and 1 results}}
  %0 = "stablehlo.all_reduce"(%x, %y) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'stablehlo.all_reduce' op cannot be imported: its operand and result shapes differ: 'tensor<4xf32>' -> 'tensor<8xf32>'}}
  %1 = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<8xf32>
  return
}
