// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/slow-channel-device.json report=none" \
// RUN:   | FileCheck %s
// RUN: not commopt-opt %s -o /dev/null \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/bad-channel-slowdown.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// A device's channel_slowdown (docs/Cluster.md) lengthens the local steps of
// a sparse allreduce that a channel runs (comm.sparse_start), not those of a
// blocking one. The sparse allreduce of estimate.mlir's @sparse: its
// exchange takes 27.0078125 us on the two ranks; its local steps move
// 204800 B, at this device's 6.144 GB/s 33.333333 us, blocking: 60.341146 us
// in all after the 10 us of compute.
// CHECK-LABEL: func.func @blocking
// CHECK: comm.sparse_allreduce
// CHECK-SAME: comm.end_us = 70.341145833333{{[0-9]*}} : f64, comm.start_us = 1.000000e+01 : f64
func.func @blocking(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %r, %res = comm.sparse_allreduce %g, %residual {density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32> -> tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  return %r, %res : tensor<4096xf32>, tensor<4096xf32>
}

// Started, the local steps take twice as long: 66.666667 us, 93.674479 us in
// all.
// CHECK-LABEL: func.func @started
// CHECK: comm.sparse_start
// CHECK-SAME: comm.end_us = 103.67447916666{{[0-9]*}} : f64, comm.start_us = 1.000000e+01 : f64
func.func @started(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %t = comm.sparse_start %g, %residual {channel = 1 : i64, density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  %r:2 = comm.wait %t : tensor<4096xf32>, tensor<4096xf32>
  return %r#0, %r#1 : tensor<4096xf32>, tensor<4096xf32>
}

// BAD: expected a number of at least 1 at device.channel_slowdown
