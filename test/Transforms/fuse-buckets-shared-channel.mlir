// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost cluster=%S/Inputs/two-ranks.json" | FileCheck %s
// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost cluster=%S/Inputs/two-ranks.json sparse-overlap=false" | FileCheck %s

// comm-fuse-buckets simulates its bucketings with the function's other
// collectives on the same channel. On the two-rank test cluster an
// allreduce of n bytes costs 50 us + n / 1000 us; the sparse allreduce of
// "s" (ready at 20 us) costs S.
//
// Without "s", g1 alone (10-64 us) lets the 35 us update start at 64 us,
// and g2 follows (64-118): the step ends at 118 us, against 123 us for one
// bucket at 30 us (30-88, then the update).
// With "s" on the channel:
// - started (sparse-overlap=true): g1 alone runs 10-64, "s" 64-64+S, g2
//   after it, so the step ends at 118 + S; one bucket runs after "s"
//   (20+S to 78+S), then the update: 113 + S. One bucket is faster.
// - blocking: g1 alone delays "s" to 64 us, and "s" stalls compute until
//   64 + S, so g2 ends at 128 + S; with one bucket "s" runs at 20 us, the
//   bucket at 30 + S, the update after it: 123 + S. One bucket again.
// CHECK-LABEL: func.func @shares_the_channel
// CHECK: comm.sparse_allreduce
// CHECK: %[[F:.*]]:2 = comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["g1", "g2"]}
// CHECK-NEXT: comm.compute(%[[F]]#0) {cost_us = 3.500000e+01 : f64, name = "update"}
func.func @shares_the_channel(%residual: tensor<4096xf32>) -> (tensor<1000xf32>, tensor<1000xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %g1 = comm.compute () {cost_us = 10.0, name = "b1"} : () -> tensor<1000xf32>
  %r1 = comm.allreduce %g1 {name = "g1"} : tensor<1000xf32> -> tensor<1000xf32>
  %gs = comm.compute () {cost_us = 10.0, name = "bs"} : () -> tensor<4096xf32>
  %rs, %res = comm.sparse_allreduce %gs, %residual {density = 0.25, exchange = #comm.exchange<allgather>, name = "s", select = #comm.select<topk>} : tensor<4096xf32>, tensor<4096xf32> -> tensor<4096xf32>, tensor<4096xf32>
  %g2 = comm.compute () {cost_us = 10.0, name = "b2"} : () -> tensor<1000xf32>
  %r2 = comm.allreduce %g2 {name = "g2"} : tensor<1000xf32> -> tensor<1000xf32>
  %u = comm.compute (%r1) {cost_us = 35.0, name = "update"} : (tensor<1000xf32>) -> tensor<1000xf32>
  return %u, %r2, %rs, %res : tensor<1000xf32>, tensor<1000xf32>, tensor<4096xf32>, tensor<4096xf32>
}
