// The cluster a plan is made for is recorded on the module, used by later
// estimates and timeline exports unless an option names another (with a
// warning), and named in every report together with where it came from.

// Without a cluster option, comm-optimize plans for the default preset and
// says so.
// RUN: commopt-opt %s --comm-optimize="estimate=step" 2>%t.default.txt | FileCheck %s --check-prefix=DEFAULT
// RUN: FileCheck %s --check-prefix=DEFAULT-REPORT < %t.default.txt
// DEFAULT: module attributes {comm.cluster = "gradientflow-64", comm.cluster_is_default}
// DEFAULT: comm.estimate = {cluster = "gradientflow-64", {{.*}}ranks = 64
// DEFAULT-REPORT: cluster gradientflow-64 (64 ranks, {{.*}}); the default; set cluster= for yours

// A module planned for ethernet10-16 is estimated on it later, without
// being told.
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16" -o %t.planned.mlir
// RUN: commopt-opt %t.planned.mlir --comm-estimate 2>&1 >/dev/null | FileCheck %s --check-prefix=RECORDED
// RECORDED: cluster ethernet10-16 (16 ranks, {{.*}}); recorded on the module

// An option that names another cluster wins, with a warning.
// RUN: commopt-opt %t.planned.mlir --comm-estimate="cluster=ib56-16" 2>&1 >/dev/null | FileCheck %s --check-prefix=OVERRIDE
// OVERRIDE: warning: comm-estimate: the module was planned for cluster 'ethernet10-16'; using 'ib56-16' as the cluster option says
// OVERRIDE: cluster ib56-16 (16 ranks, {{[^;]*}}){{$}}

// A plan made for momentum correction says so on the module, and its
// exported plan tells the training bridge; one made without does not.
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 momentum-correction=true estimate=step" | FileCheck %s --check-prefix=MOMENTUM
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 momentum-correction=true estimate=step" | commopt-translate --export-plan | FileCheck %s --check-prefix=MOMENTUM-PLAN
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 estimate=step" | commopt-translate --export-plan | FileCheck %s --check-prefix=NO-MOMENTUM-PLAN
// MOMENTUM: module attributes {comm.cluster = "ethernet10-16", comm.momentum_correction}
// MOMENTUM-PLAN: "world_size": 16,
// MOMENTUM-PLAN-NEXT: "momentum_correction": true,
// NO-MOMENTUM-PLAN-NOT: momentum_correction

// A sparse warm-up (Deep Gradient Compression's) is recorded likewise and
// exported for the bridge; a bad one is an option error.
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse-warmup-steps=400 estimate=step" | FileCheck %s --check-prefix=WARMUP
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse-warmup-steps=400 sparse-warmup-density=0.1 estimate=step" | commopt-translate --export-plan | FileCheck %s --check-prefix=WARMUP-PLAN
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 estimate=step" | commopt-translate --export-plan | FileCheck %s --check-prefix=NO-WARMUP-PLAN
// RUN: not commopt-opt %s --comm-optimize="sparse-warmup-density=0" 2>&1 | FileCheck %s --check-prefix=WARMUP-DENSITY
// RUN: not commopt-opt %s --comm-optimize="sparse-warmup-steps=-2" 2>&1 | FileCheck %s --check-prefix=WARMUP-STEPS
// RUN: not commopt-opt %s --comm-record-cluster="sparse-warmup-density=1.5" 2>&1 | FileCheck %s --check-prefix=RECORD-DENSITY
// RUN: not commopt-opt %s --comm-record-cluster="sparse-warmup-steps=-1" 2>&1 | FileCheck %s --check-prefix=RECORD-STEPS
// WARMUP: module attributes {comm.cluster = "ethernet10-16", comm.sparse_warmup = {start_density = 2.500000e-01 : f64, steps = 400 : i64}}
// WARMUP-PLAN: "world_size": 16,
// WARMUP-PLAN-NEXT: "sparse_warmup": {
// WARMUP-PLAN-NEXT:  "steps": 400,
// WARMUP-PLAN-NEXT:  "start_density": 0.1
// NO-WARMUP-PLAN-NOT: sparse_warmup
// WARMUP-DENSITY: error: comm-optimize: option 'sparse-warmup-density': expected a fraction in (0, 1], got 0
// WARMUP-STEPS: error: comm-optimize: option 'sparse-warmup-steps': expected a non-negative step count, got -2
// RECORD-DENSITY: error: comm-record-cluster: option 'sparse-warmup-density': expected a fraction in (0, 1], got 1.5
// RECORD-STEPS: error: comm-record-cluster: option 'sparse-warmup-steps': expected a non-negative step count, got -1

// Re-planning for another cluster records the new one.
// RUN: commopt-opt %t.planned.mlir --comm-optimize="cluster=ib56-16" 2>&1 | FileCheck %s --check-prefix=REPLAN
// REPLAN: warning: comm-record-cluster: the module was planned for cluster 'ethernet10-16'; using 'ib56-16' as the cluster option says
// REPLAN: module attributes {comm.cluster = "ib56-16"}

// The timeline export simulates on the recorded cluster; without one it
// says which it uses.
// RUN: commopt-translate --export-timeline %t.planned.mlir | FileCheck %s --check-prefix=TIMELINE
// TIMELINE: "cluster":"ethernet10-16","cluster_source":"module"
// RUN: commopt-translate --export-timeline %s 2>&1 | FileCheck %s --check-prefix=TIMELINE-DEFAULT
// TIMELINE-DEFAULT: remark: export-timeline: the module records no cluster; simulating on gradientflow-64 (set --timeline-cluster for yours)
// TIMELINE-DEFAULT: "cluster":"gradientflow-64","cluster_source":"default"

// The JSON report says where the cluster came from.
// RUN: commopt-opt %t.planned.mlir --comm-estimate="report=json" 2>&1 >/dev/null | FileCheck %s --check-prefix=JSON
// JSON: "cluster_source": "module"

// A recorded cluster that cannot be read is an error naming it.
// RUN: sed -e 's/comm.cluster = "ethernet10-16"/comm.cluster = "no-such-net"/' %t.planned.mlir > %t.bad.mlir
// RUN: not commopt-opt %t.bad.mlir --comm-estimate 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: comm-estimate: option 'cluster': 'no-such-net' is neither a cluster preset

func.func @train_step() -> (tensor<1000xf32>, tensor<100000xf32>) {
  comm.compute () {cost_us = 100.0, name = "forward", phase = #comm.phase<forward>} : () -> ()
  %g1 = comm.compute () {cost_us = 10.0, layer = 1, name = "l1", phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %r1 = comm.allreduce %g1 {name = "l1.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %g0 = comm.compute () {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> tensor<100000xf32>
  %r0 = comm.allreduce %g0 {name = "l0.w", reduce = #comm.reduce<avg>} : tensor<100000xf32> -> tensor<100000xf32>
  return %r1, %r0 : tensor<1000xf32>, tensor<100000xf32>
}
