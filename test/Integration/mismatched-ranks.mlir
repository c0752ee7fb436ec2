// Ranks that disagree on a gradient's size must not hang or reduce garbage:
// with the runtime's consistency checks on, every rank stops with a message
// naming the disagreement, and mpirun exits non-zero.
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: not timeout 120 %mpirun -np 4 -x COMMRT_CHECK=1 mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils 2>&1 | FileCheck %s
//
// CHECK: commrt: rank {{[0-3]}}: COMMRT_ERROR_MISMATCH: commrt_allreduce: ranks disagree on count (min 4, max 7)

// Rank r holds 4 + r elements.
func.func @main() {
  %rank = comm.rank
  %c4 = arith.constant 4 : index
  %n = arith.addi %c4, %rank : index
  %one = arith.constant 1.0 : f32
  %g = tensor.splat %one[%n] : tensor<?xf32>
  %r = comm.allreduce %g : tensor<?xf32> -> tensor<?xf32>
  return
}
