// Where the cluster has a second transport, the plan names the backend of
// each dense collective (`transport`); the training bridge runs it there.
// NCCL at 50 us and 100 GB/s beside MPI at 5 us and 10 GB/s, 4 ranks: the
// small bias goes to MPI, the large weight to NCCL. Without an alternate,
// no collective names one.
//
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/nccl-with-mpi-4.json fusion=none estimate=step report=none" \
// RUN:   | commopt-translate --export-plan | FileCheck %s
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/flat-4.json fusion=none estimate=step report=none" \
// RUN:   | commopt-translate --export-plan | FileCheck %s --check-prefix=ONE

// CHECK:      "prescale": 1,
// CHECK-NEXT: "transport": "nccl",
// CHECK:      "name": "fc.weight",
// CHECK:      "prescale": 1,
// CHECK-NEXT: "transport": "mpi",
// CHECK:      "name": "fc.bias",

// ONE-NOT: "transport"

module attributes {comm.model = "transports"} {
  func.func @step(%x: tensor<64x1024xf32>)
      -> (tensor<4096x1024xf32>, tensor<16xf32>) {
    %w, %b = comm.compute(%x) {cost_us = 100.0, name = "fc.backward"}
        : (tensor<64x1024xf32>) -> (tensor<4096x1024xf32>, tensor<16xf32>)
    %rw = comm.allreduce %w {name = "fc.weight", reduce = #comm.reduce<avg>}
        : tensor<4096x1024xf32> -> tensor<4096x1024xf32>
    %rb = comm.allreduce %b {name = "fc.bias", reduce = #comm.reduce<avg>}
        : tensor<16xf32> -> tensor<16xf32>
    return %rw, %rb : tensor<4096x1024xf32>, tensor<16xf32>
  }
}
