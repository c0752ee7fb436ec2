// RUN: not commopt-translate %s --export-plan 2>&1 | FileCheck %s

// An error about the whole step names the function and quotes its first
// line; it does not print the function's body or the module ("see current
// operation").

// CHECK:     error: export-plan: @train_step records no estimate and its module no cluster
// CHECK-NEXT: func.func @train_step()
// CHECK-NOT: see current operation
// CHECK-NOT: comm.allreduce
// CHECK-NOT: comm.compute

module attributes {comm.model = "tiny"} {
  func.func @train_step() -> (tensor<4xf32>, tensor<8xf32>) {
    %g1 = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
    %r1 = comm.allreduce %g1 {name = "w1"} : tensor<4xf32> -> tensor<4xf32>
    %g2 = comm.compute () {cost_us = 1.0} : () -> tensor<8xf32>
    %r2 = comm.allreduce %g2 {name = "w2"} : tensor<8xf32> -> tensor<8xf32>
    return %r1, %r2 : tensor<4xf32>, tensor<8xf32>
  }
}
