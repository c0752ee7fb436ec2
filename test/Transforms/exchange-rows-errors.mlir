// RUN: commopt-opt %s -split-input-file -verify-diagnostics --comm-exchange-rows="cluster=%S/Inputs/flat-4.json"
// RUN: not commopt-opt %s --comm-exchange-rows="cluster=%S/Inputs/bad-cluster.json" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-opt %s --comm-exchange-rows="device=no-such-device" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not commopt-opt %s --comm-exchange-rows="exchange=chunk" 2>&1 | FileCheck %s --check-prefix=CHOICE

// CLUSTER: error: comm-exchange-rows:
// DEVICE: comm-exchange-rows: option 'device':
// CHOICE: error: comm-exchange-rows: option 'exchange': unknown value 'chunk'; expected one of auto, allgather, hash, dense

// A malformed comm.rows_touched is an error naming the op.
func.func @not_an_array(%g: tensor<100x4xf32>) -> tensor<100x4xf32> {
  // expected-error @+1 {{'comm.allreduce' op comm.rows_touched must be an array<f64> of nondecreasing fractions in (0, 1], one per power of two of ranks, got [1.000000e-01]}}
  %0 = comm.allreduce %g {comm.rows_touched = [0.1]} : tensor<100x4xf32> -> tensor<100x4xf32>
  return %0 : tensor<100x4xf32>
}

// -----

func.func @decreasing(%g: tensor<100x4xf32>) -> tensor<100x4xf32> {
  // expected-error @+1 {{'comm.allreduce' op comm.rows_touched must be an array<f64> of nondecreasing fractions in (0, 1], one per power of two of ranks, got array<f64: 2.000000e-01, 1.000000e-01>}}
  %0 = comm.allreduce %g {comm.rows_touched = array<f64: 0.2, 0.1>} : tensor<100x4xf32> -> tensor<100x4xf32>
  return %0 : tensor<100x4xf32>
}

// -----

func.func @out_of_range(%g: tensor<100x4xf32>) -> tensor<100x4xf32> {
  // expected-error @+1 {{'comm.allreduce' op comm.rows_touched must be an array<f64> of nondecreasing fractions in (0, 1], one per power of two of ranks, got array<f64: 0.000000e+00>}}
  %0 = comm.allreduce %g {comm.rows_touched = array<f64: 0.0>} : tensor<100x4xf32> -> tensor<100x4xf32>
  return %0 : tensor<100x4xf32>
}

// -----

func.func @empty(%g: tensor<100x4xf32>) -> tensor<100x4xf32> {
  // expected-error @+1 {{'comm.allreduce' op comm.rows_touched must be an array<f64> of nondecreasing fractions in (0, 1], one per power of two of ranks, got array<f64>}}
  %0 = comm.allreduce %g {comm.rows_touched = array<f64>} : tensor<100x4xf32> -> tensor<100x4xf32>
  return %0 : tensor<100x4xf32>
}
