// Runs examples/end-to-end/allreduce.mlir on 4 ranks. Each rank makes
// gradients from its rank with ordinary tensor ops, reduces them with comm ops
// lowered to the commrt runtime, and prints; every rank must print the exact
// reductions over ranks 0..3.
//
// RUN: commopt-opt %S/../../examples/end-to-end/allreduce.mlir --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: FileCheck %s --check-prefixes=CHECK,RANK0 < %t.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,RANK1 < %t.out/1/rank.1/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,RANK2 < %t.out/1/rank.2/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,RANK3 < %t.out/1/rank.3/stdout

// Who am I: [rank, world size].
// RANK0: data =
// RANK0-NEXT: [0,  4]
// RANK1: data =
// RANK1-NEXT: [1,  4]
// RANK2: data =
// RANK2-NEXT: [2,  4]
// RANK3: data =
// RANK3-NEXT: [3,  4]

// sum over ranks of (r + 1) * (i + 1) = 10 * (i + 1)
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  40,  50]

// avg 2.5 * (i + 1), max 4 * (i + 1), min 1 * (i + 1)
// CHECK: data =
// CHECK-NEXT: [2.5,  5,  7.5,  10,  12.5]
// CHECK: data =
// CHECK-NEXT: [4,  8,  12,  16,  20]
// CHECK: data =
// CHECK-NEXT: [1,  2,  3,  4,  5]

// f64, 2-D: sum over ranks of 100 r + 3 i + j = 600 + 4 (3 i + j)
// CHECK: data =
// CHECK-NEXT: {{\[}}[600,   604,   608],
// CHECK-NEXT: [612,   616,   620]]

// The rank's own gradient is still intact (bufferization copied it).
// RANK0: data =
// RANK0-NEXT: {{\[}}[0,   1,   2],
// RANK0-NEXT: [3,   4,   5]]
// RANK1: data =
// RANK1-NEXT: {{\[}}[100,   101,   102],
// RANK1-NEXT: [103,   104,   105]]
// RANK2: data =
// RANK2-NEXT: {{\[}}[200,   201,   202],
// RANK2-NEXT: [203,   204,   205]]
// RANK3: data =
// RANK3-NEXT: {{\[}}[300,   301,   302],
// RANK3-NEXT: [303,   304,   305]]

// One bucket of two gradients, max: 4 * (i + 1) each.
// CHECK: data =
// CHECK-NEXT: [4,  8,  12]
// CHECK: data =
// CHECK-NEXT: [4,  8]
// CHECK-NOT: data =
