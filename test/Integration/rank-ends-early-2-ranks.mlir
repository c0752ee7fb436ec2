// Lowered code whose ranks disagree on the collectives they run must not
// hang: rank 1 skips the allreduce and returns from main, and its runtime's
// exit-time shutdown tells rank 0, which waits in that allreduce, that it
// will never join; rank 0 aborts the job at once (lib/Runtime/Watchdog.h).
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: %expect_failure 120 %mpirun -np 2 mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils 2>&1 | FileCheck %s
//
// CHECK: commrt: rank 0: COMMRT_ERROR_PEER_ENDED: commrt_allreduce cannot complete: rank 1 ended its runtime (commrt_finalize, exit() or the end of main) after 0 collectives, and this rank waits in collective 1; aborting the job
// CHECK: expect_failure: exit status 6

func.func @main() {
  %rank = comm.rank
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %rank, %c0 : index
  scf.if %first {
    %one = arith.constant 1.0 : f32
    %g = tensor.splat %one : tensor<4xf32>
    %r = comm.allreduce %g : tensor<4xf32> -> tensor<4xf32>
  }
  return
}
