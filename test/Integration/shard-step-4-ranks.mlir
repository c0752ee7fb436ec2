// A shard module on a 1-D grid of 4 (examples/end-to-end/shard-step.mlir),
// imported, planned, given a timing @main and lowered as the README says,
// runs on 4 ranks with exact sums; on 2 ranks it stops with an error naming
// both counts instead of reducing over the wrong ranks.
//
// RUN: commopt-opt %S/../../examples/end-to-end/shard-step.mlir --comm-import-shard --comm-optimize --comm-add-step-driver=steps=2 --commopt-lower-to-llvm -o %t.lowered.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered.mlir
// LOWERED-NOT: shard.
// LOWERED: llvm.call @commrt_expect_size
//
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.lowered.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: FileCheck %s --check-prefixes=CHECK,RANK0 < %t.out/1/rank.0/stdout
// RUN: FileCheck %s < %t.out/1/rank.1/stdout
// RUN: FileCheck %s < %t.out/1/rank.3/stdout
//
// Sum of (index + 1) x 1 over the 4 ranks, and the largest index + 1.
// CHECK: data =
// CHECK-NEXT: [10,  10,  10,  10,  10,  10,  10,  10]
// CHECK: data =
// CHECK-NEXT: [4,  4,  4,  4,  4,  4,  4,  4]
// RANK0: commrt: step 0: {{[0-9.]+}} us
// CHECK: data =
// CHECK-NEXT: [10,  10,  10,  10,  10,  10,  10,  10]
// RANK0: commrt: step 1: {{[0-9.]+}} us
//
// RUN: not %mpirun -np 2 mlir-runner %t.lowered.mlir -e main \
// RUN:   -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils \
// RUN:   2>&1 | FileCheck %s --check-prefix=TWO
// TWO: commrt: rank {{[01]}}: COMMRT_ERROR_MISMATCH: commrt_expect_size: the program was planned for 4 ranks (its shard.grid), but the job has 2; start it with mpirun -np 4
