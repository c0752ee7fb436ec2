// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json" | FileCheck %s
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json fusion=none channels=2 priorities=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks.json algorithm=tree" | FileCheck %s --check-prefix=TREE
// RUN: not commopt-opt %s --comm-optimize="algorithm=rings" 2>&1 | FileCheck %s --check-prefix=BADALGORITHM
// RUN: not commopt-opt %s --comm-optimize="fusion=greedy" 2>&1 | FileCheck %s --check-prefix=BADFUSION
// RUN: not commopt-opt %s --comm-optimize="cluster=nowhere-42" 2>&1 | FileCheck %s --check-prefix=BADCLUSTER

// algorithm= forces one algorithm on every collective (comm-select-algorithm).
// TREE: comm.start {{.*}}{algorithm = #comm.algorithm<tree>
// BADALGORITHM: option 'algorithm': unknown value 'rings'; expected one of auto, ring, tree, hierarchical

// A backward pass in the importers' shape: three layers whose gradients
// are ready 10 us apart. On the two-rank test cluster (50 us + n/1000 us per
// allreduce, one channel) one bucket is best (see
// test/Transforms/fuse-buckets-cost.mlir); it starts as soon as the last
// gradient is ready and is waited on at the return, with the priority of
// the earliest layer. Two ranks: the tree's latency is the ring's and its
// bandwidth term twice the ring's, so comm-select-algorithm keeps the ring.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G1:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, layer = 2 : i64
// CHECK: %[[G2:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, layer = 1 : i64
// CHECK: %[[G3:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, layer = 0 : i64
// CHECK-NEXT: %[[T:.*]] = comm.start %[[G1]], %[[G2]], %[[G3]] {algorithm = #comm.algorithm<ring>, names = ["l2.w", "l1.w", "l0.w"], priority = 0 : i64, reduce = #comm.reduce<avg>}
// CHECK-NEXT: %[[R:.*]]:3 = comm.wait %[[T]]
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2

// Without fusion each gradient starts as soon as it is ready, on two
// channels, without priorities.
// NOFUSE-LABEL: func.func @train_step
// NOFUSE: comm.compute() {cost_us = 1.000000e+01 : f64, layer = 2 : i64
// NOFUSE-NEXT: comm.start %{{.*}} {algorithm = #comm.algorithm<ring>, names = ["l2.w"], reduce = #comm.reduce<avg>}
// NOFUSE: comm.compute() {cost_us = 1.000000e+01 : f64, layer = 1 : i64
// NOFUSE-NEXT: comm.start %{{.*}} {algorithm = #comm.algorithm<ring>, channel = 1 : i64, names = ["l1.w"], reduce = #comm.reduce<avg>}
// NOFUSE: comm.compute() {cost_us = 1.000000e+01 : f64, layer = 0 : i64
// NOFUSE-NEXT: comm.start %{{.*}} {algorithm = #comm.algorithm<ring>, names = ["l0.w"], reduce = #comm.reduce<avg>}
// NOFUSE-COUNT-3: comm.wait
// NOFUSE-NEXT: return

// BADFUSION: error: comm-optimize: option 'fusion': unknown value 'greedy'; expected one of threshold, cost, mgwfbp, none
// BADCLUSTER: error: comm-optimize: option 'cluster': 'nowhere-42' is neither a cluster preset

func.func @train_step() -> (tensor<1000xf32>, tensor<1000xf32>, tensor<10000xf32>) {
  comm.compute () {cost_us = 100.0, name = "forward", phase = #comm.phase<forward>} : () -> ()
  %g2 = comm.compute () {cost_us = 10.0, layer = 2, name = "l2", phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %r2 = comm.allreduce %g2 {name = "l2.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %g1 = comm.compute () {cost_us = 10.0, layer = 1, name = "l1", phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %r1 = comm.allreduce %g1 {name = "l1.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %g0 = comm.compute () {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> tensor<10000xf32>
  %r0 = comm.allreduce %g0 {name = "l0.w", reduce = #comm.reduce<avg>} : tensor<10000xf32> -> tensor<10000xf32>
  return %r2, %r1, %r0 : tensor<1000xf32>, tensor<1000xf32>, tensor<10000xf32>
}
