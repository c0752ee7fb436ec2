// Sends f32 gradients over the wire in f16 and in bf16 on 4 ranks, as
// `comm-lower-precision` plans it and `commrt_allreduce_wire` carries it out,
// and checks the results against references that every rank computes itself
// in f64 from all ranks' gradients. The same module also runs unmodified (f32
// on the wire) as the baseline.
//
// RUN: cat %s %S/Inputs/wire-checks.mlir > %t.in.mlir
// RUN: commopt-opt %t.in.mlir --commopt-lower-to-llvm -o %t.f32.mlir
// RUN: commopt-opt %t.in.mlir --comm-lower-precision="wire=f16 min-bytes=0 cluster=%S/Inputs/cluster-4-ranks.json" -o %t.f16.plan.mlir
// RUN: FileCheck %s --check-prefix=PLAN-F16 < %t.f16.plan.mlir
// RUN: commopt-opt %t.f16.plan.mlir --commopt-lower-to-llvm -o %t.f16.mlir
// RUN: commopt-opt %t.in.mlir --comm-lower-precision="wire=bf16 min-bytes=0 cluster=%S/Inputs/cluster-4-ranks.json" -o %t.bf16.plan.mlir
// RUN: FileCheck %s --check-prefix=PLAN-BF16 < %t.bf16.plan.mlir
// RUN: commopt-opt %t.bf16.plan.mlir --commopt-lower-to-llvm -o %t.bf16.mlir
//
// RUN: rm -rf %t.f32.out %t.f16.out %t.bf16.out
// RUN: %mpirun -np 4 --output-filename %t.f32.out mlir-runner %t.f32.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: %mpirun -np 4 --output-filename %t.f16.out mlir-runner %t.f16.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: %mpirun -np 4 --output-filename %t.bf16.out mlir-runner %t.bf16.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
//
// RUN: FileCheck %s --check-prefixes=CHECK,F32 < %t.f32.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F32 < %t.f32.out/1/rank.1/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F32 < %t.f32.out/1/rank.2/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F32 < %t.f32.out/1/rank.3/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F16 < %t.f16.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F16 < %t.f16.out/1/rank.1/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F16 < %t.f16.out/1/rank.2/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,F16 < %t.f16.out/1/rank.3/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 < %t.bf16.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 < %t.bf16.out/1/rank.1/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 < %t.bf16.out/1/rank.2/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,BF16 < %t.bf16.out/1/rank.3/stdout

// The plans: every collective goes to the wire type, pre-divided by the 4
// ranks of the cluster file.
// PLAN-F16-COUNT-4: comm.allreduce {{.*}}prescale = 2.500000e-01 : f64{{.*}}wire = f16
// PLAN-BF16-COUNT-4: comm.allreduce {{.*}}prescale = 2.500000e-01 : f64{{.*}}wire = bf16

// Error bounds. Let u be the unit roundoff of the wire type: 2^-11 for f16
// (11-bit significand), 2^-8 for bf16 (8 bits), 2^-24 for f32. On the wire
// path each rank's value is multiplied by the prescale 1/4 (exact: a power of
// two, and no value here comes near the subnormal range) and rounded once to
// the wire type; the wire values are summed with a rounding after every
// addition, and with 4 ranks a value passes through at most 3 additions,
// whatever the reduction order; widening and the division by the prescale
// are exact, and so is avg's division by 4. So every term carries a relative
// error of at most (1 + u)^4 - 1 < 4.01 u, and since all inexact values are
// positive, so does their sum: |result - reference| <= 4.01 u |reference|.
// The f32 baseline rounds only in its 3 additions: 3.01 u with u = 2^-24.
//
// Each rank prints, for sum and then avg:
// - the reduction of a gradient whose values, prescaled, and every partial
//   sum of them have at most 7 significant bits and lie within f16's range:
//   exactly representable in f16 and bf16, so every run must give the exact
//   result. 16384 per rank sums to 163840, beyond f16's largest finite value
//   65504: without the prescale the f16 wire would overflow to infinity;
// - a verdict on a gradient of 256 values (7 r + 13 i + 1) / 9, few of which
//   are representable in the wire types: [exact gradient exact, max relative
//   error <= 3.01 * 2^-24 (f32 bound), <= 4.01 * 2^-11 (f16 bound),
//   <= 4.01 * 2^-8 (bf16 bound)], 1 for true. Each run must meet its own
//   bound and, to show that the data really went through the narrower type,
//   miss the bound of the next wider type.

// sum over ranks of (r + 1) * c = 10 * c
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  -50,  2.5,  163840,  0]
// F32-NEXT: data =
// F32-NEXT: [1,  1,  1,  1]
// F16-NEXT: data =
// F16-NEXT: [1,  0,  1,  1]
// BF16-NEXT: data =
// BF16-NEXT: [1,  0,  0,  1]

// avg over ranks: 2.5 * c
// CHECK-NEXT: data =
// CHECK-NEXT: [2.5,  5,  7.5,  -12.5,  0.625,  40960,  0]
// F32-NEXT: data =
// F32-NEXT: [1,  1,  1,  1]
// F16-NEXT: data =
// F16-NEXT: [1,  0,  1,  1]
// BF16-NEXT: data =
// BF16-NEXT: [1,  0,  0,  1]
// CHECK-NOT: data =

// @print, @verdict and the gradients: Inputs/wire-checks.mlir.

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

  %sumE = comm.allreduce %ge {name = "exact"} : tensor<7xf32> -> tensor<7xf32>
  %sumI = comm.allreduce %gi {name = "inexact"} : tensor<256xf32> -> tensor<256xf32>
  %avgE = comm.allreduce %ge {name = "exact", reduce = #comm.reduce<avg>} : tensor<7xf32> -> tensor<7xf32>
  %avgI = comm.allreduce %gi {name = "inexact", reduce = #comm.reduce<avg>} : tensor<256xf32> -> tensor<256xf32>

  %one = arith.constant 1.0 : f64
  %sizeI = arith.index_cast %size : index to i64
  %sizeF = arith.sitofp %sizeI : i64 to f64

  %sumEd = tensor.cast %sumE : tensor<7xf32> to tensor<?xf32>
  call @print(%sumEd) : (tensor<?xf32>) -> ()
  %sumV = call @verdict(%sumE, %sumI, %size, %one) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> tensor<4xf32>
  %sumVd = tensor.cast %sumV : tensor<4xf32> to tensor<?xf32>
  call @print(%sumVd) : (tensor<?xf32>) -> ()

  %avgEd = tensor.cast %avgE : tensor<7xf32> to tensor<?xf32>
  call @print(%avgEd) : (tensor<?xf32>) -> ()
  %avgV = call @verdict(%avgE, %avgI, %size, %sizeF) : (tensor<7xf32>, tensor<256xf32>, index, f64) -> tensor<4xf32>
  %avgVd = tensor.cast %avgV : tensor<4xf32> to tensor<?xf32>
  call @print(%avgVd) : (tensor<?xf32>) -> ()
  return
}
