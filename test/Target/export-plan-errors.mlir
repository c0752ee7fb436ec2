// RUN: commopt-translate %s --split-input-file --export-plan --verify-diagnostics

// A step without an estimate, in a module that records no cluster, does not
// know the world size it was planned for.
// expected-error @+1 {{export-plan: @step records no estimate and its module no cluster, so the plan would not know its world size: plan it with comm-optimize cluster=... (or run comm-record-cluster), or estimate it}}
func.func @step() -> tensor<4xf32> {
  %g = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
  %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The module's recorded cluster gives the world size only when it can be
// read.
// expected-error @+1 {{export-plan: the module's cluster ('/nonexistent/cluster.json', its comm.cluster) gives the plan's world size but cannot be read}}
module attributes {comm.cluster = "/nonexistent/cluster.json"} {
  func.func @step() -> tensor<4xf32> {
    %g = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
    %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{export-plan: no function of the module holds a collective}}
module {
  func.func @step() {
    return
  }
}

// -----

// expected-error @+1 {{export-plan: several functions hold collectives (@a, @b); name one with --plan-function}}
module {
  func.func @a(%g: tensor<4xf32>) -> tensor<4xf32> {
    %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @b(%g: tensor<4xf32>) -> tensor<4xf32> {
    %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

func.func @step(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  // expected-error @+1 {{export-plan: the collective names 0 parameter(s) for 1 gradient(s)}}
  %r = comm.allreduce %a : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{export-plan: parameter 'w' is communicated twice (elements from 0 on)}}
func.func @step(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %r = comm.allreduce %a {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  %s = comm.allreduce %a {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{export-plan: parameter 'w' is not communicated whole (elements from 2 on)}}
func.func @step(%a: tensor<6xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %p0 = tensor.extract_slice %a[0] [2] [1] : tensor<6xf32> to tensor<2xf32>
  %p2 = tensor.extract_slice %a[4] [2] [1] : tensor<6xf32> to tensor<2xf32>
  %r = comm.allreduce %p0 {name = "w"} : tensor<2xf32> -> tensor<2xf32>
  %s = comm.allreduce %p2 {name = "w"} : tensor<2xf32> -> tensor<2xf32>
  return %r, %s : tensor<2xf32>, tensor<2xf32>
}

// -----

// expected-error @+1 {{export-plan: parameter 'w' has 6 elements but the plan communicates 4}}
func.func @step(%a: tensor<6xf32>) -> tensor<4xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %p0 = tensor.extract_slice %a[0] [4] [1] : tensor<6xf32> to tensor<4xf32>
  %r = comm.allreduce %p0 {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @step(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>)
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %r = comm.allreduce %a {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{export-plan: parameter 'w' appears with two shapes or element types}}
  %s = comm.allreduce %b {name = "w"} : tensor<2x2xf32> -> tensor<2x2xf32>
  return %r, %s : tensor<4xf32>, tensor<2x2xf32>
}

// -----

func.func @step(%a: tensor<?xf32>) -> tensor<?xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  // expected-error @+1 {{export-plan: the gradient of 'w' has a dynamic shape 'tensor<?xf32>'}}
  %r = comm.allreduce %a {name = "w"} : tensor<?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

func.func @step(%a: tensor<4xi32>) -> tensor<4xi32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  // expected-error @+1 {{export-plan: the gradient of 'steps' has element type 'i32'; plans carry f32, f64, f16 and bf16}}
  %r = comm.allreduce %a {name = "steps"} : tensor<4xi32> -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @step(%a: tensor<2x3xf32>) -> tensor<2xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %p = tensor.extract_slice %a[0, 0] [1, 2] [1, 1] : tensor<2x3xf32> to tensor<2xf32>
  // expected-error @+1 {{export-plan: the gradient of 'w' is a slice that is not a static, contiguous piece of the flattened parameter}}
  %r = comm.allreduce %p {name = "w"} : tensor<2xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// expected-error @+1 {{export-plan: comm.sparse_warmup must be {steps = N : i64, start_density = D : f64} with N > 0 and D in (0, 1], got {start_density = 2.500000e-01 : f64, steps = 0 : i64}}}
module attributes {comm.sparse_warmup = {steps = 0 : i64, start_density = 0.25 : f64}} {
func.func @step(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %r = comm.allreduce %a {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{export-plan: comm.sparse_warmup must be {steps = N : i64, start_density = D : f64} with N > 0 and D in (0, 1], got 3 : i64}}
module attributes {comm.sparse_warmup = 3 : i64} {
func.func @step(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64, step_us = 1.0 : f64}} {
  %r = comm.allreduce %a {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
}
