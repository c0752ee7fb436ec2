// RUN: commopt-opt %s --comm-schedule-overlap -split-input-file | FileCheck %s
// RUN: commopt-opt %s --comm-schedule-overlap="channels=1" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: commopt-opt %s --comm-schedule-overlap="channels=3" -split-input-file | FileCheck %s --check-prefix=THREE
// RUN: commopt-opt %s --comm-schedule-overlap="priorities=false" -split-input-file | FileCheck %s --check-prefix=NOPRIO
// RUN: commopt-opt %s --comm-schedule-overlap="partition-mb=1" -split-input-file | FileCheck %s --check-prefix=PART

// The start goes right after the step that produces the gradient, the wait
// right before the first use of the result; the steps in between overlap
// with the collective.
// CHECK-LABEL: func.func @after_producer
// CHECK: %[[G:.*]] = comm.compute() {{.*}} name = "grad"
// CHECK-NEXT: %[[T:.*]] = comm.start %[[G]] {names = ["g"], reduce = #comm.reduce<avg>} : tensor<4xf32>
// CHECK-NEXT: comm.compute() {{.*}} name = "other"
// CHECK-NEXT: comm.compute() {{.*}} name = "overlapped"
// CHECK-NEXT: %[[R:.*]] = comm.wait %[[T]] : tensor<4xf32>
// CHECK-NEXT: comm.compute(%[[R]]) {{.*}} name = "user"
// CHECK-NEXT: comm.compute() {{.*}} name = "after"
// CHECK-NOT: comm.allreduce
func.func @after_producer() -> tensor<4xf32> {
  %g = comm.compute () {cost_us = 1.0, name = "grad"} : () -> tensor<4xf32>
  comm.compute () {cost_us = 2.0, name = "other"} : () -> ()
  %r = comm.allreduce %g {name = "g", reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 3.0, name = "overlapped"} : () -> ()
  %u = comm.compute (%r) {cost_us = 4.0, name = "user"} : (tensor<4xf32>) -> tensor<4xf32>
  comm.compute () {cost_us = 5.0, name = "after"} : () -> ()
  return %u : tensor<4xf32>
}

// -----

// A fused bucket becomes one start/wait; it starts after the latest of its
// operands, whichever position that operand has in the bucket.
// CHECK-LABEL: func.func @fused_latest_operand
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK: %[[G1:.*]] = comm.compute() {{.*}} name = "s1"
// CHECK-NEXT: %[[G2:.*]] = comm.compute() {{.*}} name = "s2"
// CHECK-NEXT: %[[T:.*]] = comm.start %[[G2]], %[[A]], %[[G1]] {names = ["g2", "a", "g1"], reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: comm.compute() {{.*}} name = "s3"
// CHECK-NEXT: %[[R:.*]]:3 = comm.wait %[[T]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @fused_latest_operand(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g1 = comm.compute () {cost_us = 1.0, name = "s1"} : () -> tensor<4xf32>
  %g2 = comm.compute () {cost_us = 1.0, name = "s2"} : () -> tensor<4xf32>
  comm.compute () {cost_us = 1.0, name = "s3"} : () -> ()
  %r:3 = comm.fused_allreduce %g2, %a, %g1 {names = ["g2", "a", "g1"], reduce = #comm.reduce<avg>}
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return %r#0, %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Gradients that are block arguments start at the top of the block; a
// result that only the terminator uses is waited on right before it. The
// collective's attributes carry over; an unnamed one gets no `names`.
// CHECK-LABEL: func.func @block_arguments
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[TA:.*]] = comm.start %[[A]] {names = ["a"], prescale = 2.500000e-01 : f64, wire = bf16} : tensor<4xf32>
// CHECK-NEXT: %[[TB:.*]] = comm.start %[[B]] {channel = 1 : i64, reduce = #comm.reduce<max>} : tensor<4xf32>
// CHECK-NEXT: comm.compute() {{.*}} name = "work"
// CHECK-NEXT: %[[RA:.*]] = comm.wait %[[TA]] : tensor<4xf32>
// CHECK-NEXT: %[[RB:.*]] = comm.wait %[[TB]] : tensor<4xf32>
// CHECK-NEXT: return %[[RA]], %[[RB]]
func.func @block_arguments(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  comm.compute () {cost_us = 1.0, name = "work"} : () -> ()
  %ra = comm.allreduce %a {name = "a", prescale = 0.25, wire = bf16} : tensor<4xf32> -> tensor<4xf32>
  %rb = comm.allreduce %b {reduce = #comm.reduce<max>} : tensor<4xf32> -> tensor<4xf32>
  return %ra, %rb : tensor<4xf32>, tensor<4xf32>
}

// -----

// A use inside a nested region counts as a use by the op that holds it; a
// result that is never used is waited on before the terminator.
// CHECK-LABEL: func.func @nested_use
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[TX:.*]] = comm.start %[[X]]
// CHECK-NEXT: %[[TY:.*]] = comm.start %[[Y]]
// CHECK-NEXT: comm.compute() {{.*}} name = "before"
// CHECK-NEXT: %[[RX:.*]] = comm.wait %[[TX]]
// CHECK-NEXT: scf.execute_region
// CHECK-NEXT: comm.compute(%[[RX]])
// CHECK: comm.compute() {{.*}} name = "after"
// CHECK-NEXT: comm.wait %[[TY]]
// CHECK-NEXT: return
func.func @nested_use(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %rx = comm.allreduce %x {name = "x"} : tensor<4xf32> -> tensor<4xf32>
  %ry = comm.allreduce %y {name = "y"} : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 1.0, name = "before"} : () -> ()
  %u = scf.execute_region -> tensor<4xf32> {
    %v = comm.compute (%rx) {cost_us = 1.0, name = "nested"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %v : tensor<4xf32>
  }
  comm.compute () {cost_us = 1.0, name = "after"} : () -> ()
  return %u : tensor<4xf32>
}

// -----

// Collectives inside a nested block are scheduled within that block: a
// gradient from the enclosing block starts at the top of the nested block.
// CHECK-LABEL: func.func @nested_block
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[C:.*]]: i1)
// CHECK: scf.if %[[C]]
// CHECK-NEXT: %[[T:.*]] = comm.start %[[X]] {names = ["x"]}
// CHECK-NEXT: comm.compute() {{.*}} name = "then"
// CHECK-NEXT: %[[R:.*]] = comm.wait %[[T]]
// CHECK-NEXT: scf.yield %[[R]]
// CHECK: else
// CHECK-NEXT: scf.yield %[[X]]
func.func @nested_block(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    comm.compute () {cost_us = 1.0, name = "then"} : () -> ()
    %s = comm.allreduce %x {name = "x"} : tensor<4xf32> -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// A result used only in a successor block is waited on before the branch.
// CHECK-LABEL: func.func @successor_block
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[C:.*]]: i1)
// CHECK-NEXT: %[[T:.*]] = comm.start %[[A]] : tensor<4xf32>
// CHECK-NEXT: comm.compute
// CHECK-NEXT: %[[R:.*]] = comm.wait %[[T]]
// CHECK-NEXT: cf.cond_br
// CHECK: ^bb1:
// CHECK-NEXT: return %[[R]]
func.func @successor_block(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = comm.allreduce %a : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 1.0} : () -> ()
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %r : tensor<4xf32>
^bb2:
  return %a : tensor<4xf32>
}

// -----

// Several starts after one producer, and several waits before one user,
// keep the collectives' program order.
// CHECK-LABEL: func.func @program_order
// CHECK: %[[G:.*]]:3 = comm.compute()
// CHECK-NEXT: %[[T0:.*]] = comm.start %[[G]]#0 {names = ["g0"]}
// CHECK-NEXT: %[[T1:.*]] = comm.start %[[G]]#1 {channel = 1 : i64, names = ["g1"]}
// CHECK-NEXT: %[[T2:.*]] = comm.start %[[G]]#2 {names = ["g2"]}
// CHECK-NEXT: comm.compute() {{.*}} name = "work"
// CHECK-NEXT: %[[R0:.*]] = comm.wait %[[T0]]
// CHECK-NEXT: %[[R1:.*]] = comm.wait %[[T1]]
// CHECK-NEXT: %[[R2:.*]] = comm.wait %[[T2]]
// CHECK-NEXT: comm.compute(%[[R2]], %[[R0]], %[[R1]])
func.func @program_order() -> tensor<4xf32> {
  %g:3 = comm.compute () {cost_us = 1.0} : () -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r0 = comm.allreduce %g#0 {name = "g0"} : tensor<4xf32> -> tensor<4xf32>
  %r1 = comm.allreduce %g#1 {name = "g1"} : tensor<4xf32> -> tensor<4xf32>
  %r2 = comm.allreduce %g#2 {name = "g2"} : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 1.0, name = "work"} : () -> ()
  %u = comm.compute (%r2, %r0, %r1) {cost_us = 1.0}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

// A collective of a reduced gradient starts once the first one is waited on.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[T1:.*]] = comm.start %[[X]] {names = ["first"]}
// CHECK-NEXT: comm.compute() {{.*}} name = "work"
// CHECK-NEXT: %[[R1:.*]] = comm.wait %[[T1]]
// CHECK-NEXT: %[[T2:.*]] = comm.start %[[R1]] {names = ["second"]}
// CHECK-NEXT: %[[R2:.*]] = comm.wait %[[T2]]
// CHECK-NEXT: return %[[R2]]
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  comm.compute () {cost_us = 1.0, name = "work"} : () -> ()
  %r1 = comm.allreduce %x {name = "first"} : tensor<4xf32> -> tensor<4xf32>
  %r2 = comm.allreduce %r1 {name = "second"} : tensor<4xf32> -> tensor<4xf32>
  return %r2 : tensor<4xf32>
}

// -----

// Channels balance the bytes in flight: a (4 KiB), b (1 KiB), c (1 KiB),
// d (2 KiB) all start at the top and are in flight until the return.
// Two channels: a on 0; b, c, d on 1 (each time the lighter one).
// Three channels: a on 0, b on 1, c on 2; d ties channels 1 and 2 at
// 1 KiB and one collective each and takes the lower, 1.
// CHECK-LABEL: func.func @balance
// CHECK-NEXT: comm.start %{{.*}} {names = ["a"]} : tensor<1024xf32>
// CHECK-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["b"]}
// CHECK-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["c"]}
// CHECK-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["d"]}
// ONE-LABEL: func.func @balance
// ONE-NOT: channel
// ONE: return
// THREE-LABEL: func.func @balance
// THREE-NEXT: comm.start %{{.*}} {names = ["a"]} : tensor<1024xf32>
// THREE-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["b"]}
// THREE-NEXT: comm.start %{{.*}} {channel = 2 : i64, names = ["c"]}
// THREE-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["d"]}
func.func @balance(%a: tensor<1024xf32>, %b: tensor<256xf32>, %c: tensor<256xf32>, %d: tensor<512xf32>)
    -> (tensor<1024xf32>, tensor<256xf32>, tensor<256xf32>, tensor<512xf32>) {
  %ra = comm.allreduce %a {name = "a"} : tensor<1024xf32> -> tensor<1024xf32>
  %rb = comm.allreduce %b {name = "b"} : tensor<256xf32> -> tensor<256xf32>
  %rc = comm.allreduce %c {name = "c"} : tensor<256xf32> -> tensor<256xf32>
  %rd = comm.allreduce %d {name = "d"} : tensor<512xf32> -> tensor<512xf32>
  return %ra, %rb, %rc, %rd : tensor<1024xf32>, tensor<256xf32>, tensor<256xf32>, tensor<512xf32>
}

// -----

// Only bytes in flight count: once `a` is waited on, its channel is free
// again and `b` takes it rather than the channel that carries `c`.
// CHECK-LABEL: func.func @in_flight
// CHECK-NEXT: %[[TA:.*]] = comm.start %{{.*}} {names = ["a"]} : tensor<1024xf32>
// CHECK-NEXT: %[[TC:.*]] = comm.start %{{.*}} {channel = 1 : i64, names = ["c"]}
// CHECK-NEXT: comm.wait %[[TA]]
// CHECK-NEXT: %[[X:.*]] = comm.compute
// CHECK-NEXT: comm.start %[[X]] {names = ["b"]} : tensor<256xf32>
func.func @in_flight(%a: tensor<1024xf32>, %c: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %ra = comm.allreduce %a {name = "a"} : tensor<1024xf32> -> tensor<1024xf32>
  %x = comm.compute (%ra) {cost_us = 1.0} : (tensor<1024xf32>) -> tensor<256xf32>
  %rb = comm.allreduce %x {name = "b"} : tensor<256xf32> -> tensor<256xf32>
  %rc = comm.allreduce %c {name = "c"} : tensor<256xf32> -> tensor<256xf32>
  return %rb, %rc : tensor<256xf32>, tensor<256xf32>
}

// -----

// A start that was already in the input keeps its channel and its bytes
// count: the new one goes to the other channel.
// CHECK-LABEL: func.func @existing_start
// CHECK: comm.start %{{.*}} {names = ["old"]} : tensor<1024xf32>
// CHECK: comm.compute
// CHECK-NEXT: comm.start %{{.*}} {channel = 1 : i64, names = ["new"]}
func.func @existing_start(%a: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<4xf32>) {
  %t = comm.start %a {names = ["old"]} : tensor<1024xf32>
  %g = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
  %r = comm.allreduce %g {name = "new"} : tensor<4xf32> -> tensor<4xf32>
  %ra = comm.wait %t : tensor<1024xf32>
  return %ra, %r : tensor<1024xf32>, tensor<4xf32>
}

// -----

// Priorities: the smallest layer of the backward steps that produce the
// operands. Forward steps, steps without a layer, block arguments and
// other producers give none.
// CHECK-LABEL: func.func @priorities
// CHECK-NEXT: comm.start %{{.*}} {{{.*}}names = ["arg"]} : tensor<4xf32>
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.start %{{.*}} {{{.*}}names = ["w3"], priority = 3 : i64}
// CHECK-NEXT: comm.start %{{.*}}, %{{.*}} {{{.*}}names = ["arg", "w3"], priority = 3 : i64}
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.start %{{.*}}, %{{.*}} {{{.*}}names = ["w5", "w2"], priority = 2 : i64}
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.start %{{.*}} {{{.*}}names = ["fwd"]} : tensor<4xf32>
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.start %{{.*}} {{{.*}}names = ["nolayer"]} : tensor<4xf32>
// NOPRIO-LABEL: func.func @priorities
// NOPRIO-NOT: priority
// NOPRIO: return
func.func @priorities(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %w3 = comm.compute () {cost_us = 1.0, layer = 3, phase = #comm.phase<backward>} : () -> tensor<4xf32>
  %r3 = comm.allreduce %w3 {name = "w3"} : tensor<4xf32> -> tensor<4xf32>
  %w5 = comm.compute () {cost_us = 1.0, layer = 5, phase = #comm.phase<backward>} : () -> tensor<4xf32>
  %w2 = comm.compute () {cost_us = 1.0, layer = 2, phase = #comm.phase<backward>} : () -> tensor<4xf32>
  %r52:2 = comm.fused_allreduce %w5, %w2 {names = ["w5", "w2"]} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  %f = comm.compute () {cost_us = 1.0, layer = 0, phase = #comm.phase<forward>} : () -> tensor<4xf32>
  %rf = comm.allreduce %f {name = "fwd"} : tensor<4xf32> -> tensor<4xf32>
  %n = comm.compute () {cost_us = 1.0, phase = #comm.phase<backward>} : () -> tensor<4xf32>
  %rn = comm.allreduce %n {name = "nolayer"} : tensor<4xf32> -> tensor<4xf32>
  %ra = comm.allreduce %a {name = "arg"} : tensor<4xf32> -> tensor<4xf32>
  %rm:2 = comm.fused_allreduce %a, %w3 {names = ["arg", "w3"]} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return %r3, %r52#0, %r52#1, %rf, %rn, %ra, %rm#0, %rm#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The start carries the collective's process group, for single gradients,
// buckets and (PART) every piece of a partitioned gradient; collectives
// without a group get none.
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @groups
// CHECK-SAME: (%[[A:.*]]: tensor<524288xf32>, %[[B:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[TA:.*]] = comm.start %[[A]] {group = #comm.group<@grid, axes = [1]>, names = ["a"]} : tensor<524288xf32>
// CHECK-NEXT: %[[TB:.*]] = comm.start %[[B]], %[[C]] {channel = 1 : i64, group = #comm.group<@grid, axes = [0]>, reduce = #comm.reduce<max>} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[TC:.*]] = comm.start %[[C]] {channel = 1 : i64} : tensor<4xf32>
// PART-LABEL: func.func @groups
// PART: comm.start %{{.*}} {group = #comm.group<@grid, axes = [1]>, names = ["a"]} : tensor<262144xf32>
// PART: comm.start %{{.*}} {channel = 1 : i64, group = #comm.group<@grid, axes = [1]>, names = ["a"]} : tensor<262144xf32>
func.func @groups(%a: tensor<524288xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>)
    -> (tensor<524288xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {group = #comm.group<@grid, axes = [1]>, name = "a"} : tensor<524288xf32> -> tensor<524288xf32>
  %1:2 = comm.fused_allreduce %b, %c {group = #comm.group<@grid, axes = [0]>, reduce = #comm.reduce<max>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  %2 = comm.allreduce %c : tensor<4xf32> -> tensor<4xf32>
  return %0, %1#0, %1#1, %2 : tensor<524288xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Left alone: collectives already split, buffer-form collectives, and
// other ops.
// CHECK-LABEL: func.func @left_alone
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[M:.*]]: memref<4xf32>, %[[N:.*]]: memref<8xf32>)
// CHECK-NEXT: %[[T:.*]] = comm.start %[[A]] {channel = 5 : i64, priority = 9 : i64} : tensor<4xf32>
// CHECK-NEXT: comm.allreduce %[[M]] : memref<4xf32>
// CHECK-NEXT: comm.fused_allreduce %[[M]], %[[N]] : memref<4xf32>, memref<8xf32>
// CHECK-NEXT: comm.compute
// CHECK-NEXT: %[[R:.*]] = comm.wait %[[T]] : tensor<4xf32>
// CHECK-NEXT: return %[[R]]
func.func @left_alone(%a: tensor<4xf32>, %m: memref<4xf32>, %n: memref<8xf32>) -> tensor<4xf32> {
  %t = comm.start %a {channel = 5, priority = 9} : tensor<4xf32>
  comm.allreduce %m : memref<4xf32>
  comm.fused_allreduce %m, %n : memref<4xf32>, memref<8xf32>
  comm.compute () {cost_us = 1.0} : () -> ()
  %r = comm.wait %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The shape profile importers produce: forward steps, then backward steps
// in reverse layer order, each followed by its gradients' allreduces, and
// all reduced gradients returned. Each gradient starts as soon as its
// backward step ends and overlaps the remaining backward steps; the ones
// of the first layers, which the next forward needs first, are most urgent.
// Bytes in flight per channel: fc.weight (8160) on 0, fc.bias (40) on 1,
// conv2.weight (8192) on 1 (40 < 8160), conv2.bias (64) on 0
// (8160 < 8232), conv1.weight (1024) on 0 (8224 < 8232).
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: comm.compute() {{.*}} name = "conv1", phase = #comm.phase<forward>
// CHECK-NEXT: comm.compute() {{.*}} name = "conv2", phase = #comm.phase<forward>
// CHECK-NEXT: comm.compute() {{.*}} name = "fc", phase = #comm.phase<forward>
// CHECK-NEXT: %[[FC:.*]]:2 = comm.compute() {{.*}} name = "fc", phase = #comm.phase<backward>
// CHECK-NEXT: %[[T0:.*]] = comm.start %[[FC]]#0 {names = ["fc.weight"], priority = 2 : i64, reduce = #comm.reduce<avg>} : tensor<10x204xf32>
// CHECK-NEXT: %[[T1:.*]] = comm.start %[[FC]]#1 {channel = 1 : i64, names = ["fc.bias"], priority = 2 : i64, reduce = #comm.reduce<avg>} : tensor<10xf32>
// CHECK-NEXT: %[[C2:.*]]:2 = comm.compute() {{.*}} name = "conv2", phase = #comm.phase<backward>
// CHECK-NEXT: %[[T2:.*]] = comm.start %[[C2]]#0 {channel = 1 : i64, names = ["conv2.weight"], priority = 1 : i64, reduce = #comm.reduce<avg>} : tensor<16x8x4x4xf32>
// CHECK-NEXT: %[[T3:.*]] = comm.start %[[C2]]#1 {names = ["conv2.bias"], priority = 1 : i64, reduce = #comm.reduce<avg>} : tensor<16xf32>
// CHECK-NEXT: %[[C1:.*]] = comm.compute() {{.*}} name = "conv1", phase = #comm.phase<backward>
// CHECK-NEXT: %[[T4:.*]] = comm.start %[[C1]] {names = ["conv1.weight"], priority = 0 : i64, reduce = #comm.reduce<avg>} : tensor<8x1x4x8xf32>
// CHECK-NEXT: %[[R0:.*]] = comm.wait %[[T0]] : tensor<10x204xf32>
// CHECK-NEXT: %[[R1:.*]] = comm.wait %[[T1]] : tensor<10xf32>
// CHECK-NEXT: %[[R2:.*]] = comm.wait %[[T2]] : tensor<16x8x4x4xf32>
// CHECK-NEXT: %[[R3:.*]] = comm.wait %[[T3]] : tensor<16xf32>
// CHECK-NEXT: %[[R4:.*]] = comm.wait %[[T4]] : tensor<8x1x4x8xf32>
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @train_step() -> (tensor<10x204xf32>, tensor<10xf32>, tensor<16x8x4x4xf32>, tensor<16xf32>, tensor<8x1x4x8xf32>) {
  comm.compute () {cost_us = 100.0, layer = 0, name = "conv1", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 200.0, layer = 1, name = "conv2", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 50.0, layer = 2, name = "fc", phase = #comm.phase<forward>} : () -> ()
  %fc:2 = comm.compute () {cost_us = 100.0, layer = 2, name = "fc", phase = #comm.phase<backward>} : () -> (tensor<10x204xf32>, tensor<10xf32>)
  %0 = comm.allreduce %fc#0 {name = "fc.weight", reduce = #comm.reduce<avg>} : tensor<10x204xf32> -> tensor<10x204xf32>
  %1 = comm.allreduce %fc#1 {name = "fc.bias", reduce = #comm.reduce<avg>} : tensor<10xf32> -> tensor<10xf32>
  %c2:2 = comm.compute () {cost_us = 400.0, layer = 1, name = "conv2", phase = #comm.phase<backward>} : () -> (tensor<16x8x4x4xf32>, tensor<16xf32>)
  %2 = comm.allreduce %c2#0 {name = "conv2.weight", reduce = #comm.reduce<avg>} : tensor<16x8x4x4xf32> -> tensor<16x8x4x4xf32>
  %3 = comm.allreduce %c2#1 {name = "conv2.bias", reduce = #comm.reduce<avg>} : tensor<16xf32> -> tensor<16xf32>
  %c1 = comm.compute () {cost_us = 200.0, layer = 0, name = "conv1", phase = #comm.phase<backward>} : () -> tensor<8x1x4x8xf32>
  %4 = comm.allreduce %c1 {name = "conv1.weight", reduce = #comm.reduce<avg>} : tensor<8x1x4x8xf32> -> tensor<8x1x4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<10x204xf32>, tensor<10xf32>, tensor<16x8x4x4xf32>, tensor<16xf32>, tensor<8x1x4x8xf32>
}

// -----

// Partitioning with a 1 MiB cap (262144 f32). A 2-D gradient of 2 MiB is
// flattened, cut into 2 pieces and put back together.
// PART-LABEL: func.func @partition_2d
// PART-SAME: (%[[G:.*]]: tensor<512x1024xf32>)
// PART-NEXT: %[[FLAT:.*]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1]] : tensor<512x1024xf32> into tensor<524288xf32>
// PART-NEXT: %[[S0:.*]] = tensor.extract_slice %[[FLAT]][0] [262144] [1] : tensor<524288xf32> to tensor<262144xf32>
// PART-NEXT: %[[T0:.*]] = comm.start %[[S0]] {names = ["w"], reduce = #comm.reduce<avg>} : tensor<262144xf32>
// PART-NEXT: %[[S1:.*]] = tensor.extract_slice %[[FLAT]][262144] [262144] [1] : tensor<524288xf32> to tensor<262144xf32>
// PART-NEXT: %[[T1:.*]] = comm.start %[[S1]] {channel = 1 : i64, names = ["w"], reduce = #comm.reduce<avg>} : tensor<262144xf32>
// PART-NEXT: comm.compute
// PART-NEXT: %[[E:.*]] = tensor.empty() : tensor<524288xf32>
// PART-NEXT: %[[R0:.*]] = comm.wait %[[T0]] : tensor<262144xf32>
// PART-NEXT: %[[I0:.*]] = tensor.insert_slice %[[R0]] into %[[E]][0] [262144] [1] : tensor<262144xf32> into tensor<524288xf32>
// PART-NEXT: %[[R1:.*]] = comm.wait %[[T1]] : tensor<262144xf32>
// PART-NEXT: %[[I1:.*]] = tensor.insert_slice %[[R1]] into %[[I0]][262144] [262144] [1] : tensor<262144xf32> into tensor<524288xf32>
// PART-NEXT: %[[W:.*]] = tensor.expand_shape %[[I1]] {{\[}}[0, 1]] output_shape [512, 1024] : tensor<524288xf32> into tensor<512x1024xf32>
// PART-NEXT: return %[[W]]
func.func @partition_2d(%g: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %r = comm.allreduce %g {name = "w", reduce = #comm.reduce<avg>} : tensor<512x1024xf32> -> tensor<512x1024xf32>
  comm.compute () {cost_us = 1.0} : () -> ()
  return %r : tensor<512x1024xf32>
}

// -----

// Pieces are of near-equal size: 3 MiB + 4 bytes make 4 pieces, and the
// first holds the extra element. Each piece gets the whole's priority and
// its own channel. A 1-D gradient needs no reshaping.
// PART-LABEL: func.func @partition_uneven
// PART: %[[G:.*]] = comm.compute()
// PART-NEXT: %[[S0:.*]] = tensor.extract_slice %[[G]][0] [196609] [1] : tensor<786433xf32> to tensor<196609xf32>
// PART-NEXT: %[[T0:.*]] = comm.start %[[S0]] {names = ["big"], priority = 4 : i64}
// PART-NEXT: %[[S1:.*]] = tensor.extract_slice %[[G]][196609] [196608] [1] : tensor<786433xf32> to tensor<196608xf32>
// PART-NEXT: %[[T1:.*]] = comm.start %[[S1]] {channel = 1 : i64, names = ["big"], priority = 4 : i64}
// PART-NEXT: %[[S2:.*]] = tensor.extract_slice %[[G]][393217] [196608] [1] : tensor<786433xf32> to tensor<196608xf32>
// PART-NEXT: %[[T2:.*]] = comm.start %[[S2]] {channel = 1 : i64, names = ["big"], priority = 4 : i64}
// PART-NEXT: %[[S3:.*]] = tensor.extract_slice %[[G]][589825] [196608] [1] : tensor<786433xf32> to tensor<196608xf32>
// PART-NEXT: %[[T3:.*]] = comm.start %[[S3]] {names = ["big"], priority = 4 : i64}
// PART-NEXT: %[[E:.*]] = tensor.empty() : tensor<786433xf32>
// PART-NEXT: comm.wait %[[T0]]
// PART-NEXT: tensor.insert_slice {{.*}} into %[[E]][0] [196609] [1]
// PART-NEXT: comm.wait %[[T1]]
// PART-NEXT: tensor.insert_slice {{.*}}[196609] [196608] [1]
// PART-NEXT: comm.wait %[[T2]]
// PART-NEXT: tensor.insert_slice {{.*}}[393217] [196608] [1]
// PART-NEXT: comm.wait %[[T3]]
// PART-NEXT: %[[W:.*]] = tensor.insert_slice {{.*}}[589825] [196608] [1]
// PART-NEXT: return %[[W]]
func.func @partition_uneven() -> tensor<786433xf32> {
  %g = comm.compute () {cost_us = 1.0, layer = 4, phase = #comm.phase<backward>} : () -> tensor<786433xf32>
  %r = comm.allreduce %g {name = "big"} : tensor<786433xf32> -> tensor<786433xf32>
  return %r : tensor<786433xf32>
}

// -----

// The element size counts: 2 MiB + 2 bytes of f16 make 3 pieces.
// PART-LABEL: func.func @partition_f16
// PART: tensor.extract_slice %{{.*}}[0] [349526] [1]
// PART: tensor.extract_slice %{{.*}}[349526] [349526] [1]
// PART: tensor.extract_slice %{{.*}}[699052] [349525] [1]
// PART-NOT: tensor.extract_slice
// PART: return
func.func @partition_f16(%g: tensor<1048577xf16>) -> tensor<1048577xf16> {
  %r = comm.allreduce %g : tensor<1048577xf16> -> tensor<1048577xf16>
  return %r : tensor<1048577xf16>
}

// -----

// Not partitioned: a gradient of exactly the cap, a fused bucket above it,
// and a gradient of dynamic shape.
// PART-LABEL: func.func @not_partitioned
// PART-NOT: tensor.
// PART: comm.start %{{.*}} : tensor<262144xf32>
// PART-NOT: tensor.
// PART: comm.start %{{.*}}, %{{.*}} {channel = 1 : i64} : tensor<262144xf32>, tensor<262144xf32>
// PART-NOT: tensor.
// PART: comm.start %{{.*}} : tensor<?xf32>
// PART-NOT: tensor.
// PART: return
func.func @not_partitioned(%a: tensor<262144xf32>, %b: tensor<262144xf32>, %c: tensor<262144xf32>, %d: tensor<?xf32>)
    -> (tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>, tensor<?xf32>) {
  %ra = comm.allreduce %a : tensor<262144xf32> -> tensor<262144xf32>
  %rbc:2 = comm.fused_allreduce %b, %c : tensor<262144xf32>, tensor<262144xf32> -> tensor<262144xf32>, tensor<262144xf32>
  %rd = comm.allreduce %d : tensor<?xf32> -> tensor<?xf32>
  return %ra, %rbc#0, %rbc#1, %rd : tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>, tensor<?xf32>
}

// -----

// A start names the gradients its collective names: none for an unnamed
// allreduce or a bucket of empty names, the bucket's names as they are when
// one is not empty.
// ONE-LABEL: func.func @start_names
// ONE-NEXT: comm.start %{{.*}} {reduce = #comm.reduce<avg>} : tensor<4xf32>
// ONE-NEXT: comm.start %{{.*}}, %{{.*}} {reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32>
// ONE-NEXT: comm.start %{{.*}}, %{{.*}} {names = ["", "b"], reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32>
func.func @start_names(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r = comm.allreduce %a {reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  %e:2 = comm.fused_allreduce %a, %b {names = ["", ""], reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  %n:2 = comm.fused_allreduce %a, %b {names = ["", "b"], reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return %r, %e#0, %e#1, %n#0, %n#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The start keeps the collective's algorithm and transport.
// CHECK-LABEL: func.func @keeps_transport
// CHECK: comm.start %{{.*}} {algorithm = #comm.algorithm<tree>, names = ["g"], transport = #comm.transport<mpi>} : tensor<4xf32>
func.func @keeps_transport() -> tensor<4xf32> {
  %g = comm.compute () {cost_us = 1.0, name = "grad"} : () -> tensor<4xf32>
  %r = comm.allreduce %g {algorithm = #comm.algorithm<tree>, name = "g",
                          transport = #comm.transport<mpi>}
      : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 3.0, name = "overlapped"} : () -> ()
  return %r : tensor<4xf32>
}
