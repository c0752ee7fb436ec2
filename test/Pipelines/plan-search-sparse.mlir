// comm-sparsify makes a gradient sparse where its sparse exchange costs less
// than its dense allreduce, each priced alone. In the overlapped step the
// dense allreduce of "early" hides behind the 50 ms backward step that
// follows it, while its sparse form would add its selection to that step:
// the search tries each sparse gradient of each of its sparse plans dense
// and keeps "early" dense. "late" is needed right away, and stays sparse.

// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.001 estimate=step" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=PLAN < %t.mlir
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.001 sparse-exclude=late,early search=false" | FileCheck %s --check-prefix=EXCLUDED

// REPORT: comm-optimize: 5 plans compared, each option turned on and off, then each sparse gradient tried dense (simulated step of every function):
// REPORT-NEXT: sparse=true sparse-overlap=true {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=false {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=true sparse-overlap=false {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=true sparse-overlap=true, dense: early (of 2 sparse tried) {{ *[0-9.]+}} us  <- chosen
// REPORT-NEXT: sparse=true sparse-overlap=false, dense: early (of 2 sparse tried) {{ *[0-9.]+}} us{{$}}

// PLAN-LABEL: func.func @step
// PLAN: comm.start %{{.*}}names = ["early"]
// PLAN: comm.sparse_start {{.*}}name = "late"
// PLAN-NOT: comm.sparse_start {{.*}}name = "early"

// With both excluded, nothing goes sparse.
// EXCLUDED-LABEL: func.func @step
// EXCLUDED-NOT: comm.sparse_

func.func @step() -> (tensor<1048576xf32>, tensor<1048576xf32>) {
  %e = comm.compute () {cost_us = 100.0, layer = 2, phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
  %re = comm.allreduce %e {name = "early", reduce = #comm.reduce<avg>} : tensor<1048576xf32> -> tensor<1048576xf32>
  comm.compute () {cost_us = 50000.0, layer = 1, phase = #comm.phase<backward>} : () -> ()
  %l = comm.compute () {cost_us = 100.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
  %rl = comm.allreduce %l {name = "late", reduce = #comm.reduce<avg>} : tensor<1048576xf32> -> tensor<1048576xf32>
  return %re, %rl : tensor<1048576xf32>, tensor<1048576xf32>
}
