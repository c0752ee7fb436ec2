// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json sparse=true sparse-min-bytes=0 search=false estimate=none" | FileCheck %s --check-prefix=COST
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json sparse=true sparse-min-bytes=0 sparse-all=true search=false estimate=none" | FileCheck %s --check-prefix=ALL
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json sparse=true sparse-min-bytes=8192 sparse-all=true search=false estimate=none" | FileCheck %s --check-prefix=MIN

// sparse-all makes every gradient of at least sparse-min-bytes sparse, with
// its cheapest exchange, where the cost model alone keeps the small ones
// dense (for studies of sparse plans' accuracy); smaller ones stay dense.

// COST-LABEL: func.func @step
// COST-NOT: comm.sparse
// ALL-LABEL: func.func @step
// ALL-COUNT-2: comm.sparse_start
// MIN-LABEL: func.func @step
// MIN: comm.sparse_start {{.*}}name = "large"
// MIN-NOT: comm.sparse_start
func.func @step(%x: tensor<8xf32>) -> (tensor<4096xf32>, tensor<512xf32>) {
  %g = comm.compute (%x) {cost_us = 100.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<backward>} : (tensor<8xf32>) -> tensor<4096xf32>
  %h = comm.compute (%x) {cost_us = 100.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : (tensor<8xf32>) -> tensor<512xf32>
  %a = comm.allreduce %g {name = "large", reduce = #comm.reduce<avg>} : tensor<4096xf32> -> tensor<4096xf32>
  %b = comm.allreduce %h {name = "small", reduce = #comm.reduce<avg>} : tensor<512xf32> -> tensor<512xf32>
  return %a, %b : tensor<4096xf32>, tensor<512xf32>
}
