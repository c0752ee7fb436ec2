// A cluster description declared any channel count up to 2^32 - 1, while
// the runtime runs collectives on 64 channels at most. The simulator keeps
// state for every declared channel, so that estimating a step on this
// cluster died out of memory ("LLVM ERROR: out of memory"), and
// --export-timeline wrote a track for each of the 4294967295 channels (found
// with commopt-cluster-fuzzer's harness, which simulates a step on the
// cluster's channels). A description with more than 64 channels is an error
// naming the field, wherever a cluster is read.

// RUN: not commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-many-channels.json estimate=step report=none" 2>&1 | FileCheck %s --check-prefix=OPTIMIZE
// RUN: not commopt-opt %s --comm-estimate="cluster=%S/Inputs/cluster-many-channels.json" 2>&1 | FileCheck %s --check-prefix=ESTIMATE

// OPTIMIZE: error: comm-optimize: option 'cluster': {{.*}}cluster-many-channels.json: invalid cluster description: expected at most 64 channels, the runtime's COMMRT_MAX_CHANNELS at cluster.channels
// ESTIMATE: error: comm-estimate: option 'cluster': {{.*}}cluster-many-channels.json: invalid cluster description: expected at most 64 channels, the runtime's COMMRT_MAX_CHANNELS at cluster.channels

module attributes {comm.model = "two-layers"} {
  func.func @train_step() -> (tensor<1024xf32>, tensor<1024xf32>) {
    comm.compute() {cost_us = 1.000000e+02 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
    %0 = comm.compute() {cost_us = 5.000000e+01 : f64, layer = 1 : i64, name = "fc2", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %1 = comm.allreduce %0 {name = "fc2.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    %2 = comm.compute() {cost_us = 5.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %3 = comm.allreduce %2 {name = "fc1.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    return %1, %3 : tensor<1024xf32>, tensor<1024xf32>
  }
}
