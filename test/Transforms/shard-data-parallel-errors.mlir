// RUN: commopt-opt %s -split-input-file -verify-diagnostics --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json"
// RUN: not commopt-opt %s --comm-shard-data-parallel="bucket-cap-mb=0" 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: not commopt-opt %s --comm-shard-data-parallel="bucket-cap-mb=inf" 2>&1 | FileCheck %s --check-prefix=INF
// RUN: not commopt-opt %s --comm-shard-data-parallel="prefetch=-2" 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not commopt-opt %s --comm-shard-data-parallel="memory-limit-mb=-1" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not commopt-opt %s --comm-shard-data-parallel="stage=zero3" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not commopt-opt %s --comm-shard-data-parallel="stage=none" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not commopt-opt %s --comm-shard-data-parallel="device=abacus" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not commopt-opt %s -split-input-file --comm-shard-data-parallel="cluster=nowhere-42" 2>&1 | FileCheck %s --check-prefix=CLUSTER

// CAP: error: comm-shard-data-parallel: option 'bucket-cap-mb': expected a positive finite size in MiB, got 0
// INF: error: comm-shard-data-parallel: option 'bucket-cap-mb': expected a positive finite size in MiB, got INF
// PREFETCH: error: comm-shard-data-parallel: option 'prefetch': expected -1 (by cost) or a unit count of 0 or more, got -2
// LIMIT: error: comm-shard-data-parallel: option 'memory-limit-mb': expected a non-negative finite size in MiB (0: no limit), got -1
// STAGE: error: comm-shard-data-parallel: option 'stage': unknown value '{{zero3|none}}'; expected one of grad, full
// DEVICE: error: comm-shard-data-parallel: option 'device': {{.*}}abacus
// CLUSTER: error: comm-shard-data-parallel: cluster 'nowhere-42': {{.*}}nowhere-42

// The planning passes ran already on some gradients: a bucket is not the
// imported form.
func.func @fused() -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g:3 = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // expected-error @+1 {{comm-shard-data-parallel: expects the step as imported, one dense comm.allreduce in tensor form per gradient among all ranks; shard it before other planning passes than comm-lower-precision}}
  %r:2 = comm.fused_allreduce %g#0, %g#1 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  %s = comm.allreduce %g#2 : tensor<8xf32> -> tensor<8xf32>
  return %r#0, %r#1, %s : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A process group's gradients are sharded among the group's ranks, which
// a plan for all ranks does not express.
shard.grid @grid(shape = 2x2)
func.func @grouped() -> tensor<8xf32> {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<8xf32>
  // expected-error @+1 {{comm-shard-data-parallel: expects the step as imported}}
  %r = comm.allreduce %g {group = #comm.group<@grid, axes = [1]>} : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @nested(%c: i1) -> tensor<8xf32> {
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<8xf32>
  %r = scf.if %c -> tensor<8xf32> {
    // expected-error @+1 {{comm-shard-data-parallel: a collective in a nested region cannot be sharded}}
    %a = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
    scf.yield %a : tensor<8xf32>
  } else {
    scf.yield %g : tensor<8xf32>
  }
  %s = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @argument_gradient(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{comm-shard-data-parallel: its gradient is not produced by a layer's backward comm.compute (phase backward, with a layer)}}
  %r = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @dynamic(%n: index) -> tensor<?xf32> {
  %g = tensor.empty(%n) : tensor<?xf32>
  // expected-error @+1 {{comm-shard-data-parallel: a gradient of dynamic shape cannot be sharded}}
  %r = comm.allreduce %g : tensor<?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

func.func @used_elsewhere() -> tensor<8xf32> {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<8xf32>
  // expected-error @+1 {{comm-shard-data-parallel: its reduced gradient is used by arith.addf, which a sharded step cannot give the whole reduced gradient (only the optimizer step and the return may use it)}}
  %r = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  %d = arith.addf %r, %r : tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

func.func @two_optimizers() -> () {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g:2 = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> (tensor<8xf32>, tensor<8xf32>)
  %a = comm.allreduce %g#0 : tensor<8xf32> -> tensor<8xf32>
  %b = comm.allreduce %g#1 : tensor<8xf32> -> tensor<8xf32>
  comm.compute (%a) {cost_us = 1.0 : f64, phase = #comm.phase<optimizer>} : (tensor<8xf32>) -> ()
  // expected-error @+1 {{comm-shard-data-parallel: a second optimizer step takes reduced gradients; a sharded step updates its shards in one}}
  comm.compute (%b) {cost_us = 1.0 : f64, phase = #comm.phase<optimizer>} : (tensor<8xf32>) -> ()
  return
}

// -----

// expected-error @+1 {{comm-shard-data-parallel: the function is called, and a sharded step takes and returns shards instead of its arguments and results}}
func.func @called() -> tensor<8xf32> {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<8xf32>
  %r = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @caller() -> tensor<8xf32> {
  %r = func.call @called() : () -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @forward_after_backward() -> tensor<8xf32> {
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<8xf32>
  // expected-error @+1 {{comm-shard-data-parallel: this forward step of layer 0 comes after the layer's backward step, which would use parameters not yet gathered}}
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %r = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
