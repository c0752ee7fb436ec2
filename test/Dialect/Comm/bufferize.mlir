// RUN: commopt-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// Collectives reduce their gradients' buffers in place; one-shot
// bufferization copies a gradient first only when its old value is still
// read afterwards.

// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[G:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK-NOT: memref.alloc
// CHECK: comm.allreduce %[[G]] {reduce = #comm.reduce<avg>} : memref<4xf32>
// CHECK: return %[[G]]
func.func @in_place(%g: tensor<4xf32>) -> tensor<4xf32> {
  %0 = comm.allreduce %g {reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @old_value_still_read
// CHECK-SAME: (%[[G:.*]]: memref<4xf32>)
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: memref.copy %[[G]], %[[COPY]]
// CHECK: comm.allreduce %[[COPY]] : memref<4xf32>
// CHECK: return %[[COPY]], %[[G]]
func.func @old_value_still_read(%g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %g : tensor<4xf32> -> tensor<4xf32>
  return %0, %g : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<2x2xf32>)
// CHECK: comm.fused_allreduce %[[A]], %[[B]] {names = ["a", "b"]} : memref<4xf32>, memref<2x2xf32>
// CHECK: return %[[A]], %[[B]]
func.func @fused(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %0:2 = comm.fused_allreduce %a, %b {names = ["a", "b"]}
      : tensor<4xf32>, tensor<2x2xf32> -> tensor<4xf32>, tensor<2x2xf32>
  return %0#0, %0#1 : tensor<4xf32>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @start_wait
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>)
// CHECK: %[[T:.*]] = comm.start %[[A]] {channel = 2 : i64} : memref<4xf32>
// CHECK: comm.wait %[[T]]{{$}}
// CHECK: return %[[A]]
func.func @start_wait(%a: tensor<4xf32>) -> tensor<4xf32> {
  %t = comm.start %a {channel = 2} : tensor<4xf32>
  %r = comm.wait %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// The gradient is read while its collective is in flight: the collective
// must work on a copy.
// CHECK-LABEL: func.func @read_while_in_flight
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>)
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: memref.copy %[[A]], %[[COPY]]
// CHECK: %[[T:.*]] = comm.start %[[COPY]]
// CHECK: memref.load %[[A]]
// CHECK: comm.wait %[[T]]
// CHECK: return %[[COPY]]
func.func @read_while_in_flight(%a: tensor<4xf32>) -> (tensor<4xf32>, f32) {
  %t = comm.start %a : tensor<4xf32>
  %c0 = arith.constant 0 : index
  %x = tensor.extract %a[%c0] : tensor<4xf32>
  %r = comm.wait %t : tensor<4xf32>
  return %r, %x : tensor<4xf32>, f32
}

// A compute step's tensor results become new buffers that it writes; the
// allreduce then reduces them in place. Results of other types stay.
// CHECK-LABEL: func.func @compute_results
// CHECK-SAME: (%[[X:.*]]: memref<8xf32>) -> (memref<4x2xf32>, memref<3xf16>, index)
// CHECK-NEXT: %[[GW:.*]] = memref.alloc() {{.*}}: memref<4x2xf32>
// CHECK-NEXT: %[[GB:.*]] = memref.alloc() {{.*}}: memref<3xf16>
// CHECK-NEXT: %[[N:.*]] = comm.compute(%[[X]]) outs(%[[GW]], %[[GB]] : memref<4x2xf32>, memref<3xf16>) {cost_us = 5.000000e+00 : f64, name = "l0"} : (memref<8xf32>) -> index
// CHECK-NEXT: comm.allreduce %[[GW]] : memref<4x2xf32>
// CHECK-NEXT: return %[[GW]], %[[GB]], %[[N]]
func.func @compute_results(%x: tensor<8xf32>) -> (tensor<4x2xf32>, tensor<3xf16>, index) {
  %gw, %gb, %n = comm.compute (%x) {cost_us = 5.0, name = "l0"}
      : (tensor<8xf32>) -> (tensor<4x2xf32>, tensor<3xf16>, index)
  %r = comm.allreduce %gw : tensor<4x2xf32> -> tensor<4x2xf32>
  return %r, %gb, %n : tensor<4x2xf32>, tensor<3xf16>, index
}

// A step with tensor inputs keeps the outputs it already writes.
// CHECK-LABEL: func.func @compute_keeps_outputs
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[M:.*]]: memref<2xf32>)
// CHECK-NEXT: comm.compute(%[[X]]) outs(%[[M]] : memref<2xf32>) {cost_us = 1.000000e+00 : f64} : (memref<4xf32>) -> ()
func.func @compute_keeps_outputs(%x: tensor<4xf32>, %m: memref<2xf32>) {
  comm.compute (%x) outs(%m : memref<2xf32>) {cost_us = 1.0} : (tensor<4xf32>) -> ()
  return
}

// The process group stays on the collectives in buffer form.
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @groups
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>)
// CHECK-NEXT: comm.allreduce %[[A]] {group = #comm.group<@grid, axes = [1]>} : memref<4xf32>
// CHECK-NEXT: %[[T:.*]] = comm.start %[[B]] {group = #comm.group<@grid, axes = [0]>} : memref<4xf32>
// CHECK-NEXT: comm.wait %[[T]]
func.func @groups(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  %t = comm.start %b {group = #comm.group<@grid, axes = [0]>} : tensor<4xf32>
  %1 = comm.wait %t : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
