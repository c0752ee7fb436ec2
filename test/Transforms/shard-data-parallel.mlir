// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json bucket-cap-mb=1 prefetch=1" \
// RUN:   | FileCheck %s --check-prefix=FULL
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json bucket-cap-mb=1 prefetch=1" \
// RUN:   --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL-ESTIMATE
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json stage=grad bucket-cap-mb=1 prefetch=0" \
// RUN:   | FileCheck %s --check-prefix=GRAD
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json stage=grad bucket-cap-mb=1 prefetch=0" \
// RUN:   --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRAD-ESTIMATE
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json" \
// RUN:   --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEST
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json memory-limit-mb=4.5" \
// RUN:   | FileCheck %s --check-prefix=LIMIT
// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json memory-limit-mb=4.5" \
// RUN:   --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT-ESTIMATE

// A step as a profile imports it: three layers of one 1 MiB weight each
// (forward 1 ms, backward 2 ms), an allreduce per gradient and the
// optimizer (0.4 ms), on flat-4: 4 ranks, one channel, 1 us a message and
// 1 GB/s, so that a reduce-scatter or all-gather of a 1 MiB unit (shards of
// 65536 f32) costs 3 (1 + 262144 / 1000) = 789.432 us.

// stage=full (ZeRO-3), a unit per layer, prefetch 1: each unit's shard is
// an argument; in forward order (l0, l1, l2) the all-gather of the next
// unit starts before the current unit's forward; l2, the last unit of the
// forward, keeps its parameters for its backward, and the others are
// gathered again, one unit ahead in backward order; each reduce-scatter
// starts after its unit's backward. Waited for before the optimizer, or
// l2's before backward l0 (scatter_lag 1), the step is as fast, and the
// latter holds less; the optimizer updates the shards at a quarter of its
// cost.
// FULL-LABEL: func.func @train_step(
// FULL-SAME: %[[S2:[a-z0-9]+]]: tensor<65536xf32> {comm.names = ["l2.weight"]}, %[[S1:[a-z0-9]+]]: tensor<65536xf32> {comm.names = ["l1.weight"]}, %[[S0:[a-z0-9]+]]: tensor<65536xf32> {comm.names = ["l0.weight"]})
// FULL-SAME: -> (tensor<65536xf32>, tensor<65536xf32>, tensor<65536xf32>)
// FULL-SAME: comm.shard_plan = {memory_limit_mb = 0.000000e+00 : f64, peak_bytes = {{[^ ]+}} : f64, plans = 2 : i64, prefetch = 1 : i64, scatter_lag = 1 : i64, shards = 4 : i64, stage = "full", unit_cap_mb = 1.000000e+00 : f64, units = 3 : i64}
// FULL-NEXT: %[[A0:.*]] = comm.all_gather_start %[[S0]] {names = ["l0.weight"], shards = 4 : i64} : tensor<65536xf32>
// FULL-NEXT: %[[A1:.*]] = comm.all_gather_start %[[S1]] {names = ["l1.weight"], shards = 4 : i64} : tensor<65536xf32>
// FULL-NEXT: %[[W0:.*]] = comm.wait %[[A0]] : tensor<262144xf32>
// FULL-NEXT: comm.compute(%[[W0]]) {{.*}}name = "l0", phase = #comm.phase<forward>}
// FULL-NEXT: %[[A2:.*]] = comm.all_gather_start %[[S2]] {names = ["l2.weight"], shards = 4 : i64}
// FULL-NEXT: %[[W1:.*]] = comm.wait %[[A1]] : tensor<262144xf32>
// FULL-NEXT: comm.compute(%[[W1]]) {{.*}}name = "l1", phase = #comm.phase<forward>}
// FULL-NEXT: %[[W2:.*]] = comm.wait %[[A2]] : tensor<262144xf32>
// FULL-NEXT: comm.compute(%[[W2]]) {{.*}}name = "l2", phase = #comm.phase<forward>}
// FULL-NEXT: %[[B1:.*]] = comm.all_gather_start %[[S1]] {names = ["l1.weight"], shards = 4 : i64}
// FULL-NEXT: %[[G2:.*]] = comm.compute(%[[W2]]) {{.*}}name = "l2", phase = #comm.phase<backward>}
// FULL-NEXT: %[[R2:.*]] = comm.reduce_scatter_start %[[G2]] {names = ["l2.weight"], reduce = #comm.reduce<avg>, shards = 4 : i64} : tensor<262144xf32>
// FULL-NEXT: %[[B0:.*]] = comm.all_gather_start %[[S0]] {names = ["l0.weight"], shards = 4 : i64}
// FULL-NEXT: %[[V1:.*]] = comm.wait %[[B1]] : tensor<262144xf32>
// FULL-NEXT: %[[G1:.*]] = comm.compute(%[[V1]]) {{.*}}name = "l1", phase = #comm.phase<backward>}
// FULL-NEXT: %[[R1:.*]] = comm.reduce_scatter_start %[[G1]] {names = ["l1.weight"], reduce = #comm.reduce<avg>, shards = 4 : i64}
// FULL-NEXT: %[[V0:.*]] = comm.wait %[[B0]] : tensor<262144xf32>
// FULL-NEXT: %[[H2:.*]] = comm.wait %[[R2]] : tensor<65536xf32>
// FULL-NEXT: %[[G0:.*]] = comm.compute(%[[V0]]) {{.*}}name = "l0", phase = #comm.phase<backward>}
// FULL-NEXT: %[[R0:.*]] = comm.reduce_scatter_start %[[G0]] {names = ["l0.weight"], reduce = #comm.reduce<avg>, shards = 4 : i64}
// FULL-NEXT: %[[H1:.*]] = comm.wait %[[R1]] : tensor<65536xf32>
// FULL-NEXT: %[[H0:.*]] = comm.wait %[[R0]] : tensor<65536xf32>
// FULL-NEXT: %[[U:.*]]:3 = comm.compute(%[[H2]], %[[H1]], %[[H0]], %[[S2]], %[[S1]], %[[S0]]) {cost_us = 1.000000e+02 : f64, name = "update", phase = #comm.phase<optimizer>}
// FULL-SAME: -> (tensor<65536xf32>, tensor<65536xf32>, tensor<65536xf32>)
// FULL-NEXT: return %[[U]]#0, %[[U]]#1, %[[U]]#2

// Its timeline, one channel: gathers of l0 0-789.432 and l1 -1578.864;
// forward l0 789.432-1789.432, then the gather of l2 1789.432-2578.864
// beside forward l1 -2789.432 and forward l2 -3789.432; l1 is gathered again
// 3789.432-4578.864 beside backward l2 -5789.432; l2's reduce-scatter
// 5789.432-6578.864 and the gather of l0 -7368.296 beside backward l1
// -7789.432; l1's reduce-scatter -8578.864 beside backward l0 -9789.432;
// l0's reduce-scatter -10578.864, exposed; the update -10678.864.
// Compute 3000 + 6000 + 100 = 9100. Memory peaks in backward l1: the three
// shards (0.75 MiB), l2's gradient still being reduce-scattered (1) and
// the shard it fills (0.25), l1's gathered parameters (1) and gradient (1),
// and l0's parameters gathered ahead (1): 5 MiB.
// FULL-ESTIMATE: step 10678.864 us
// FULL-ESTIMATE-NEXT: compute 9100.000 us
// FULL-ESTIMATE: memory 5.000 MiB at most a rank
// FULL-ESTIMATE-NEXT: sharded full (ZeRO-3, FSDP), 4 shards; 3 units of up to 1 MiB, prefetch 1, the fastest of 2 plans

// stage=grad (ZeRO-2), prefetch 0: gathered once, before each forward, and
// the backward uses the same parameters; nothing is gathered in backward.
// GRAD-LABEL: func.func @train_step(
// GRAD-SAME: stage = "grad"
// GRAD-NEXT: %[[A0:.*]] = comm.all_gather_start %{{.*}} {names = ["l0.weight"]
// GRAD-NEXT: %[[W0:.*]] = comm.wait %[[A0]]
// GRAD-NEXT: comm.compute(%[[W0]]) {{.*}}name = "l0", phase = #comm.phase<forward>}
// GRAD-NEXT: %[[A1:.*]] = comm.all_gather_start %{{.*}} {names = ["l1.weight"]
// GRAD-NEXT: %[[W1:.*]] = comm.wait %[[A1]]
// GRAD-NEXT: comm.compute(%[[W1]]) {{.*}}name = "l1", phase = #comm.phase<forward>}
// GRAD-NEXT: %[[A2:.*]] = comm.all_gather_start %{{.*}} {names = ["l2.weight"]
// GRAD-NEXT: %[[W2:.*]] = comm.wait %[[A2]]
// GRAD-NEXT: comm.compute(%[[W2]]) {{.*}}name = "l2", phase = #comm.phase<forward>}
// GRAD-NEXT: %[[G2:.*]] = comm.compute(%[[W2]]) {{.*}}name = "l2", phase = #comm.phase<backward>}
// GRAD-NEXT: %[[R2:.*]] = comm.reduce_scatter_start %[[G2]]
// GRAD-NEXT: %[[G1:.*]] = comm.compute(%[[W1]]) {{.*}}name = "l1", phase = #comm.phase<backward>}
// GRAD-NEXT: comm.reduce_scatter_start %[[G1]]
// GRAD-NEXT: comm.wait %[[R2]]
// GRAD-NEXT: %[[G0:.*]] = comm.compute(%[[W0]]) {{.*}}name = "l0", phase = #comm.phase<backward>}
// GRAD-NEXT: comm.reduce_scatter_start %[[G0]]
// GRAD-NOT: comm.all_gather_start

// Each gather is exposed (3 x 789.432 beside 3000 of forward); backward
// 5368.296-11368.296 hides the first two reduce-scatters; l0's
// 11368.296-12157.728 is exposed; the update -12257.728. l2's
// reduce-scatter, done by 8157.728, is waited for before backward l0 at no
// cost. Memory peaks in backward l1: the shards (0.75 MiB), l0's and l1's
// parameters, gathered since the forward (2; l2's are freed after its
// backward), l2's gradient being reduce-scattered (1) and its shard (0.25),
// and l1's gradient (1): 5 MiB.
// GRAD-ESTIMATE: step 12257.728 us
// GRAD-ESTIMATE: memory 5.000 MiB at most a rank
// GRAD-ESTIMATE-NEXT: sharded grad (ZeRO-2), 4 shards; 3 units of up to 1 MiB, prefetch 0, the fastest of 2 plans

// By cost, from 25 MiB units down: one unit of all three layers (1 plan),
// two units (l2 and l1, then l0: prefetch 0 or 1, 2 plans) and a unit per
// layer (prefetch 0, 1 or 2, each with l2's reduce-scatter waited for at
// the optimizer or before backward l0: 6 plans). The full plan above is
// the fastest, and the least memory of the plans as fast.
// BEST: step 10678.864 us
// BEST: memory 5.000 MiB
// BEST: sharded full (ZeRO-3, FSDP), 4 shards; 3 units of up to 0.78125 MiB, prefetch 1, the fastest of 9 plans

// Within 4.5 MiB only plans that gather nothing ahead and wait for l2's
// reduce-scatter before backward l0 fit (4.25 MiB): the gather of l1 for
// its backward no longer hides behind backward l2, and backward l0 waits
// for l2's reduce-scatter behind the gather of l0 on the channel; 15415.456
// us, the fastest of those plans.
// LIMIT-LABEL: func.func @train_step(
// LIMIT-SAME: prefetch = 0 : i64, scatter_lag = 1 : i64
// LIMIT: %[[R2:.*]] = comm.reduce_scatter_start %{{.*}} {names = ["l2.weight"]
// LIMIT: comm.wait %[[R2]] : tensor<65536xf32>
// LIMIT-NEXT: comm.compute({{.*}}name = "l0", phase = #comm.phase<backward>}
// LIMIT-ESTIMATE: step 15415.456 us
// LIMIT-ESTIMATE: memory 4.250 MiB at most a rank
// LIMIT-ESTIMATE-NEXT: sharded full (ZeRO-3, FSDP), 4 shards; {{.*}} within 4.5 MiB

func.func @train_step() -> (tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>) {
  comm.compute () {cost_us = 1000.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 1000.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 1000.0 : f64, layer = 2 : i64, name = "l2", phase = #comm.phase<forward>} : () -> ()
  %g2 = comm.compute () {cost_us = 2000.0 : f64, layer = 2 : i64, name = "l2", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r2 = comm.allreduce %g2 {name = "l2.weight", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %g1 = comm.compute () {cost_us = 2000.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r1 = comm.allreduce %g1 {name = "l1.weight", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %g0 = comm.compute () {cost_us = 2000.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r0 = comm.allreduce %g0 {name = "l0.weight", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  comm.compute (%r2, %r1, %r0) {cost_us = 400.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>) -> ()
  return %r2, %r1, %r0 : tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>
}
