// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost cluster=%S/Inputs/two-ranks.json" -split-input-file | FileCheck %s
// RUN: commopt-opt %s --comm-fuse-buckets="policy=mgwfbp cluster=%S/Inputs/two-ranks.json" -split-input-file | FileCheck %s --check-prefix=MGWFBP

// On the two-rank test cluster a ring allreduce of n bytes costs
// 2 (p - 1) alpha + 2 (p - 1) / p n beta = 50 us + n / 1000 us.

// Gradients ready at 10, 20 and 30 us (4000, 4000 and 40000 bytes).
// Separately: [10, 64], [64, 118], [118, 208] -> 208 us. {1,2},{3}: 78, 168.
// {1},{2,3}: 64, 158. One bucket: 30 + 50 + 48 = 128 us, the best.
// CHECK-LABEL: func.func @latency_bound
// CHECK: %[[G3:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, name = "g3"}
// CHECK-NEXT: %[[F:.*]]:3 = comm.fused_allreduce %{{.*}}, %{{.*}}, %[[G3]] {names = ["g1", "g2", "g3"], reduce = #comm.reduce<avg>}
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1, %[[F]]#2
// MG-WFBP sends g1 at once ([10, 64]); g2 (ready 20) and g3 (ready 30)
// arrive while the channel is busy and wait together: one bucket at 64.
// MGWFBP-LABEL: func.func @latency_bound
// MGWFBP: comm.allreduce %{{.*}} {name = "g1", reduce = #comm.reduce<avg>}
// MGWFBP: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["g2", "g3"], reduce = #comm.reduce<avg>}
func.func @latency_bound() -> (tensor<1000xf32>, tensor<1000xf32>, tensor<10000xf32>) {
  %g1 = comm.compute () {cost_us = 10.0, name = "g1"} : () -> tensor<1000xf32>
  %r1 = comm.allreduce %g1 {name = "g1", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %g2 = comm.compute () {cost_us = 10.0, name = "g2"} : () -> tensor<1000xf32>
  %r2 = comm.allreduce %g2 {name = "g2", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %g3 = comm.compute () {cost_us = 10.0, name = "g3"} : () -> tensor<10000xf32>
  %r3 = comm.allreduce %g3 {name = "g3", reduce = #comm.reduce<avg>} : tensor<10000xf32> -> tensor<10000xf32>
  return %r1, %r2, %r3 : tensor<1000xf32>, tensor<1000xf32>, tensor<10000xf32>
}

// -----

// Long compute between gradients hides each collective: sending each as
// soon as it is ready ends at 2010 + 54 = 2064 us, while DDP's rule (all
// 408 KB fit its 1 MiB first bucket) sends one bucket at the end:
// 2010 + 50 + 408 = 2468 us. Fusing the last two gives 2068 us.
// CHECK-LABEL: func.func @overlap_bound
// CHECK-NOT: comm.fused_allreduce
// CHECK-COUNT-3: comm.allreduce
// CHECK-NOT: comm.fused_allreduce
func.func @overlap_bound() -> (tensor<100000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
  %g1 = comm.compute () {cost_us = 10.0} : () -> tensor<100000xf32>
  %r1 = comm.allreduce %g1 : tensor<100000xf32> -> tensor<100000xf32>
  %g2 = comm.compute () {cost_us = 1000.0} : () -> tensor<1000xf32>
  %r2 = comm.allreduce %g2 : tensor<1000xf32> -> tensor<1000xf32>
  %g3 = comm.compute () {cost_us = 1000.0} : () -> tensor<1000xf32>
  %r3 = comm.allreduce %g3 : tensor<1000xf32> -> tensor<1000xf32>
  return %r1, %r2, %r3 : tensor<100000xf32>, tensor<1000xf32>, tensor<1000xf32>
}

// -----

// g1's reduced value is needed before g2 is ready: even though one bucket
// would be cheaper, g1 goes alone and g2, g3 share a bucket.
// CHECK-LABEL: func.func @dependence
// CHECK: %[[R1:.*]] = comm.allreduce %{{.*}} {name = "g1"}
// CHECK-NEXT: comm.compute(%[[R1]])
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["g2", "g3"]}
func.func @dependence() -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
  %g1 = comm.compute () {cost_us = 10.0} : () -> tensor<1000xf32>
  %r1 = comm.allreduce %g1 {name = "g1"} : tensor<1000xf32> -> tensor<1000xf32>
  %u = comm.compute (%r1) {cost_us = 1.0} : (tensor<1000xf32>) -> tensor<1000xf32>
  %g2 = comm.compute () {cost_us = 10.0} : () -> tensor<1000xf32>
  %r2 = comm.allreduce %g2 {name = "g2"} : tensor<1000xf32> -> tensor<1000xf32>
  %g3 = comm.compute () {cost_us = 10.0} : () -> tensor<1000xf32>
  %r3 = comm.allreduce %g3 {name = "g3"} : tensor<1000xf32> -> tensor<1000xf32>
  return %u, %r2, %r3 : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
}

// -----

// g1 and g2 (400 KB each) are ready 10 us apart; g1's reduced value is
// needed by a 1000 us update, g2's only at the return. One bucket ends
// first (20 + 50 + 800 = 870 us against 10 + 450 + 450 = 910 us for the
// two apart), which is what the optimal bucketing minimises, but it makes
// the update wait for g2 too: the step ends at 1870 us, against
// 460 + 1000 = 1460 us with g1 alone. No fusion simulates fastest.
// CHECK-LABEL: func.func @needed_early
// CHECK: %[[R1:.*]] = comm.allreduce %{{.*}} {name = "g1"}
// CHECK: comm.allreduce %{{.*}} {name = "g2"}
// CHECK-NEXT: comm.compute(%[[R1]])
// CHECK-NOT: comm.fused_allreduce
func.func @needed_early() -> (tensor<100000xf32>, tensor<100000xf32>) {
  %g1 = comm.compute () {cost_us = 10.0} : () -> tensor<100000xf32>
  %r1 = comm.allreduce %g1 {name = "g1"} : tensor<100000xf32> -> tensor<100000xf32>
  %g2 = comm.compute () {cost_us = 10.0} : () -> tensor<100000xf32>
  %r2 = comm.allreduce %g2 {name = "g2"} : tensor<100000xf32> -> tensor<100000xf32>
  %u = comm.compute (%r1) {cost_us = 1000.0} : (tensor<100000xf32>) -> tensor<100000xf32>
  return %u, %r2 : tensor<100000xf32>, tensor<100000xf32>
}

// -----

// Classes are planned apart: f16 and f32 gradients never share a bucket.
// CHECK-LABEL: func.func @classes
// CHECK-DAG: comm.fused_allreduce {{.*}} : tensor<1000xf32>, tensor<1000xf32>
// CHECK-DAG: comm.fused_allreduce {{.*}} : tensor<1000xf16>, tensor<1000xf16>
func.func @classes() -> (tensor<1000xf32>, tensor<1000xf16>, tensor<1000xf32>, tensor<1000xf16>) {
  %a = comm.compute () {cost_us = 1.0} : () -> tensor<1000xf32>
  %ra = comm.allreduce %a : tensor<1000xf32> -> tensor<1000xf32>
  %b = comm.compute () {cost_us = 1.0} : () -> tensor<1000xf16>
  %rb = comm.allreduce %b : tensor<1000xf16> -> tensor<1000xf16>
  %c = comm.compute () {cost_us = 1.0} : () -> tensor<1000xf32>
  %rc = comm.allreduce %c : tensor<1000xf32> -> tensor<1000xf32>
  %d = comm.compute () {cost_us = 1.0} : () -> tensor<1000xf16>
  %rd = comm.allreduce %d : tensor<1000xf16> -> tensor<1000xf16>
  return %ra, %rb, %rc, %rd : tensor<1000xf32>, tensor<1000xf16>, tensor<1000xf32>, tensor<1000xf16>
}
