// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/two-nodes-of-two.json" -o /dev/null 2>&1 | FileCheck %s

// A collective over a process group is priced on its group's ranks and
// links (ClusterModel::forGroup). Ranks 0-3 lie on a 2x2 grid in row-major
// order, on two nodes of two ranks: a row ({0, 1}) stays in its node, a
// column ({0, 2}) crosses the network. Ring allreduce of n = 4 MiB:
//   row:    p = 2 on the node's links:   2 * 1 us + n * 1e-10 s/B = 421.430 us
//   column: p = 2 across the network:   2 * 10 us + n * 1e-9 s/B = 4214.304 us
//   all:    p = 4 across the network:   6 * 10 us + 1.5 * n * 1e-9 s/B
//                                                              = 6351.456 us

// CHECK: all      4194304        0        4635.734       10987.190        6351.456
// CHECK: columns  4194304        0         421.430        4635.734        4214.304
// CHECK: rows     4194304        0           0.000         421.430         421.430

module {
  shard.grid @grid(shape = 2x2)
  func.func @step(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>,
                  %c: tensor<1048576xf32>)
      -> (tensor<1048576xf32>, tensor<1048576xf32>, tensor<1048576xf32>) {
    %ra = comm.allreduce %a {name = "rows",
                             group = #comm.group<@grid, axes = [1]>}
        : tensor<1048576xf32> -> tensor<1048576xf32>
    %rb = comm.allreduce %b {name = "columns",
                             group = #comm.group<@grid, axes = [0]>}
        : tensor<1048576xf32> -> tensor<1048576xf32>
    %rc = comm.allreduce %c {name = "all"}
        : tensor<1048576xf32> -> tensor<1048576xf32>
    return %ra, %rb, %rc
        : tensor<1048576xf32>, tensor<1048576xf32>, tensor<1048576xf32>
  }
}
