// The timing driver of bench/loop: comm-add-step-driver adds a @main that
// runs the step 3 times, each after commrt_barrier, timed with
// commrt_time_us, and commrt_report_step_us prints the slowest rank's time
// on rank 0 only. With compute-delay the first step sleeps at least its
// 2 x 1500 us of compute. A later step may take less: the pacer
// (ComputeEmulation.h) shortens a thread's sleeps by the lateness of its
// earlier ones, so that the emulated compute ends where the profile says;
// on a loaded machine the first step runs late and the next ones catch up.
//
// RUN: commopt-opt %s --comm-add-step-driver=steps=3 --commopt-lower-to-llvm="compute-delay" -o %t.lowered.mlir
// RUN: %mpirun -np 4 mlir-runner %t.lowered.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s

// CHECK: commrt: step 0: {{([3-9][0-9]{3}|[1-9][0-9]{4,})\.[0-9]}} us
// CHECK-NEXT: commrt: step 1: {{[0-9]+\.[0-9]}} us
// CHECK-NEXT: commrt: step 2: {{[0-9]+\.[0-9]}} us
// CHECK-NOT: commrt: step

module {
  func.func @train_step() -> (tensor<1024xf32>, tensor<16xf32>) {
    %g0, %g1 = comm.compute() {cost_us = 1500.0, layer = 1, name = "l1", phase = #comm.phase<backward>} : () -> (tensor<1024xf32>, tensor<16xf32>)
    %r0 = comm.allreduce %g0 {reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    comm.compute() {cost_us = 1500.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> ()
    %r1 = comm.allreduce %g1 {reduce = #comm.reduce<avg>} : tensor<16xf32> -> tensor<16xf32>
    return %r0, %r1 : tensor<1024xf32>, tensor<16xf32>
  }
}
