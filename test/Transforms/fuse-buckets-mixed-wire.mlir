// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost cluster=%S/Inputs/two-ranks.json" -split-input-file | FileCheck %s
// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost mixed-wire=false cluster=%S/Inputs/two-ranks.json" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: commopt-opt %s --comm-fuse-buckets="policy=threshold" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: commopt-opt %s --comm-fuse-buckets="policy=cost cluster=%S/Inputs/two-ranks.json" -split-input-file --comm-estimate="cluster=%S/Inputs/two-ranks.json" 2>&1 | FileCheck %s --check-prefix=PRICED

// On the two-rank test cluster a ring allreduce of n bytes costs
// 50 us + n / 1000 us.

// A large gradient in f16 (80000 bytes on the wire) and a small one that
// comm-lower-precision kept in f32 (4000 bytes), both ready at the end of
// the step. Apart they cost 130 + 54 us on the channel; one mixed-wire
// bucket costs 50 + 84 = 134 us, one latency less.
// CHECK-LABEL: func.func @tail_of_small_gradients
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["fc.weight", "fc.bias"], narrowed = array<i1: true, false>, prescale = 5.000000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16}
// OFF-LABEL: func.func @tail_of_small_gradients
// OFF-NOT: narrowed
// OFF: comm.allreduce %{{.*}} {name = "fc.weight", prescale = 5.000000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16}
// OFF: comm.allreduce %{{.*}} {name = "fc.bias", reduce = #comm.reduce<avg>}
// The estimate prices the bucket's 84000 bytes: 50 + 84 = 134 us after
// the 20 us of compute.
// PRICED: comm-estimate: {{.*}}@tail_of_small_gradients
// PRICED: step {{ *}}154.000 us
// PRICED: bucket of 2: fc.weight, fc.bias {{ *}}84000
func.func @tail_of_small_gradients() -> (tensor<40000xf32>, tensor<1000xf32>) {
  %w = comm.compute () {cost_us = 10.0, name = "fc.backward"} : () -> tensor<40000xf32>
  %rw = comm.allreduce %w {name = "fc.weight", prescale = 0.5, reduce = #comm.reduce<avg>, wire = f16} : tensor<40000xf32> -> tensor<40000xf32>
  %b = comm.compute () {cost_us = 10.0, name = "bias.backward"} : () -> tensor<1000xf32>
  %rb = comm.allreduce %b {name = "fc.bias", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  return %rw, %rb : tensor<40000xf32>, tensor<1000xf32>
}

// -----

// Left alone: compute hides the f16 gradient's collective, and waiting for
// the f32 one to send both would only end later.
// CHECK-LABEL: func.func @hidden_by_compute
// CHECK-NOT: narrowed
// CHECK-COUNT-2: comm.allreduce
// CHECK-NOT: narrowed
func.func @hidden_by_compute() -> (tensor<40000xf32>, tensor<1000xf32>) {
  %w = comm.compute () {cost_us = 10.0} : () -> tensor<40000xf32>
  %rw = comm.allreduce %w {name = "fc.weight", prescale = 0.5, wire = f16} : tensor<40000xf32> -> tensor<40000xf32>
  %b = comm.compute () {cost_us = 1000.0} : () -> tensor<1000xf32>
  %rb = comm.allreduce %b {name = "fc.bias"} : tensor<1000xf32> -> tensor<1000xf32>
  return %rw, %rb : tensor<40000xf32>, tensor<1000xf32>
}

// -----

// Left alone: the f32 gradient differs from the f16 ones in more than the
// wire (its reduction), and with two narrowed kinds alike (f16 and bf16) it
// is not clear which to join.
// CHECK-LABEL: func.func @not_alike
// CHECK-NOT: narrowed
// CHECK: return
func.func @not_alike() -> (tensor<40000xf32>, tensor<1000xf32>, tensor<40000xf32>, tensor<40000xf32>, tensor<1000xf32>) {
  %w = comm.compute () {cost_us = 10.0} : () -> tensor<40000xf32>
  %rw = comm.allreduce %w {prescale = 0.5, reduce = #comm.reduce<avg>, wire = f16} : tensor<40000xf32> -> tensor<40000xf32>
  %b = comm.compute () {cost_us = 10.0} : () -> tensor<1000xf32>
  %rb = comm.allreduce %b {reduce = #comm.reduce<max>} : tensor<1000xf32> -> tensor<1000xf32>
  %x = comm.compute () {cost_us = 10.0} : () -> tensor<40000xf32>
  %rx = comm.allreduce %x {prescale = 0.5, wire = f16} : tensor<40000xf32> -> tensor<40000xf32>
  %y = comm.compute () {cost_us = 10.0} : () -> tensor<40000xf32>
  %ry = comm.allreduce %y {prescale = 0.5, wire = bf16} : tensor<40000xf32> -> tensor<40000xf32>
  %z = comm.compute () {cost_us = 10.0} : () -> tensor<1000xf32>
  %rz = comm.allreduce %z : tensor<1000xf32> -> tensor<1000xf32>
  return %rw, %rb, %rx, %ry, %rz : tensor<40000xf32>, tensor<1000xf32>, tensor<40000xf32>, tensor<40000xf32>, tensor<1000xf32>
}
