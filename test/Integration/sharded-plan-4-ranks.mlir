// A data-parallel step planned as ZeRO-3/FSDP (comm-optimize shard=full:
// shards as arguments, all-gathers prefetched in forward and backward,
// reduce-scatters overlapped with backward, the optimizer on the shards;
// units of 0.01 MiB and less, so that there are several)
// and as ZeRO-2 (shard=grad), each lowered under the timing driver of
// bench/loop, runs on 4 ranks: every rank's shards are filled by the
// driver, every collective completes, and rank 0 reports each step.
//
// RUN: commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-4-ranks.json shard=full shard-prefetch=1 bucket-cap-mb=0.01" | FileCheck %s --check-prefix=PLAN
// RUN: commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-4-ranks.json shard=full shard-prefetch=1 bucket-cap-mb=0.01" \
// RUN:   --comm-add-step-driver=steps=3 --commopt-lower-to-llvm="compute-delay" -o %t.full.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.full.mlir
// RUN: %mpirun -np 4 mlir-runner %t.full.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s
// RUN: commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-4-ranks.json shard=grad" \
// RUN:   --comm-add-step-driver=steps=3 --commopt-lower-to-llvm="compute-delay" -o %t.grad.mlir
// RUN: %mpirun -np 4 mlir-runner %t.grad.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s

// PLAN: func.func @train_step(%{{.*}}: tensor<{{[0-9]+}}xf32> {comm.names = ["l2.weight", "l2.bias"{{.*}}}, %{{.*}}: tensor<{{[0-9]+}}xf32> {comm.names = [{{.*}}"l0.weight", "l0.bias"]}
// PLAN: comm.all_gather_start
// PLAN: comm.reduce_scatter_start
// PLAN: comm.compute({{.*}}) {{.*}}name = "update"

// LOWERED-DAG: llvm.func @main()
// LOWERED-DAG: llvm.call @commrt_all_gather_start(
// LOWERED-DAG: llvm.call @commrt_reduce_scatter_start(
// LOWERED-DAG: llvm.call @commrt_wait(

// CHECK: commrt: step 0: {{[1-9][0-9]{3,}\.[0-9]}} us
// CHECK-NEXT: commrt: step 1: {{[1-9][0-9]{3,}\.[0-9]}} us
// CHECK-NEXT: commrt: step 2: {{[1-9][0-9]{3,}\.[0-9]}} us
// CHECK-NOT: commrt: step

func.func @train_step() -> (tensor<64x128xf32>, tensor<64xf32>, tensor<128x256xf32>, tensor<128xf32>, tensor<10x64xf32>, tensor<10xf32>) {
  comm.compute () {cost_us = 300.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 300.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<forward>} : () -> ()
  comm.compute () {cost_us = 100.0 : f64, layer = 2 : i64, name = "l2", phase = #comm.phase<forward>} : () -> ()
  %g2:2 = comm.compute () {cost_us = 200.0 : f64, layer = 2 : i64, name = "l2", phase = #comm.phase<backward>} : () -> (tensor<10x64xf32>, tensor<10xf32>)
  %w2 = comm.allreduce %g2#0 {name = "l2.weight", reduce = #comm.reduce<avg>} : tensor<10x64xf32> -> tensor<10x64xf32>
  %b2 = comm.allreduce %g2#1 {name = "l2.bias", reduce = #comm.reduce<avg>} : tensor<10xf32> -> tensor<10xf32>
  %g1:2 = comm.compute () {cost_us = 600.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<backward>} : () -> (tensor<64x128xf32>, tensor<64xf32>)
  %w1 = comm.allreduce %g1#0 {name = "l1.weight", reduce = #comm.reduce<avg>} : tensor<64x128xf32> -> tensor<64x128xf32>
  %b1 = comm.allreduce %g1#1 {name = "l1.bias", reduce = #comm.reduce<avg>} : tensor<64xf32> -> tensor<64xf32>
  %g0:2 = comm.compute () {cost_us = 600.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> (tensor<128x256xf32>, tensor<128xf32>)
  %w0 = comm.allreduce %g0#0 {name = "l0.weight", reduce = #comm.reduce<avg>} : tensor<128x256xf32> -> tensor<128x256xf32>
  %b0 = comm.allreduce %g0#1 {name = "l0.bias", reduce = #comm.reduce<avg>} : tensor<128xf32> -> tensor<128xf32>
  comm.compute (%w2, %b2, %w1, %b1, %w0, %b0) {cost_us = 100.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<10x64xf32>, tensor<10xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<128x256xf32>, tensor<128xf32>) -> ()
  return %w1, %b1, %w0, %b0, %w2, %b2 : tensor<64x128xf32>, tensor<64xf32>, tensor<128x256xf32>, tensor<128xf32>, tensor<10x64xf32>, tensor<10xf32>
}
