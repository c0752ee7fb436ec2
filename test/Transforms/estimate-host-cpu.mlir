// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/shared-host-device.json" \
// RUN:   2>&1 | FileCheck %s --check-prefix=SHARED
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/roomy-host-device.json" \
// RUN:   2>&1 | FileCheck %s --check-prefix=ROOMY
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json report=none" \
// RUN:   | FileCheck %s --check-prefix=UNDESCRIBED
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/shared-host-device.json report=json" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/shared-host-timed-alone-device.json" \
// RUN:   2>&1 | FileCheck %s --check-prefix=TIMED-ALONE
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/shared-host-timed-alone-free-transport-device.json" \
// RUN:   2>&1 | FileCheck %s --check-prefix=TIMELINE-SETS
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/shared-host-timed-alone-scaled-device.json" \
// RUN:   2>&1 | FileCheck %s --check-prefix=WAIT-AND-CPU
// RUN: not commopt-opt %s -o /dev/null --comm-estimate="device=%S/Inputs/bad-host-cpu-ranks.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-RANKS
// RUN: not commopt-opt %s -o /dev/null --comm-estimate="device=%S/Inputs/bad-host-cpu-step.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-STEP
// RUN: not commopt-opt %s -o /dev/null --comm-estimate="device=%S/Inputs/bad-host-cpu-timed-ranks.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-TIMED

// A device's host_cpu (docs/Cluster.md, section 4) prices the CPU a rank
// needs in a step: its compute (10000 us) at the part of a core it gets
// while every rank is busy, the host's cost per step (1000 us) and 1 ns per
// byte sent (a ring allreduce of 1 MiB on 2 ranks sends 1 MiB). The
// timeline takes 10000 us: the allreduce hides behind the last 2000 us.
//
// 4 ranks on 2 cores: 0.5 x 10000 + 1000 + 1048.576 = 7048.576 us a rank,
// and the 2 cores need twice that for the 4 ranks: the step takes
// 14097.152 us, not 10000.
// SHARED-LABEL: comm-estimate: @step
// SHARED: host CPU             7048.576 us a rank; 4 ranks on 2 cores bound the step at 14097.152 us (0.000 us of it idle on the network), which sets it

// Blocking, the allreduce's 1034 us hide behind no compute: every rank
// waits on the network and the cores idle. The timeline takes 11034 us, of
// which 1034 / 11034 idle; that share of the CPU no task does (1000 us a
// step and 1048.576 us for the bytes: 191.973 us) fills idle cores. The
// rest, 6856.603 us a rank, takes the 2 cores 13713.206 us, plus the
// 1034 us idle: 14747.206 us.
// SHARED-LABEL: comm-estimate: @blocking
// SHARED: host CPU             7048.576 us a rank; 4 ranks on 2 cores bound the step at 14747.206 us (1034.000 us of it idle on the network), which sets it
// SHARED: @step() {{.*}}comm.estimate = {{{.*}}cpu_bound_us = 14097.152 : f64, cpu_us = 7048.576 : f64, {{.*}}host_bound_us = 14097.152 : f64, {{.*}}network_idle_us = 0.000000e+00 : f64, {{.*}}step_us = 14097.152 : f64}
// SHARED: @blocking() {{.*}}comm.estimate = {{{.*}}cpu_bound_us = 14097.152 : f64, cpu_us = 7048.576 : f64, {{.*}}host_bound_us = 14747.2064{{[0-9]*}} : f64, {{.*}}network_idle_us = 1.034000e+03 : f64, {{.*}}step_us = 14747.2064{{[0-9]*}} : f64}

// 2 ranks on 8 cores: a rank's busy time is all CPU (12048.576 us), and
// the cores serve the 2 ranks in a quarter of it: the timeline's step
// stands.
// ROOMY-LABEL: comm-estimate: @step
// ROOMY: host CPU            12048.576 us a rank; 2 ranks on 8 cores bound the step at 3012.144 us (0.000 us of it idle on the network){{$}}
// ROOMY: @step() {{.*}}comm.estimate = {{{.*}}cpu_bound_us = 3012.1440{{[0-9]*}} : f64, cpu_us = 12048.576{{[0-9]*}} : f64, {{.*}}step_us = 1.000000e+04 : f64}

// The same host, its durations timed with one rank alone (timed_ranks 1:
// a profile from commopt-export): the compute's 10000 us are CPU time,
// 10000 + 1000 + 1048.576 = 12048.576 us a rank, and the 4 ranks take the
// 2 cores twice that. In the step the 4 ranks compute at once on the 2
// cores: every task takes twice as long as timed, and the step thread's
// own 1000 us a step (not in a profile's durations) twice that at the end:
// 16000 + 4000 + 2000 = 22000 us of compute. The ranks compute in step, so
// all wait together on a collective no compute hides, and their cores then
// have only its transport's CPU to do: blocking, the allreduce's 1034 us
// on the network carry every rank's 1048.576 us for its bytes, which take
// the 2 cores 2097.152 us, so no core idles and the step is 24097.152 us.
// TIMED-ALONE-LABEL: comm-estimate: @step
// TIMED-ALONE: compute             22000.000 us
// TIMED-ALONE: host CPU            12048.576 us a rank; 4 ranks on 2 cores bound the step at 24097.152 us (0.000 us of it idle on the network), which sets it
// TIMED-ALONE-LABEL: comm-estimate: @blocking
// TIMED-ALONE: step                24097.152 us
// TIMED-ALONE: host CPU            12048.576 us a rank; 4 ranks on 2 cores bound the step at 24097.152 us (0.000 us of it idle on the network), which sets it

// With a transport that costs no CPU, a rank needs 10000 + 1000 us, and
// the cores' 22000 us for the 4 ranks: the ranks compute 16000 us, wait
// 1034 us for the blocking allreduce with nothing for the cores to do,
// then compute 4000 + 2000 us: 23034 us, the timeline's step and the
// host's bound alike. Overlapped (@step), the allreduce hides behind that
// compute and the bound, 22000 us, sets the step.
// TIMELINE-SETS-LABEL: comm-estimate: @step
// TIMELINE-SETS: step                22000.000 us
// TIMELINE-SETS: host CPU            11000.000 us a rank; 4 ranks on 2 cores bound the step at 22000.000 us (0.000 us of it idle on the network), which sets it
// TIMELINE-SETS-LABEL: comm-estimate: @blocking
// TIMELINE-SETS: step                23034.000 us
// TIMELINE-SETS: host CPU            11000.000 us a rank; 4 ranks on 2 cores bound the step at 23034.000 us (1034.000 us of it idle on the network), which sets it

// The wait and the CPU add up: with cpu_scale 1.5 and 0.25 ns a byte, a
// rank needs 1.5 x (10000 + 1000) + 262.144 = 16762.144 us, 33524.288 us
// of the cores for the 4 ranks, more than the timeline's 23034 us.
// Blocking, the ranks' transport in the allreduce's 1034 us takes the
// cores 2 x 262.144 = 524.288 us, and none of their other CPU can run
// then: the cores idle 509.712 us, and the step is 34034 us. Overlapped,
// nothing waits: 33524.288 us.
// WAIT-AND-CPU-LABEL: comm-estimate: @step
// WAIT-AND-CPU: step                33524.288 us
// WAIT-AND-CPU: host CPU            16762.144 us a rank; 4 ranks on 2 cores bound the step at 33524.288 us (0.000 us of it idle on the network), which sets it
// WAIT-AND-CPU-LABEL: comm-estimate: @blocking
// WAIT-AND-CPU: step                34034.000 us
// WAIT-AND-CPU: host CPU            16762.144 us a rank; 4 ranks on 2 cores bound the step at 34034.000 us (509.712 us of it idle on the network), which sets it

// A device that describes no host: no CPU figures, no bound.
// UNDESCRIBED: @step() {{.*}}comm.estimate = {cluster = "two-ranks", communication_us = 1.034000e+03 : f64, compute_us = 1.000000e+04 : f64, exposed_us = 0.000000e+00 : f64, mode = "step", peak_memory_bytes = {{[^ ]+}} : f64, ranks = 2 : i64, step_us = 1.000000e+04 : f64}

// JSON: "step_us": 14097.152
// JSON: "cpu_us": 7048.576
// JSON-NEXT: "cpu_bound_us": 14097.152
// JSON-NEXT: "network_idle_us": 0
// JSON-NEXT: "host_bound_us": 14097.152
// JSON: "step_us": 14747.2064
// JSON: "network_idle_us": 1034
// JSON-NEXT: "host_bound_us": 14747.2064

// BAD-RANKS: error: comm-estimate: option 'device': {{.*}}bad-host-cpu-ranks.json: invalid device description: expected a positive number: host_cpu needs both cores and ranks at device.host_cpu.ranks
// BAD-TIMED: error: comm-estimate: option 'device': {{.*}}bad-host-cpu-timed-ranks.json: invalid device description: expected a non-negative number at device.host_cpu.timed_ranks
// BAD-STEP: error: comm-estimate: option 'device': {{.*}}bad-host-cpu-step.json: invalid device description: expected a non-negative number at device.host_cpu.step_us

func.func @step() -> tensor<262144xf32> {
  %g = comm.compute () {cost_us = 8000.0 : f64, layer = 0 : i64, name = "backward", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %t = comm.start %g {channel = 0 : i64, name = "w", reduce = #comm.reduce<avg>} : tensor<262144xf32>
  comm.compute () {cost_us = 2000.0 : f64, name = "other", phase = #comm.phase<backward>} : () -> ()
  %r = comm.wait %t : tensor<262144xf32>
  return %r : tensor<262144xf32>
}

func.func @blocking() -> tensor<262144xf32> {
  %g = comm.compute () {cost_us = 8000.0 : f64, layer = 0 : i64, name = "backward", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r = comm.allreduce %g {name = "w", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  comm.compute () {cost_us = 2000.0 : f64, name = "other", phase = #comm.phase<backward>} : () -> ()
  return %r : tensor<262144xf32>
}
