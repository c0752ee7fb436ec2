// RUN: commopt-opt %s -split-input-file --convert-comm-to-runtime | FileCheck %s
// RUN: commopt-opt %s -split-input-file --convert-comm-to-runtime="compute-delay" | FileCheck %s --check-prefix=DELAY

// A compute step fills its outputs with synthetic gradient values, each
// with its element count and commrt_dtype (f32 0, f64 1, f16 2, bf16 3);
// with compute-delay it then sleeps what is left of its cost since it
// began, before the fills.
// CHECK-LABEL: func.func @outputs
// CHECK-NOT: commrt_time_us
// CHECK: %[[N0:.*]] = arith.constant 8 : i64
// CHECK: %[[T0:.*]] = arith.constant 0 : i32
// CHECK: %[[S0:.*]] = call @commrt_fill_gradient(%{{.*}}, %[[N0]], %[[T0]]) : (!llvm.ptr, i64, i32) -> i32
// CHECK: call @commrt_abort_on_error(%[[S0]])
// CHECK: %[[N1:.*]] = arith.constant 6 : i64
// CHECK: %[[T1:.*]] = arith.constant 2 : i32
// CHECK: call @commrt_fill_gradient(%{{.*}}, %[[N1]], %[[T1]])
// CHECK: %[[T2:.*]] = arith.constant 3 : i32
// CHECK: call @commrt_fill_gradient(%{{.*}}, %{{.*}}, %[[T2]])
// CHECK: %[[T3:.*]] = arith.constant 1 : i32
// CHECK: call @commrt_fill_gradient(%{{.*}}, %{{.*}}, %[[T3]])
// CHECK-NOT: commrt_sleep
// CHECK-NOT: comm.compute
// CHECK: return

// DELAY-LABEL: func.func @outputs
// DELAY: %[[BEGAN:.*]] = call @commrt_time_us() : () -> f64
// DELAY-COUNT-4: call @commrt_fill_gradient
// DELAY: %[[COST:.*]] = arith.constant 2.500000e+02 : f64
// DELAY-NEXT: call @commrt_sleep_since_us(%[[COST]], %[[BEGAN]]) : (f64, f64) -> ()
// DELAY-NOT: comm.compute
// DELAY: func.func private @commrt_time_us() -> f64
// DELAY: func.func private @commrt_sleep_since_us(f64, f64)
func.func @outputs(%x: memref<8xf32>, %a: memref<8xf32>, %b: memref<2x3xf16>,
                   %c: memref<5xbf16>, %d: memref<7xf64>) {
  comm.compute (%x) outs(%a, %b, %c, %d : memref<8xf32>, memref<2x3xf16>,
                                          memref<5xbf16>, memref<7xf64>)
      {cost_us = 250.0, name = "l0"} : (memref<8xf32>) -> ()
  return
}

// -----

// A step without outputs: nothing, or with compute-delay its sleep.
// CHECK-LABEL: func.func @no_outputs
// CHECK-NEXT: return
// DELAY-LABEL: func.func @no_outputs
// DELAY-NEXT: %[[BEGAN:.*]] = call @commrt_time_us()
// DELAY-NEXT: %[[COST:.*]] = arith.constant 9.500000e+01 : f64
// DELAY-NEXT: call @commrt_sleep_since_us(%[[COST]], %[[BEGAN]])
// DELAY-NEXT: return
func.func @no_outputs() {
  comm.compute () {cost_us = 95.0} : () -> ()
  return
}

// -----

// A dynamic output is filled with its runtime size.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[DIM:.*]] = memref.dim
// CHECK: %[[COUNT:.*]] = arith.index_cast %[[DIM]] : index to i64
// CHECK: call @commrt_fill_gradient(%{{.*}}, %[[COUNT]], %{{.*}})
func.func @dynamic(%a: memref<?xf32>) {
  comm.compute () outs(%a : memref<?xf32>) {cost_us = 1.0} : () -> ()
  return
}
