// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/fast-host-slow-channel.json" \
// RUN:   | FileCheck %s --check-prefix=STARTED
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/fast-host-slow-channel.json sparse-overlap=false" \
// RUN:   | FileCheck %s --check-prefix=BLOCKING
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/fast-host-slow-channel.json sparse-overlap=false" \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/fast-host-slow-channel.json report=none" \
// RUN:   | FileCheck %s --check-prefix=ESTIMATE

// A device whose channels run a sparse allreduce's local steps three times
// as slowly as the caller does (channel_slowdown 3). The dense allreduce of
// 4 MiB on the two test ranks takes 2 * (5 + 4096) = 4106 us. Sparse with
// the chunk exchange, its local steps move 5 n 4 B + 5 * 32768 * 4 B =
// 21626880 B, 1760 us at 12.288 GB/s: blocking, 1918.26 us in all, so it
// goes sparse; started, 5280 us of local steps, so it stays dense.

// STARTED-LABEL: func.func @step
// STARTED-NOT: comm.sparse_allreduce
// STARTED: comm.allreduce %{{.*}} {name = "conv.weight"}

// BLOCKING-LABEL: func.func @step
// BLOCKING: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<chunk>, name = "conv.weight"
// BLOCKING-NOT: comm.allreduce

// ESTIMATE: comm.sparse_allreduce
// ESTIMATE-SAME: comm.end_us = 1918.2578125 : f64
func.func @step(%g: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %r = comm.allreduce %g {name = "conv.weight"} : tensor<1048576xf32> -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}
