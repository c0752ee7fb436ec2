// RUN: commopt-opt %s --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json" | FileCheck %s

// Small layers fuse: with 3 us of compute per layer, every collective's
// 3 us of latency shows, and two layers of about 4 KiB each cost less to
// gather and reduce-scatter together. The fastest plan makes them one unit
// (FSDP's flat parameter): 1000 + 10 + 1024 + 100 = 2134 elements in shards
// of 534, the last with 2 of padding. Each layer's compute takes its own
// parameters from the gather; the unit's gradients are reduce-scattered
// once the last of them (fc1's, in backward order) is produced, and the
// optimizer's other result stays where it was returned.
// CHECK-LABEL: func.func @small_layers(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<534xf32> {comm.names = ["fc2.weight", "fc2.bias", "fc1.weight", "fc1.bias"]})
// CHECK-SAME: -> (i32, tensor<534xf32>)
// CHECK-SAME: units = 1 : i64
// CHECK: %[[A:.*]] = comm.all_gather_start %[[S]] {names = ["fc2.weight", "fc2.bias", "fc1.weight", "fc1.bias"], shards = 4 : i64} : tensor<534xf32>
// CHECK-NEXT: %[[W:.*]]:4 = comm.wait %[[A]] : tensor<10x100xf32>, tensor<10xf32>, tensor<1024xf32>, tensor<100xf32>
// CHECK-NEXT: comm.compute(%[[W]]#2, %[[W]]#3) {{.*}}name = "fc1", phase = #comm.phase<forward>}
// CHECK-NEXT: comm.compute(%[[W]]#0, %[[W]]#1) {{.*}}name = "fc2", phase = #comm.phase<forward>}
// CHECK: %[[G2:.*]]:2 = comm.compute(%[[W]]#0, %[[W]]#1) {{.*}}name = "fc2", phase = #comm.phase<backward>}
// CHECK-NEXT: %[[G1:.*]]:2 = comm.compute(%[[W]]#2, %[[W]]#3) {{.*}}name = "fc1", phase = #comm.phase<backward>}
// CHECK-NEXT: %[[R:.*]] = comm.reduce_scatter_start %[[G2]]#0, %[[G2]]#1, %[[G1]]#0, %[[G1]]#1 {names = ["fc2.weight", "fc2.bias", "fc1.weight", "fc1.bias"], reduce = #comm.reduce<avg>, shards = 4 : i64}
// CHECK-NEXT: %[[H:.*]] = comm.wait %[[R]] : tensor<534xf32>
// CHECK-NEXT: %[[U:.*]]:2 = comm.compute(%[[H]], %[[S]]) {cost_us = 2.500000e+00 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<534xf32>, tensor<534xf32>) -> (tensor<534xf32>, i32)
// CHECK-NEXT: return %[[U]]#1, %[[U]]#0 : i32, tensor<534xf32>
func.func @small_layers() -> (i32, tensor<10x100xf32>, tensor<10xf32>, tensor<1024xf32>, tensor<100xf32>) {
  comm.compute () {cost_us = 1.0 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 1.0 : f64, layer = 1 : i64, name = "fc2", phase = #comm.phase<forward>} : () -> ()
  %g2:2 = comm.compute () {cost_us = 2.0 : f64, layer = 1 : i64, name = "fc2", phase = #comm.phase<backward>} : () -> (tensor<10x100xf32>, tensor<10xf32>)
  %w2 = comm.allreduce %g2#0 {name = "fc2.weight", reduce = #comm.reduce<avg>} : tensor<10x100xf32> -> tensor<10x100xf32>
  %b2 = comm.allreduce %g2#1 {name = "fc2.bias", reduce = #comm.reduce<avg>} : tensor<10xf32> -> tensor<10xf32>
  %g1:2 = comm.compute () {cost_us = 2.0 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> (tensor<1024xf32>, tensor<100xf32>)
  %w1 = comm.allreduce %g1#0 {name = "fc1.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
  %b1 = comm.allreduce %g1#1 {name = "fc1.bias", reduce = #comm.reduce<avg>} : tensor<100xf32> -> tensor<100xf32>
  %n = comm.compute (%w2, %b2, %w1, %b1) {cost_us = 10.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<10x100xf32>, tensor<10xf32>, tensor<1024xf32>, tensor<100xf32>) -> i32
  return %n, %w2, %b2, %w1, %b1 : i32, tensor<10x100xf32>, tensor<10xf32>, tensor<1024xf32>, tensor<100xf32>
}

// Layers without forward steps: gathered before the step's forward
// comm.compute without a layer (a profile that timed the forward pass
// whole), which takes them, or at the start of a step without one.
// CHECK-LABEL: func.func @whole_forward(
// CHECK-NEXT: %[[A:.*]] = comm.all_gather_start
// CHECK-NEXT: %[[W:.*]] = comm.wait %[[A]] : tensor<8xf32>
// CHECK-NEXT: comm.compute(%[[W]]) {cost_us = 5.000000e+00 : f64, name = "forward", phase = #comm.phase<forward>}
// CHECK-LABEL: func.func @backward_only(
// CHECK-NEXT: %[[A:.*]] = comm.all_gather_start
// CHECK-NEXT: %[[W:.*]] = comm.wait %[[A]] : tensor<8xf32>
// CHECK-NEXT: comm.compute(%[[W]]) {{.*}}phase = #comm.phase<backward>}
func.func @whole_forward() -> tensor<8xf32> {
  comm.compute () {cost_us = 5.0 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 1.0 : f64, layer = 5 : i64, phase = #comm.phase<backward>} : () -> tensor<8xf32>
  %a = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}
func.func @backward_only() -> tensor<8xf32> {
  %g = comm.compute () {cost_us = 1.0 : f64, layer = 5 : i64, phase = #comm.phase<backward>} : () -> tensor<8xf32>
  %a = comm.allreduce %g : tensor<8xf32> -> tensor<8xf32>
  return %a : tensor<8xf32>
}

// Left alone: a function without allreduces (an already sharded step), and
// a declaration.
// CHECK-LABEL: func.func @no_allreduces(%{{.*}}: tensor<1024xf32>) -> tensor<256xf32> {
// CHECK-NEXT: comm.reduce_scatter %{{.*}} {shards = 4 : i64}
// CHECK-NOT: comm.shard_plan
// CHECK: func.func private @external() -> tensor<8xf32>
func.func @no_allreduces(%g: tensor<1024xf32>) -> tensor<256xf32> {
  %s = comm.reduce_scatter %g {shards = 4} : tensor<1024xf32> -> tensor<256xf32>
  return %s : tensor<256xf32>
}
func.func private @external() -> tensor<8xf32>
