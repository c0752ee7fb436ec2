// RUN: commopt-opt %s -split-input-file -verify-diagnostics \
// RUN:   --comm-estimate="mode=steady report=none"

// Steps that comm-estimate cannot simulate: the error names the pass and
// the function, or is located at the op.

// The steady state repeats compute: a step without any has no period.
// expected-error @+1 {{comm-estimate: cannot simulate @empty: computeTasks: steady state needs compute tasks}}
func.func @empty() {
  return
}

// -----

// Layer 1's gradient, but no forward step of layer 1 to wait for it.
// expected-error @+1 {{comm-estimate: cannot simulate @missing_forward: collectives[0].layers: layer 1 has no forward task}}
func.func @missing_forward() -> tensor<4xf32> {
  comm.compute () {cost_us = 1.0 : f64, layer = 0 : i64, phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 1.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4xf32>
  %r = comm.allreduce %g : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// gradientflow-64 has channels 0 and 1.
func.func @unknown_channel(%g: tensor<4xf32>) -> tensor<4xf32> {
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  // expected-error @+1 {{'comm.start' op cannot be estimated: channel 2 is not one of the cluster's 2 channel(s)}}
  %t = comm.start %g {channel = 2 : i64} : tensor<4xf32>
  %r = comm.wait %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The step is the function's entry block; a wait elsewhere has no place in
// it.
func.func @wait_in_other_block(%g: tensor<4xf32>) -> tensor<4xf32> {
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  // expected-error @+1 {{'comm.start' op cannot be estimated: its comm.wait is in another block}}
  %t = comm.start %g : tensor<4xf32>
  cf.br ^next
^next:
  %r = comm.wait %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A collective in a loop's body runs once per iteration; the step model
// prices the function's body only, so it refuses rather than leave it out.
func.func @allreduce_in_loop(%g: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{'comm.allreduce' op cannot be estimated: it is in a nested region (a loop's body or a branch), and the step model prices the collectives of the function's body only}}
    comm.allreduce %g : memref<4xf32>
  }
  return
}

// -----

// A transport the cluster (the default preset, NCCL only) does not have
// cannot be priced.
func.func @transport_not_in_the_cluster(%g: tensor<1000xf32>) -> tensor<1000xf32> {
  // expected-error @+1 {{its transport 'mpi' is not a backend of cluster 'gradientflow-64', which has 'nccl': describe the second backend as the cluster's `alternate` (docs/Cluster.md), or leave `transport` out}}
  %0 = comm.allreduce %g {transport = #comm.transport<mpi>}
      : tensor<1000xf32> -> tensor<1000xf32>
  return %0 : tensor<1000xf32>
}
