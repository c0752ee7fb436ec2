// RUN: commopt-opt %s | FileCheck %s
// RUN: commopt-opt %s | commopt-opt | FileCheck %s
// RUN: commopt-opt %s --mlir-print-op-generic | commopt-opt | FileCheck %s

// Round trips of every comm op, in tensor and in buffer form.

// CHECK-LABEL: func.func @allreduce
func.func @allreduce(%g: tensor<1000x2048xf32>, %h: tensor<16xf64>,
                     %i: tensor<8xi32>) {
  // CHECK: comm.allreduce %{{.*}} : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  %0 = comm.allreduce %g : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  // CHECK: comm.allreduce %{{.*}} {name = "fc.weight", reduce = #comm.reduce<avg>}
  %1 = comm.allreduce %g {reduce = #comm.reduce<avg>, name = "fc.weight"}
      : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
  // CHECK: comm.allreduce %{{.*}} {reduce = #comm.reduce<max>} : tensor<16xf64>
  %2 = comm.allreduce %h {reduce = #comm.reduce<max>} : tensor<16xf64> -> tensor<16xf64>
  // CHECK: comm.allreduce %{{.*}} {reduce = #comm.reduce<min>} : tensor<8xi32>
  %3 = comm.allreduce %i {reduce = #comm.reduce<min>} : tensor<8xi32> -> tensor<8xi32>
  // The default reduction, sum, is not printed.
  // CHECK: comm.allreduce %{{.*}} : tensor<8xi32> -> tensor<8xi32>
  %4 = comm.allreduce %i {reduce = #comm.reduce<sum>} : tensor<8xi32> -> tensor<8xi32>
  return
}

// CHECK-LABEL: func.func @wire_precision
func.func @wire_precision(%g: tensor<1024xf32>, %h: tensor<4xf64>) {
  // CHECK: comm.allreduce %{{.*}} {prescale = 1.250000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16}
  %0 = comm.allreduce %g {reduce = #comm.reduce<avg>, wire = f16, prescale = 0.125}
      : tensor<1024xf32> -> tensor<1024xf32>
  // CHECK: comm.allreduce %{{.*}} {wire = bf16} : tensor<4xf64>
  %1 = comm.allreduce %h {wire = bf16} : tensor<4xf64> -> tensor<4xf64>
  return
}

// CHECK-LABEL: func.func @fused
func.func @fused(%w: tensor<1000x2048xf32>, %b: tensor<1000xf32>) {
  // CHECK: %{{.*}}:2 = comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["fc.weight", "fc.bias"], reduce = #comm.reduce<avg>} : tensor<1000x2048xf32>, tensor<1000xf32> -> tensor<1000x2048xf32>, tensor<1000xf32>
  %0:2 = comm.fused_allreduce %w, %b {names = ["fc.weight", "fc.bias"], reduce = #comm.reduce<avg>}
      : tensor<1000x2048xf32>, tensor<1000xf32> -> tensor<1000x2048xf32>, tensor<1000xf32>
  // A bucket of one gradient is allowed.
  // CHECK: comm.fused_allreduce %{{.*}} : tensor<1000xf32> -> tensor<1000xf32>
  %1 = comm.fused_allreduce %b : tensor<1000xf32> -> tensor<1000xf32>
  return
}

// Mixed-wire buckets: the flagged gradients travel in `wire`.
// CHECK-LABEL: func.func @mixed_wire
func.func @mixed_wire(%w: tensor<1000x2048xf32>, %b: tensor<1000xf32>,
                      %m: memref<64xf32>, %n: memref<8xf32>) {
  // CHECK: %{{.*}}:2 = comm.fused_allreduce %{{.*}}, %{{.*}} {narrowed = array<i1: true, false>, prescale = 1.250000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16} : tensor<1000x2048xf32>, tensor<1000xf32> -> tensor<1000x2048xf32>, tensor<1000xf32>
  %0:2 = comm.fused_allreduce %w, %b {narrowed = array<i1: true, false>,
      prescale = 0.125, reduce = #comm.reduce<avg>, wire = f16}
      : tensor<1000x2048xf32>, tensor<1000xf32> -> tensor<1000x2048xf32>, tensor<1000xf32>
  // CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {algorithm = #comm.algorithm<ring>, narrowed = array<i1: false, true>, wire = bf16} : memref<64xf32>, memref<8xf32>
  comm.fused_allreduce %m, %n {algorithm = #comm.algorithm<ring>,
      narrowed = array<i1: false, true>, wire = bf16} : memref<64xf32>, memref<8xf32>
  // CHECK: %[[T:.*]] = comm.start %{{.*}}, %{{.*}} {channel = 1 : i64, narrowed = array<i1: true, false>, wire = f16} : tensor<1000x2048xf32>, tensor<1000xf32>
  %t = comm.start %w, %b {channel = 1, narrowed = array<i1: true, false>, wire = f16}
      : tensor<1000x2048xf32>, tensor<1000xf32>
  // CHECK: comm.wait %[[T]] : tensor<1000x2048xf32>, tensor<1000xf32>
  %r:2 = comm.wait %t : tensor<1000x2048xf32>, tensor<1000xf32>
  return
}

// CHECK-LABEL: func.func @start_wait
func.func @start_wait(%w: tensor<64xf32>, %b: tensor<8xf32>, %x: tensor<4xf32>)
    -> (tensor<64xf32>, tensor<8xf32>) {
  // CHECK: %[[T:.*]] = comm.start %{{.*}}, %{{.*}} {channel = 1 : i64, priority = 0 : i64, reduce = #comm.reduce<avg>} : tensor<64xf32>, tensor<8xf32>
  %t = comm.start %w, %b {channel = 1, priority = 0, reduce = #comm.reduce<avg>}
      : tensor<64xf32>, tensor<8xf32>
  // CHECK: comm.compute(%{{.*}}) {cost_us = 1.500000e+02 : f64, name = "conv1.backward"} : (tensor<4xf32>) -> tensor<4xf32>
  %y = comm.compute (%x) {cost_us = 150.0, name = "conv1.backward"}
      : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: %{{.*}}:2 = comm.wait %[[T]] : tensor<64xf32>, tensor<8xf32>
  %r:2 = comm.wait %t : tensor<64xf32>, tensor<8xf32>
  return %r#0, %r#1 : tensor<64xf32>, tensor<8xf32>
}

// Process groups name a grid of the module and some of its axes.
shard.grid @grid(shape = 2x4x2)

// CHECK-LABEL: func.func @groups
func.func @groups(%w: tensor<64xf32>, %b: tensor<8xf32>, %m: memref<8xf32>)
    -> (tensor<64xf32>, tensor<8xf32>) {
  // CHECK: comm.allreduce %{{.*}} {group = #comm.group<@grid, axes = [1]>, reduce = #comm.reduce<avg>} : tensor<64xf32> -> tensor<64xf32>
  %0 = comm.allreduce %w {group = #comm.group<@grid, axes = [1]>, reduce = #comm.reduce<avg>}
      : tensor<64xf32> -> tensor<64xf32>
  // CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {group = #comm.group<@grid, axes = [0, 2]>} : tensor<64xf32>, tensor<8xf32>
  %1:2 = comm.fused_allreduce %w, %b {group = #comm.group<@grid, axes = [0, 2]>}
      : tensor<64xf32>, tensor<8xf32> -> tensor<64xf32>, tensor<8xf32>
  // Every axis of the grid: the same ranks as no group.
  // CHECK: %[[T:.*]] = comm.start %{{.*}} {channel = 1 : i64, group = #comm.group<@grid, axes = [0, 1, 2]>} : tensor<8xf32>
  %t = comm.start %b {channel = 1, group = #comm.group<@grid, axes = [0, 1, 2]>} : tensor<8xf32>
  // CHECK: comm.wait %[[T]] : tensor<8xf32>
  %r = comm.wait %t : tensor<8xf32>
  // CHECK: comm.allreduce %{{.*}} {group = #comm.group<@grid, axes = [2]>} : memref<8xf32>
  comm.allreduce %m {group = #comm.group<@grid, axes = [2]>} : memref<8xf32>
  // A sparse allreduce runs among a group too, in both forms.
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 2.500000e-01 : f64, exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [0, 1]>, select = #comm.select<topk>} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
  %s:2 = comm.sparse_allreduce %w, %w {density = 0.25 : f64,
      exchange = #comm.exchange<hash>, group = #comm.group<@grid, axes = [0, 1]>,
      select = #comm.select<topk>}
      : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
  // CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 5.000000e-01 : f64, exchange = #comm.exchange<allgather>, group = #comm.group<@grid, axes = [2]>, select = #comm.select<threshold>} : memref<8xf32>, memref<8xf32>
  comm.sparse_allreduce %m, %m {density = 0.5 : f64,
      exchange = #comm.exchange<allgather>, group = #comm.group<@grid, axes = [2]>,
      select = #comm.select<threshold>} : memref<8xf32>, memref<8xf32>
  return %0, %r : tensor<64xf32>, tensor<8xf32>
}

// The allreduce algorithm, on every dense collective, with or without a
// group, in tensor and in buffer form.
// CHECK-LABEL: func.func @algorithms
func.func @algorithms(%w: tensor<64xf32>, %b: tensor<8xf32>, %m: memref<8xf32>)
    -> (tensor<64xf32>, tensor<8xf32>) {
  // CHECK: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>} : tensor<64xf32> -> tensor<64xf32>
  %0 = comm.allreduce %w {algorithm = #comm.algorithm<ring>}
      : tensor<64xf32> -> tensor<64xf32>
  // CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {algorithm = #comm.algorithm<tree>, reduce = #comm.reduce<avg>} : tensor<64xf32>, tensor<8xf32>
  %1:2 = comm.fused_allreduce %w, %b {reduce = #comm.reduce<avg>, algorithm = #comm.algorithm<tree>}
      : tensor<64xf32>, tensor<8xf32> -> tensor<64xf32>, tensor<8xf32>
  // CHECK: %[[T:.*]] = comm.start %{{.*}} {algorithm = #comm.algorithm<hierarchical>, channel = 1 : i64, group = #comm.group<@grid, axes = [1]>} : tensor<8xf32>
  %t = comm.start %b {channel = 1, group = #comm.group<@grid, axes = [1]>,
                      algorithm = #comm.algorithm<hierarchical>} : tensor<8xf32>
  // CHECK: comm.wait %[[T]] : tensor<8xf32>
  %r = comm.wait %t : tensor<8xf32>
  // CHECK: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, group = #comm.group<@grid, axes = [2]>} : memref<8xf32>
  comm.allreduce %m {group = #comm.group<@grid, axes = [2]>, algorithm = #comm.algorithm<tree>} : memref<8xf32>
  // CHECK: comm.fused_allreduce %{{.*}} {algorithm = #comm.algorithm<ring>} : memref<8xf32>
  comm.fused_allreduce %m {algorithm = #comm.algorithm<ring>} : memref<8xf32>
  return %0, %r : tensor<64xf32>, tensor<8xf32>
}

// The transport, on every dense collective, in tensor and in buffer form.
// CHECK-LABEL: func.func @transports
func.func @transports(%w: tensor<64xf32>, %m: memref<8xf32>) -> tensor<64xf32> {
  // CHECK: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<tree>, transport = #comm.transport<mpi>} : tensor<64xf32> -> tensor<64xf32>
  %0 = comm.allreduce %w {transport = #comm.transport<mpi>, algorithm = #comm.algorithm<tree>}
      : tensor<64xf32> -> tensor<64xf32>
  // CHECK: comm.fused_allreduce %{{.*}} {transport = #comm.transport<nccl>} : memref<8xf32>
  comm.fused_allreduce %m {transport = #comm.transport<nccl>} : memref<8xf32>
  // CHECK: %[[T:.*]] = comm.start %{{.*}} {channel = 1 : i64, transport = #comm.transport<mpi>} : memref<8xf32>
  %t = comm.start %m {channel = 1, transport = #comm.transport<mpi>} : memref<8xf32>
  comm.wait %t
  return %0 : tensor<64xf32>
}

// CHECK-LABEL: func.func @compute
func.func @compute(%x: tensor<32x2048xf32>) {
  // CHECK: comm.compute() {cost_us = 0.000000e+00 : f64} : () -> ()
  comm.compute () {cost_us = 0.0} : () -> ()
  // CHECK: %{{.*}}:2 = comm.compute(%{{.*}}) {cost_us = 4.800000e+02 : f64, name = "fc.backward"} : (tensor<32x2048xf32>) -> (tensor<1000x2048xf32>, tensor<1000xf32>)
  %gw, %gb = comm.compute (%x) {cost_us = 480.0, name = "fc.backward"}
      : (tensor<32x2048xf32>) -> (tensor<1000x2048xf32>, tensor<1000xf32>)
  // CHECK: comm.compute() {cost_us = 9.500000e+01 : f64, layer = 7 : i64, name = "fc", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 95.0, layer = 7, name = "fc", phase = #comm.phase<forward>} : () -> ()
  // CHECK: comm.compute() {cost_us = 1.000000e+00 : f64, phase = #comm.phase<optimizer>} : () -> ()
  comm.compute () {cost_us = 1.0, phase = #comm.phase<optimizer>} : () -> ()
  return
}

// In buffer form the step writes its outputs.
// CHECK-LABEL: func.func @compute_buffers
// CHECK-SAME: (%[[X:.*]]: memref<32x2048xf32>, %[[GW:.*]]: memref<1000x2048xf32>, %[[GB:.*]]: memref<1000xf16>)
func.func @compute_buffers(%x: memref<32x2048xf32>, %gw: memref<1000x2048xf32>,
                           %gb: memref<1000xf16>) {
  // CHECK: comm.compute(%[[X]]) outs(%[[GW]], %[[GB]] : memref<1000x2048xf32>, memref<1000xf16>) {cost_us = 4.800000e+02 : f64, name = "fc"} : (memref<32x2048xf32>) -> ()
  comm.compute (%x) outs(%gw, %gb : memref<1000x2048xf32>, memref<1000xf16>)
      {cost_us = 480.0, name = "fc"} : (memref<32x2048xf32>) -> ()
  // CHECK: comm.compute() outs(%[[GB]] : memref<1000xf16>) {cost_us = 1.000000e+00 : f64} : () -> ()
  comm.compute () outs(%gb : memref<1000xf16>) {cost_us = 1.0} : () -> ()
  // The generic form lists the operand segments.
  // CHECK: comm.compute() outs(%[[GB]] : memref<1000xf16>) {cost_us = 2.000000e+00 : f64} : () -> ()
  "comm.compute"(%gb) <{cost_us = 2.0 : f64, operandSegmentSizes = array<i32: 0, 1>}> : (memref<1000xf16>) -> ()
  return
}

// CHECK-LABEL: func.func @queries
func.func @queries() -> (index, index) {
  // CHECK: comm.rank
  %r = comm.rank
  // CHECK: comm.world_size
  %n = comm.world_size
  return %r, %n : index, index
}

// CHECK-LABEL: func.func @buffer_form
func.func @buffer_form(%m: memref<8xf32>, %n: memref<?x3xf32>,
                       %s: memref<4xf32, strided<[2], offset: ?>>) {
  // CHECK: comm.allreduce %{{.*}} {reduce = #comm.reduce<avg>} : memref<8xf32>
  comm.allreduce %m {reduce = #comm.reduce<avg>} : memref<8xf32>
  // CHECK: comm.allreduce %{{.*}} : memref<4xf32, strided<[2], offset: ?>>
  comm.allreduce %s : memref<4xf32, strided<[2], offset: ?>>
  // CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} : memref<8xf32>, memref<?x3xf32>
  comm.fused_allreduce %m, %n : memref<8xf32>, memref<?x3xf32>
  // CHECK: %[[T:.*]] = comm.start %{{.*}} : memref<8xf32>
  %t = comm.start %m : memref<8xf32>
  // CHECK: comm.wait %[[T]]
  // CHECK-NOT: :
  comm.wait %t
  return
}

// Collectives communicate: they survive even when their results are unused.
// RUN: commopt-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEEP
// KEEP-LABEL: func.func @allreduce
// KEEP-COUNT-5: comm.allreduce
