// A cluster whose figures are valid one by one (beta 1e294 s/B) but whose
// collectives' times add up past the largest double (found by
// commopt-cluster-fuzzer; the input is the fuzzer's reproducer, stray fields
// and all). The simulator's clock would stop at infinity and leave the rest
// of the step unsimulated: the estimate said "iteration 0.000 us". It is an
// error naming the step instead, in one step and in the steady state.

// RUN: not commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-time-overflow.json fusion=none estimate=step report=none" 2>&1 | FileCheck %s --check-prefix=STEP
// RUN: not commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-time-overflow.json fusion=none estimate=steady report=none" 2>&1 | FileCheck %s --check-prefix=STEADY
// RUN: not commopt-translate %s --export-timeline --timeline-cluster=%S/Inputs/cluster-time-overflow.json 2>&1 | FileCheck %s --check-prefix=TIMELINE

// STEP: error: comm-estimate: cannot simulate @train_step: step: its compute tasks and collectives take more than 8.988466e+307 us in all over 1 iteration(s), too long to simulate
// STEADY: error: comm-estimate: cannot simulate @train_step: step: its compute tasks and collectives take more than 8.988466e+307 us in all over 7 iteration(s), too long to simulate
// TIMELINE: error: {{.*}}too long to simulate

// Two gradients of 64 MiB: each allreduce takes about 1e308 us, both more
// than a double holds.
module attributes {comm.model = "two-layers"} {
  func.func @train_step() -> (tensor<16777216xf32>, tensor<16777216xf32>) {
    comm.compute() {cost_us = 1.000000e+02 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
    %0 = comm.compute() {cost_us = 5.000000e+01 : f64, layer = 1 : i64, name = "fc2", phase = #comm.phase<backward>} : () -> tensor<16777216xf32>
    %1 = comm.allreduce %0 {name = "fc2.weight", reduce = #comm.reduce<avg>} : tensor<16777216xf32> -> tensor<16777216xf32>
    %2 = comm.compute() {cost_us = 5.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> tensor<16777216xf32>
    %3 = comm.allreduce %2 {name = "fc1.weight", reduce = #comm.reduce<avg>} : tensor<16777216xf32> -> tensor<16777216xf32>
    return %1, %3 : tensor<16777216xf32>, tensor<16777216xf32>
  }
}
