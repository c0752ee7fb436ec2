// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/piecewise-4.json" -o /dev/null 2>&1 | FileCheck %s

// A cluster whose level has figures by collective size (a calibrated
// piecewise fit): each collective is priced with its size's. A ring
// allreduce over 4 ranks costs 6 alpha + 3/2 n beta:
//   small, 64 KiB (the regime, up to 65536 B inclusive):
//     6 * 100 + 1.5 * 65536 * 1e-4     =   609.830 us
//   large, 1 MiB (the level's own figures):
//     6 * 10 + 1.5 * 1048576 * 1e-3    =  1632.864 us
// One line for both would price one of them far off.

// CHECK: step                 2242.694 us
// CHECK: large                 1048576        0         609.830        2242.694        1632.864
// CHECK: small                   65536        0           0.000         609.830         609.830

func.func @step(%small: tensor<16384xf32>, %large: tensor<262144xf32>)
    -> (tensor<16384xf32>, tensor<262144xf32>) {
  %0 = comm.allreduce %small {name = "small"}
      : tensor<16384xf32> -> tensor<16384xf32>
  %1 = comm.allreduce %large {name = "large"}
      : tensor<262144xf32> -> tensor<262144xf32>
  return %0, %1 : tensor<16384xf32>, tensor<262144xf32>
}
