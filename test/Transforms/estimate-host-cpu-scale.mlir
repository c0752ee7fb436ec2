// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/shared-host-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=ALONE
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/shared-host-scaled-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=SCALED
// RUN: commopt-translate --export-timeline %s --timeline-cluster=%S/Inputs/flat-4.json \
// RUN:   --timeline-device=%S/Inputs/shared-host-scaled-device.json | FileCheck %s --check-prefix=TIMELINE
// RUN: not commopt-opt %s -o /dev/null --comm-estimate="device=%S/Inputs/bad-host-cpu-scale.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// host_cpu.cpu_scale: the same work takes more CPU while ranks share the
// cores. It scales the CPU the compute, the collectives' local work and
// step_us need; the transport's CPU per byte is measured under the sharing
// and stays, and the timeline runs the durations as they are.
// On flat-4 with shared-host-device.json (4 ranks on 2 cores, durations
// timed as the step runs them: half a core each), a rank's CPU is half of
// the 8000 us of compute and the rows allgather's 3.0406665625 us of local
// work, 1000 us a step, and 1 ns for each of the 1,575,048 B it sends:
// 6576.56833328125 us. With cpu_scale 1.5: half of 12000 + 4.56099984375,
// 1500, and the same 1575.048 us: 9077.32849992187 us.
// ALONE: @step({{.*}}comm.estimate = {{{.*}}cpu_us = 6576.56833{{[0-9]*}} : f64
// SCALED: @step({{.*}}comm.estimate = {{{.*}}compute_us = 8.000000e+03 : f64, {{.*}}cpu_us = 9077.32849{{[0-9]*}} : f64

// The timeline runs the compute and the local work unscaled; the CPU
// bound (2 x 9077.33 us) is what the scale moves.
// TIMELINE: {"name":"backward","cat":"compute","ph":"X","ts":0,"dur":8000,
// TIMELINE: {"name":"rows","cat":"communication",{{.*}}"local_us":3.04066

// BAD: error: comm-estimate: option 'device': {{.*}}bad-host-cpu-scale.json: invalid device description: expected a positive number at device.host_cpu.cpu_scale

func.func @step(%g: tensor<1000x16xf32>) -> (tensor<1000x16xf32>, tensor<262144xf32>) {
  %d = comm.compute () {cost_us = 8000.0 : f64, layer = 0 : i64, name = "backward", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r = comm.allreduce %d {name = "dense", reduce = #comm.reduce<sum>} : tensor<262144xf32> -> tensor<262144xf32>
  %s = comm.sparse_allreduce %g {comm.coo_gradient, density = 0.01,
      select = #comm.select<rows>, exchange = #comm.exchange<allgather>,
      name = "rows"} : tensor<1000x16xf32> -> tensor<1000x16xf32>
  return %s, %r : tensor<1000x16xf32>, tensor<262144xf32>
}
