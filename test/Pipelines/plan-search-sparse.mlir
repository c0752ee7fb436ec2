// comm-sparsify makes a gradient sparse where its sparse exchange costs less
// than its dense allreduce, each priced alone. On ethernet10-16 that holds
// for w1 and w2 (1 MiB each), but all three gradients become ready at once
// at the end of the backward pass, where the dense ones go in one bucket:
// the fused dense allreduce of all three is faster than the bias's bucket
// and two sparse exchanges. The search tries each sparse gradient of each of
// its sparse plans dense, keeps a change where the step simulates faster,
// and so ends with the one dense bucket.

// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true estimate=step" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=PLAN < %t.mlir
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true search=false" | FileCheck %s --check-prefix=ALONE
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true sparse-exclude=w2 search=false" | FileCheck %s --check-prefix=EXCLUDED

// REPORT: comm-optimize: 5 plans compared, each option turned on and off, then each sparse gradient tried dense (simulated step of every function):
// REPORT-NEXT: sparse=true sparse-overlap=true {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=false {{ *[0-9.]+}} us  <- chosen
// REPORT-NEXT: sparse=true sparse-overlap=false {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=true sparse-overlap=true, dense: w1, w2 (of 2 sparse tried) {{ *[0-9.]+}} us{{$}}
// REPORT-NEXT: sparse=true sparse-overlap=false, dense: w1, w2 (of 2 sparse tried) {{ *[0-9.]+}} us{{$}}

// PLAN-LABEL: func.func @step
// PLAN: comm.start {{.*}}names = ["w1", "w2", "b"]
// PLAN-NOT: comm.sparse_

// comm-sparsify alone (search=false) makes both sparse.
// ALONE-LABEL: func.func @step
// ALONE: comm.start {{.*}}names = ["b"]
// ALONE: comm.sparse_start {{.*}}name = "w1"
// ALONE: comm.sparse_start {{.*}}name = "w2"

// sparse-exclude keeps the named parameters dense by hand.
// EXCLUDED-LABEL: func.func @step
// EXCLUDED: comm.start {{.*}}names = ["w2", "b"]
// EXCLUDED: comm.sparse_start {{.*}}name = "w1"
// EXCLUDED-NOT: comm.sparse_

func.func @step() -> (tensor<262144xf32>, tensor<262144xf32>, tensor<1000xf32>) {
  comm.compute () {cost_us = 1000.0, layer = 1, phase = #comm.phase<backward>} : () -> ()
  %w1, %w2, %b = comm.compute () {cost_us = 100.0, layer = 0, phase = #comm.phase<backward>} : () -> (tensor<262144xf32>, tensor<262144xf32>, tensor<1000xf32>)
  %r1 = comm.allreduce %w1 {name = "w1", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %r2 = comm.allreduce %w2 {name = "w2", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %rb = comm.allreduce %b {name = "b", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  return %r1, %r2, %rb : tensor<262144xf32>, tensor<262144xf32>, tensor<1000xf32>
}
