// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json report=none" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,SHARED
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json report=none" \
// RUN:   | FileCheck %s --check-prefixes=CHECK,INDEP
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json mode=steady report=none" \
// RUN:   | FileCheck %s --check-prefix=STEADY
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json report=none" \
// RUN:   | commopt-opt | FileCheck %s --check-prefixes=CHECK,SHARED

// The expected figures, by hand, from docs/CostModel.md. Both test clusters
// have p = 2 ranks on one node, alpha = 5 us and 8.192 Gbit/s, so
// beta = 8 / 8192 us/B = 1/1024 us/B, and a ring allreduce of n bytes costs
//   2(p-1) alpha + 2(p-1)/p n beta = 10 us + n / 1024 us:
// 14 us for a tensor<1024xf32> (4096 B), 170 us for a tensor<40960xf32>.
// two-ranks-shared-channels.json shares bandwidth between its 2 channels,
// two-ranks-independent.json gives each channel the full bandwidth.

// A blocking allreduce stalls compute: backward 0-100, allreduce 100-114,
// then the optimizer 114-164. Step 164, compute 150, communication 14, all
// of it exposed.
// CHECK-LABEL: func.func @blocking_stall
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.400000e+01 : f64, compute_us = 1.500000e+02 : f64, exposed_us = 1.400000e+01 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.640000e+02 : f64}
// CHECK: comm.allreduce {{.*}}{comm.end_us = 1.140000e+02 : f64, comm.start_us = 1.000000e+02 : f64, name = "w"}
func.func @blocking_stall() -> tensor<1024xf32> {
  %g = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> tensor<1024xf32>
  %r = comm.allreduce %g {name = "w"} : tensor<1024xf32> -> tensor<1024xf32>
  comm.compute () {cost_us = 50.0 : f64, name = "optimizer"} : () -> ()
  return %r : tensor<1024xf32>
}

// start/wait around 50 us of compute hides the whole collective (100-114
// while compute runs 100-150): step 170 = compute, nothing exposed.
// CHECK-LABEL: func.func @overlap_hidden
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.400000e+01 : f64, compute_us = 1.700000e+02 : f64, exposed_us = 0.000000e+00 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.700000e+02 : f64}
// CHECK: comm.start {{.*}}{comm.end_us = 1.140000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["w"]}
func.func @overlap_hidden() -> tensor<1024xf32> {
  %g = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> tensor<1024xf32>
  %t = comm.start %g {names = ["w"]} : tensor<1024xf32>
  comm.compute () {cost_us = 50.0 : f64, name = "other"} : () -> ()
  %r = comm.wait %t : tensor<1024xf32>
  comm.compute () {cost_us = 20.0 : f64, name = "optimizer"} : () -> ()
  return %r : tensor<1024xf32>
}

// Only 8 us of compute to hide it: compute 100-108, waits 108-114, the
// optimizer runs 114-134. Step 134, compute 128, exposed 6.
// CHECK-LABEL: func.func @overlap_partial
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.400000e+01 : f64, compute_us = 1.280000e+02 : f64, exposed_us = 6.000000e+00 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.340000e+02 : f64}
func.func @overlap_partial() -> tensor<1024xf32> {
  %g = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> tensor<1024xf32>
  %t = comm.start %g {names = ["w"]} : tensor<1024xf32>
  comm.compute () {cost_us = 8.0 : f64, name = "other"} : () -> ()
  %r = comm.wait %t : tensor<1024xf32>
  comm.compute () {cost_us = 20.0 : f64, name = "optimizer"} : () -> ()
  return %r : tensor<1024xf32>
}

// Two collectives issued at 100 on two channels. Their latency parts run at
// once (100-110). Shared bandwidth: the two 4 us bandwidth parts progress at
// half rate, 110-118; the optimizer runs 118-128; communication 18 + 18.
// Independent channels: both end at 114, the step at 124.
// CHECK-LABEL: func.func @two_channels
// SHARED-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 3.600000e+01 : f64, compute_us = 1.100000e+02 : f64, exposed_us = 1.800000e+01 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.280000e+02 : f64}
// INDEP-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 2.800000e+01 : f64, compute_us = 1.100000e+02 : f64, exposed_us = 1.400000e+01 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.240000e+02 : f64}
// SHARED: comm.start {{.*}}{comm.end_us = 1.180000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["a"]}
// SHARED: comm.start {{.*}}{channel = 1 : i64, comm.end_us = 1.180000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["b"]}
// INDEP: comm.start {{.*}}{comm.end_us = 1.140000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["a"]}
// INDEP: comm.start {{.*}}{channel = 1 : i64, comm.end_us = 1.140000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["b"]}
func.func @two_channels() -> (tensor<1024xf32>, tensor<1024xf32>) {
  %g:2 = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> (tensor<1024xf32>, tensor<1024xf32>)
  %t0 = comm.start %g#0 {channel = 0 : i64, names = ["a"]} : tensor<1024xf32>
  %t1 = comm.start %g#1 {channel = 1 : i64, names = ["b"]} : tensor<1024xf32>
  %r0 = comm.wait %t0 : tensor<1024xf32>
  %r1 = comm.wait %t1 : tensor<1024xf32>
  comm.compute () {cost_us = 10.0 : f64, name = "optimizer"} : () -> ()
  return %r0, %r1 : tensor<1024xf32>, tensor<1024xf32>
}

// The same on one channel: one after the other, 100-114 and 114-128; the
// optimizer runs 128-138, whatever the sharing.
// CHECK-LABEL: func.func @one_channel
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 2.800000e+01 : f64, compute_us = 1.100000e+02 : f64, exposed_us = 2.800000e+01 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.380000e+02 : f64}
// CHECK: comm.start {{.*}}{comm.end_us = 1.140000e+02 : f64, comm.start_us = 1.000000e+02 : f64, names = ["a"]}
// CHECK: comm.start {{.*}}{comm.end_us = 1.280000e+02 : f64, comm.start_us = 1.140000e+02 : f64, names = ["b"]}
func.func @one_channel() -> (tensor<1024xf32>, tensor<1024xf32>) {
  %g:2 = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> (tensor<1024xf32>, tensor<1024xf32>)
  %t0 = comm.start %g#0 {names = ["a"]} : tensor<1024xf32>
  %t1 = comm.start %g#1 {names = ["b"]} : tensor<1024xf32>
  %r0 = comm.wait %t0 : tensor<1024xf32>
  %r1 = comm.wait %t1 : tensor<1024xf32>
  comm.compute () {cost_us = 10.0 : f64, name = "optimizer"} : () -> ()
  return %r0, %r1 : tensor<1024xf32>, tensor<1024xf32>
}

// A bucket of two f32 gradients sent as bf16: 2 x 1024 x 2 B = 4096 B on the
// wire, 14 us, blocking: 20-34.
// CHECK-LABEL: func.func @bf16_bucket
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.400000e+01 : f64, compute_us = 2.000000e+01 : f64, exposed_us = 1.400000e+01 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 3.400000e+01 : f64}
// CHECK: comm.fused_allreduce {{.*}}{comm.end_us = 3.400000e+01 : f64, comm.start_us = 2.000000e+01 : f64, wire = bf16}
func.func @bf16_bucket() -> (tensor<1024xf32>, tensor<1024xf32>) {
  %g:2 = comm.compute () {cost_us = 20.0 : f64, name = "backward"} : () -> (tensor<1024xf32>, tensor<1024xf32>)
  %r:2 = comm.fused_allreduce %g#0, %g#1 {wire = bf16} : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
  return %r#0, %r#1 : tensor<1024xf32>, tensor<1024xf32>
}

// Steady state against a single step, on independent channels. Layer 1's
// large gradient (170 us, channel 1) is reduced first, layer 0's small one
// (14 us, channel 0) last.
//
// One step: forward 0-10 (layer 0), 10-20 (layer 1); backward of layer 1
// 20-40, its gradient 40-210; backward of layer 0 40-60, its gradient 60-74.
// Step 210 (the tail of the large gradient), compute 60, exposed 150.
//
// Steady state: the waits are at the end of the step, so the next step's
// forward of a layer waits for that layer's gradient only. Iteration 1:
// forward 0 at 74-84 (after layer 0's gradient), forward 1 at 210-220, so
// the next iteration's forward of layer 0 runs while layer 1's gradient is
// still being reduced. From iteration 1 on, iterations start 200 us apart
// (74, 274, 474, ...): the period is 200, not 210; exposed 140. In the first
// measured iteration (2, from 274): forward 1 waits until 410, backward 1
// runs 420-440, its gradient 440-610 (166-336 from the start of the
// iteration), backward 0 440-460, its gradient 460-474 (186-200).
// CHECK-LABEL: func.func @layers
// SHARED-SAME: mode = "step"
// INDEP-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.840000e+02 : f64, compute_us = 6.000000e+01 : f64, exposed_us = 1.500000e+02 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 2.100000e+02 : f64}
// INDEP: comm.start {{.*}}{channel = 1 : i64, comm.end_us = 2.100000e+02 : f64, comm.start_us = 4.000000e+01 : f64, names = ["fc1.weight"]}
// INDEP: comm.start {{.*}}{comm.end_us = 7.400000e+01 : f64, comm.start_us = 6.000000e+01 : f64, names = ["fc0.weight"]}
// STEADY-LABEL: func.func @layers
// STEADY-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 1.840000e+02 : f64, compute_us = 6.000000e+01 : f64, exposed_us = 1.400000e+02 : f64, mode = "steady", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 2.000000e+02 : f64}
// STEADY: comm.start {{.*}}{channel = 1 : i64, comm.end_us = 3.360000e+02 : f64, comm.start_us = 1.660000e+02 : f64, names = ["fc1.weight"]}
// STEADY: comm.start {{.*}}{comm.end_us = 2.000000e+02 : f64, comm.start_us = 1.860000e+02 : f64, names = ["fc0.weight"]}
func.func @layers() -> (tensor<40960xf32>, tensor<1024xf32>) {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "fc0", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, name = "fc1", phase = #comm.phase<forward>} : () -> ()
  %g1 = comm.compute () {cost_us = 20.0 : f64, layer = 1 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> tensor<40960xf32>
  %t1 = comm.start %g1 {channel = 1 : i64, names = ["fc1.weight"]} : tensor<40960xf32>
  %g0 = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "fc0", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
  %t0 = comm.start %g0 {names = ["fc0.weight"]} : tensor<1024xf32>
  %r1 = comm.wait %t1 : tensor<40960xf32>
  %r0 = comm.wait %t0 : tensor<1024xf32>
  return %r1, %r0 : tensor<40960xf32>, tensor<1024xf32>
}

// A sparse allreduce blocks the step for its exchange and its local steps.
// The exchange: 1024 of 4096 entries per rank, gathered over 2 ranks as the
// runtime sends them, in three allgathers of 5 us + (1/2) T at 1 KiB/us:
// the counts (T = 2 * 8 B: 5.0078125 us), the 8-byte indices (16384 B:
// 13 us) and the values (8192 B: 9 us), 27.0078125 us. The local steps
// (sparseLocalBytes, f32, n = 4096, k = 1024, top-k): acc and the zeroed
// result 4 n 4 B, top-k's five passes 5 n 4 B, the k sent pairs and
// residual entries k (12 + 4) B, the 2 k received pairs added in
// 2 k (12 + 8) B: 204800 B at the v100's 900 GB/s, 0.227556 us. In all
// 27.235368 us after the 10 us of compute.
// CHECK-LABEL: func.func @sparse
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 27.235368055555554 : f64, compute_us = 2.000000e+01 : f64, exposed_us = 27.235368055555554 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 47.235368055555554 : f64}
// CHECK: comm.sparse_allreduce
// CHECK-SAME: comm.end_us = 37.235368055555554 : f64, comm.start_us = 1.000000e+01 : f64
func.func @sparse(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %r, %res = comm.sparse_allreduce %g, %residual {density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32> -> tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  return %r, %res : tensor<4096xf32>, tensor<4096xf32>
}

// Started on a channel, the same sparse allreduce runs on the channel, its
// local steps included (the runtime's channel thread runs them), while the
// 10 us of compute that follow go on: it ends at 10 + 27.235368 us,
// 17.235368 us after compute, which is exposed.
// CHECK-LABEL: func.func @sparse_started
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 27.235368055555554 : f64, compute_us = 2.000000e+01 : f64, exposed_us = 17.235368055555554 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 37.235368055555554 : f64}
// CHECK: comm.sparse_start
// CHECK-SAME: comm.end_us = 37.235368055555554 : f64, comm.start_us = 1.000000e+01 : f64
func.func @sparse_started(%residual: tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, phase = #comm.phase<backward>} : () -> tensor<4096xf32>
  %t = comm.sparse_start %g, %residual {channel = 1 : i64, density = 2.500000e-01 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32>
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> ()
  %r:2 = comm.wait %t : tensor<4096xf32>, tensor<4096xf32>
  return %r#0, %r#1 : tensor<4096xf32>, tensor<4096xf32>
}

// A step without collectives: its compute is the step.
// CHECK-LABEL: func.func @compute_only
// CHECK-SAME: comm.estimate = {cluster = "{{[^"]+}}", communication_us = 0.000000e+00 : f64, compute_us = 5.000000e+00 : f64, exposed_us = 0.000000e+00 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 5.000000e+00 : f64}
// STEADY-LABEL: func.func @compute_only
// STEADY-SAME: mode = "steady", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 5.000000e+00 : f64
func.func @compute_only() {
  comm.compute () {cost_us = 5.0 : f64, name = "step"} : () -> ()
  return
}

// Left alone: a declaration has no step.
// CHECK-LABEL: func.func private @external()
// CHECK-NOT: comm.estimate
func.func private @external()
