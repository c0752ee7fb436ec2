// The exports read modules whose collectives run among the process groups
// of a shard.grid (the shard dialect is registered with them), and the plan
// names each collective's group: its grid, the grid's shape and the axes.
// A collective among all ranks has no `group`.
//
// RUN: commopt-opt %s --comm-optimize="cluster=nvlink-8 estimate=step report=none" \
// RUN:   | commopt-translate --export-plan | FileCheck %s --check-prefix=PLAN
// RUN: commopt-opt %s --comm-optimize="cluster=nvlink-8 estimate=step report=none" \
// RUN:   | commopt-translate --export-timeline | FileCheck %s --check-prefix=TIMELINE

// PLAN:      "model": "grouped",
// PLAN:      "reduce": "sum",
// PLAN-NEXT: "group": {
// PLAN-NEXT:  "grid": "grid",
// PLAN-NEXT:  "shape": [
// PLAN-NEXT:   2,
// PLAN-NEXT:   2
// PLAN-NEXT:  ],
// PLAN-NEXT:  "axes": [
// PLAN-NEXT:   1
// PLAN-NEXT:  ]
// PLAN-NEXT: },
// PLAN-NEXT: "wire": "none",
// PLAN:      "name": "rows",
// PLAN:      "reduce": "sum",
// PLAN-NEXT: "wire": "none",
// PLAN:      "name": "all",

// TIMELINE: "generator":"commopt-translate --export-timeline","model":"grouped"
// TIMELINE: {"name":"rows","cat":"communication"
// TIMELINE: {"name":"all","cat":"communication"

module attributes {comm.model = "grouped"} {
  shard.grid @grid(shape = 2x2)
  func.func @step(%a: tensor<1024xf32>, %b: tensor<1024xf32>)
      -> (tensor<1024xf32>, tensor<1024xf32>) {
    %ra = comm.allreduce %a {name = "rows",
                             group = #comm.group<@grid, axes = [1]>}
        : tensor<1024xf32> -> tensor<1024xf32>
    %rb = comm.allreduce %b {name = "all"}
        : tensor<1024xf32> -> tensor<1024xf32>
    return %ra, %rb : tensor<1024xf32>, tensor<1024xf32>
  }
}
