// RUN: commopt-opt %s -split-input-file --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/host-rates-device.json report=none" \
// RUN:   | FileCheck %s
// RUN: commopt-opt %s -split-input-file --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/slow-channel-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=TRAFFIC

// A device's measured local-work rates and bridge costs (docs/Cluster.md,
// section 4): each phase of a sparse allreduce at its rate per element (and
// per entry received), a dense one's passes per element, the bridge's hook
// on the task that produces each gradient, and what handing a blocking
// collective to the bridge's thread costs (7 us). On the two-rank test
// cluster the
// sparse exchange takes 27.0078125 us. n = 4096, density 1/4: k = 1024
// pairs sent, 2048 received. Top-k: accumulate 4096 * 1 ns, select
// 4096 * 2 ns, scatter 4096 * 0.5 ns + 2048 * 100 ns: 219.136 us. The hook
// (5 us) ends the gradient's task at 15 us: 15 + 27.0078125 + 219.136 + 7.
// Priced by memory traffic instead (a device without rates, at 6.144 GB/s):
// 33.333 us of local work after 10 us of compute.
// CHECK-LABEL: func.func @blocking
// CHECK: comm.sparse_allreduce
// CHECK-SAME: comm.end_us = 268.1438125{{[0-9]*}} : f64, comm.start_us = 1.500000e+01 : f64
// TRAFFIC-LABEL: func.func @blocking
// TRAFFIC: comm.end_us = 70.341145833333{{[0-9]*}} : f64, comm.start_us = 1.000000e+01 : f64
func.func @blocking(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %r, %res = comm.sparse_allreduce %g, %residual {density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32> -> tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  return %r, %res : tensor<4096xf32>, tensor<4096xf32>
}

// A dense allreduce of 16 KiB (26 us), its division (4096 * 0.25 ns) and,
// blocking, the bridge's handoff (7 us).
// CHECK-LABEL: func.func @dense
// CHECK: comm.allreduce
// CHECK-SAME: comm.end_us = 4.902400e+01 : f64, comm.start_us = 1.500000e+01 : f64
// TRAFFIC-LABEL: func.func @dense
// TRAFFIC: comm.end_us = 3.600000e+01 : f64, comm.start_us = 1.000000e+01 : f64
func.func @dense() -> tensor<4096xf32> {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %r = comm.allreduce %g {name = "w", reduce = #comm.reduce<avg>} : tensor<4096xf32> -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// -----

// With momentum correction (comm-record-cluster momentum-correction=true),
// the bridge corrects the gradient in its hook (4096 * 10 ns: the start moves
// to 10 + 5 + 40.96 us) and masks the velocity after the wait (4096 * 20 ns
// = 81.92 us), on the task that follows it: the update, 20 + 81.92 us after
// the collective's end. Threshold selection: 217.088 us of local work.
// CHECK-LABEL: func.func @started
// CHECK-SAME: step_us = 401.97581250{{[0-9]*}} : f64
// CHECK: comm.sparse_start
// CHECK-SAME: comm.end_us = 300.0558125 : f64, comm.start_us = 5.596000e+01 : f64
module attributes {comm.momentum_correction} {
func.func @started(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %t = comm.sparse_start %g, %residual {channel = 1 : i64, density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<threshold>} : tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  %r:2 = comm.wait %t : tensor<4096xf32>, tensor<4096xf32>
  comm.compute (%r#0) {cost_us = 20.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<4096xf32>) -> ()
  return %r#0, %r#1 : tensor<4096xf32>, tensor<4096xf32>
}

// A wait that ends the step: the masking is a task of its own after it.
// CHECK-LABEL: func.func @tail
// CHECK-SAME: step_us = 381.97581250{{[0-9]*}} : f64
func.func @tail(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %t = comm.sparse_start %g, %residual {channel = 1 : i64, density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<threshold>} : tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  %r:2 = comm.wait %t : tensor<4096xf32>, tensor<4096xf32>
  return %r#0, %r#1 : tensor<4096xf32>, tensor<4096xf32>
}
}
