// Mixed-wire buckets on 4 ranks: one comm.fused_allreduce carries two
// gradients in f16 and two in f32 (`narrowed`), lowered to one
// `commrt_mixed_allreduce`, blocking and, after comm-schedule-overlap, as a
// start/wait pair on a channel. Every rank checks the results against the
// f64 references it computes from all ranks' gradients
// (Inputs/wire-checks.mlir): the f32 gradients must be exactly the f32
// reduction's (the exact one exact, the inexact one within f32's rounding),
// and the f16 ones within f16's rounding but not within f32's, which shows
// that they went through f16 while sharing the message with f32 data.
//
// RUN: cat %s %S/Inputs/wire-checks.mlir > %t.in.mlir
// RUN: commopt-opt %t.in.mlir --commopt-lower-to-llvm -o %t.blocking.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.blocking.mlir
// RUN: commopt-opt %t.in.mlir --comm-schedule-overlap="channels=2" -o %t.overlap.plan.mlir
// RUN: FileCheck %s --check-prefix=OVERLAP < %t.overlap.plan.mlir
// RUN: commopt-opt %t.overlap.plan.mlir --commopt-lower-to-llvm -o %t.overlap.mlir
//
// RUN: rm -rf %t.blocking.out %t.overlap.out
// RUN: %mpirun -np 4 --output-filename %t.blocking.out mlir-runner %t.blocking.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: %mpirun -np 4 --output-filename %t.overlap.out mlir-runner %t.overlap.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
//
// RUN: FileCheck %s < %t.blocking.out/1/rank.0/stdout
// RUN: FileCheck %s < %t.blocking.out/1/rank.1/stdout
// RUN: FileCheck %s < %t.blocking.out/1/rank.2/stdout
// RUN: FileCheck %s < %t.blocking.out/1/rank.3/stdout
// RUN: FileCheck %s < %t.overlap.out/1/rank.0/stdout
// RUN: FileCheck %s < %t.overlap.out/1/rank.1/stdout
// RUN: FileCheck %s < %t.overlap.out/1/rank.2/stdout
// RUN: FileCheck %s < %t.overlap.out/1/rank.3/stdout

// One runtime call per bucket, with the flags in operand order.
// LOWERED-NOT: @commrt_fused_allreduce
// LOWERED-COUNT-2: llvm.call @commrt_mixed_allreduce(
// LOWERED-NOT: @commrt_fused_allreduce
// LOWERED: llvm.func @commrt_mixed_allreduce(i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, f32) -> i32

// The start keeps the bucket's flags.
// OVERLAP-COUNT-2: comm.start {{.*}}narrowed = array<i1: true, true, false, false>{{.*}}wire = f16

// Sum, then avg, each as: the f16 exact gradient, the f16 verdict, the f32
// exact gradient, the f32 verdict. Verdicts: [exact gradient exact, within
// the f32 bound, within the f16 bound, within the bf16 bound].
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  -50,  2.5,  163840,  0]
// CHECK-NEXT: data =
// CHECK-NEXT: [1,  0,  1,  1]
// CHECK-NEXT: data =
// CHECK-NEXT: [10,  20,  30,  -50,  2.5,  163840,  0]
// CHECK-NEXT: data =
// CHECK-NEXT: [1,  1,  1,  1]
// CHECK-NEXT: data =
// CHECK-NEXT: [2.5,  5,  7.5,  -12.5,  0.625,  40960,  0]
// CHECK-NEXT: data =
// CHECK-NEXT: [1,  0,  1,  1]
// CHECK-NEXT: data =
// CHECK-NEXT: [2.5,  5,  7.5,  -12.5,  0.625,  40960,  0]
// CHECK-NEXT: data =
// CHECK-NEXT: [1,  1,  1,  1]
// CHECK-NOT: data =

// @print, @verdict and the gradients: Inputs/wire-checks.mlir.

func.func @print_both(%exact: tensor<7xf32>, %inexact: tensor<256xf32>,
                      %size: index, %divisor: f64) {
  %e = tensor.cast %exact : tensor<7xf32> to tensor<?xf32>
  call @print(%e) : (tensor<?xf32>) -> ()
  %v = call @verdict(%exact, %inexact, %size, %divisor) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> tensor<4xf32>
  %vd = tensor.cast %v : tensor<4xf32> to tensor<?xf32>
  call @print(%vd) : (tensor<?xf32>) -> ()
  return
}

func.func @main() {
  %rank = comm.rank
  %size = comm.world_size

  %ge = tensor.generate {
  ^bb0(%i: index):
    %v = func.call @exact_value(%rank, %i) : (index, index) -> f32
    tensor.yield %v : f32
  } : tensor<7xf32>
  %gi = tensor.generate {
  ^bb0(%i: index):
    %v = func.call @inexact_value(%rank, %i) : (index, index) -> f32
    tensor.yield %v : f32
  } : tensor<256xf32>

  %fe = tensor.generate {
  ^bb0(%i: index):
    %v = func.call @exact_value(%rank, %i) : (index, index) -> f32
    tensor.yield %v : f32
  } : tensor<7xf32>
  %fi = tensor.generate {
  ^bb0(%i: index):
    %v = func.call @inexact_value(%rank, %i) : (index, index) -> f32
    tensor.yield %v : f32
  } : tensor<256xf32>

  // The same values twice in each bucket: in f16 (prescaled by 1/4, as
  // comm-lower-precision plans 4 ranks) and in f32.
  %s:4 = comm.fused_allreduce %ge, %gi, %fe, %fi {
      names = ["exact.f16", "inexact.f16", "exact.f32", "inexact.f32"],
      narrowed = array<i1: true, true, false, false>,
      prescale = 2.500000e-01 : f64, wire = f16}
      : tensor<7xf32>, tensor<256xf32>, tensor<7xf32>, tensor<256xf32>
      -> tensor<7xf32>, tensor<256xf32>, tensor<7xf32>, tensor<256xf32>
  %a:4 = comm.fused_allreduce %ge, %gi, %fe, %fi {
      names = ["exact.f16", "inexact.f16", "exact.f32", "inexact.f32"],
      narrowed = array<i1: true, true, false, false>,
      prescale = 2.500000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16}
      : tensor<7xf32>, tensor<256xf32>, tensor<7xf32>, tensor<256xf32>
      -> tensor<7xf32>, tensor<256xf32>, tensor<7xf32>, tensor<256xf32>

  %one = arith.constant 1.0 : f64
  %sizeI = arith.index_cast %size : index to i64
  %sizeF = arith.sitofp %sizeI : i64 to f64
  call @print_both(%s#0, %s#1, %size, %one) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> ()
  call @print_both(%s#2, %s#3, %size, %one) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> ()
  call @print_both(%a#0, %a#1, %size, %sizeF) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> ()
  call @print_both(%a#2, %a#3, %size, %sizeF) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> ()
  return
}
