// RUN: not commopt-translate --export-timeline %s --timeline-cluster=nowhere 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/bad-cluster-ranks-per-node.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-CLUSTER
// RUN: not commopt-translate --export-timeline %s --timeline-device=tpu 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEVICE
// RUN: not commopt-translate --export-timeline %s --timeline-mode=fast 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MODE
// RUN: not commopt-translate --export-timeline %s --timeline-mode=steady 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SIMULATE

// Bad options name the option and the loader's message; a step that cannot
// be simulated names the function and the simulator's message. Nothing is
// written then.

// CLUSTER: error: export-timeline: option --timeline-cluster: 'nowhere' is neither a cluster preset (gradientflow-64, ib100-512, nvlink-8, ethernet10-16, ib56-16) nor a file
// CLUSTER-NOT: traceEvents
// BAD-CLUSTER: error: export-timeline: option --timeline-cluster: {{.*}}bad-cluster-ranks-per-node.json: invalid cluster description: must divide ranks at cluster.ranks_per_node
// DEVICE: error: export-timeline: option --timeline-device: 'tpu' is neither a device preset (v100, p40, a100, h100) nor a file
// MODE: for the --timeline-mode option: Cannot find option named 'fast'!
// SIMULATE: error: export-timeline: cannot simulate @empty: computeTasks: steady state needs compute tasks
// SIMULATE-NOT: traceEvents

func.func @compute() {
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  return
}

func.func @empty() {
  return
}
