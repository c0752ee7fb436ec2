// RUN: commopt-opt %s -split-input-file -verify-diagnostics --comm-add-step-driver=steps=3 | FileCheck %s

// An imported profile's step takes nothing: @main calls it 3 times, each
// between a barrier and the report of its time, with every status checked.
// CHECK-LABEL: func.func @train_step
// CHECK-LABEL: func.func private @commrt_barrier() -> i32
// CHECK: func.func private @commrt_time_us() -> f64
// CHECK: func.func private @commrt_report_step_us(i64, f64) -> i32
// CHECK: func.func private @commrt_abort_on_error(i32)
// CHECK-LABEL: func.func @main()
// CHECK: %[[STEPS:.*]] = arith.constant 3 : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[STEPS]] step
// CHECK-NEXT: %[[B:.*]] = func.call @commrt_barrier()
// CHECK-NEXT: func.call @commrt_abort_on_error(%[[B]])
// CHECK-NEXT: %[[T0:.*]] = func.call @commrt_time_us()
// CHECK-NEXT: func.call @train_step() : () -> (tensor<16xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[T1:.*]] = func.call @commrt_time_us()
// CHECK-NEXT: %[[US:.*]] = arith.subf %[[T1]], %[[T0]] : f64
// CHECK-NEXT: %[[STEP:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT: %[[R:.*]] = func.call @commrt_report_step_us(%[[STEP]], %[[US]])
// CHECK-NEXT: func.call @commrt_abort_on_error(%[[R]])
func.func @train_step() -> (tensor<16xf32>, tensor<4xf32>) {
  %g0, %g1 = comm.compute() {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> (tensor<16xf32>, tensor<4xf32>)
  %r0 = comm.allreduce %g0 : tensor<16xf32> -> tensor<16xf32>
  %r1 = comm.allreduce %g1 : tensor<4xf32> -> tensor<4xf32>
  return %r0, %r1 : tensor<16xf32>, tensor<4xf32>
}

// -----

// A step with arguments gets fresh ones each step, filled with 1: tensors
// and memrefs of static shape, and scalars. The private helper is not a
// candidate step; the memref the driver allocates is freed.
// CHECK-LABEL: func.func @main()
// CHECK: scf.for
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: %[[T:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[E]] : tensor<2x3xf32>)
// CHECK: %[[M:.*]] = memref.alloc() : memref<8xi32>
// CHECK: linalg.fill ins(%{{.*}} : i32) outs(%[[M]] : memref<8xi32>)
// CHECK: %[[S:.*]] = arith.constant 1 : index
// CHECK: func.call @step(%[[T]], %[[M]], %[[S]])
// CHECK: memref.dealloc %[[M]]
func.func private @helper() {
  return
}
func.func @step(%t: tensor<2x3xf32>, %m: memref<8xi32>, %n: index) -> tensor<2x3xf32> {
  call @helper() : () -> ()
  %r = comm.allreduce %t : tensor<2x3xf32> -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// With several public functions, the step is named by `function`.
// expected-error@below {{comm-add-step-driver: the module has 2 public functions with a body (@forward, @backward); name the step with function=}}
module {
  func.func @forward() {
    return
  }
  func.func @backward() {
    return
  }
}

// -----

// expected-error@below {{comm-add-step-driver: the module already has a @main}}
module {
  func.func @main() {
    return
  }
}

// -----

// expected-error@below {{comm-add-step-driver: the module has no public function with a body to run}}
module {
  func.func private @only_private() {
    return
  }
}

// -----

module {
  // expected-error@below {{comm-add-step-driver: argument 0 of @dynamic has type 'tensor<?xf32>', which the driver cannot make}}
  func.func @dynamic(%t: tensor<?xf32>) {
    return
  }
}

// -----

// A symbol the runtime needs that is something else is an error.
module {
  func.func @step() {
    return
  }
  // expected-error@below {{comm-add-step-driver: @commrt_barrier is taken by something else than the runtime's '() -> i32'}}
  func.func private @commrt_barrier(i64) -> i32
}

