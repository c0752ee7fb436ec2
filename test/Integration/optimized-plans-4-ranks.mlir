// A planned module must compute what the unplanned one computes. The same
// step (static gradients made from the rank, allreduced, printed) runs on 4
// ranks as written, after each planning pass alone, and after the whole
// comm-optimize pipeline; every run must print the exact sums (small
// integers, exact in f32 whatever the order of the reduction).
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.plain.mlir
// RUN: commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=0.0001 first-bucket-mb=0" --commopt-lower-to-llvm -o %t.fused.mlir
// RUN: commopt-opt %s --comm-schedule-overlap="channels=3 partition-mb=0.00003" --commopt-lower-to-llvm -o %t.overlap.mlir
// RUN: commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-4-ranks.json channels=2" --commopt-lower-to-llvm="compute-delay" -o %t.optimized.mlir
// RUN: commopt-opt %s --comm-optimize="cluster=%S/Inputs/cluster-4-ranks.json channels=2" | FileCheck %s --check-prefix=PLAN
// RUN: commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=0.0001 first-bucket-mb=0" | FileCheck %s --check-prefix=FUSED
// RUN: commopt-opt %s --comm-schedule-overlap="channels=3 partition-mb=0.00003" | FileCheck %s --check-prefix=OVERLAP
//
// RUN: %mpirun -np 4 mlir-runner %t.plain.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | grep "^\[" | sort | FileCheck %s
// RUN: %mpirun -np 4 mlir-runner %t.fused.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | grep "^\[" | sort | FileCheck %s
// RUN: %mpirun -np 4 mlir-runner %t.overlap.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | grep "^\[" | sort | FileCheck %s
// RUN: %mpirun -np 4 mlir-runner %t.optimized.mlir -e main -entry-point-result=void -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils | grep "^\[" | sort | FileCheck %s

// The plans really differ from the step as written: a bucket of three
// gradients (32 + 16 + 64 bytes reach the 104-byte cap); gradients split in
// pieces (32 bytes in 2, 64 in 3) on three channels; the whole pipeline's
// starts and waits.
// FUSED: comm.fused_allreduce %{{.*}}, %{{.*}}, %{{.*}} {names = ["l3.w", "l2.w", "l1.w"]}
// OVERLAP: comm.start %{{.*}} {names = ["l3.w"]} : tensor<4xf32>
// OVERLAP: comm.start %{{.*}} {channel = 1 : i64, names = ["l3.w"]} : tensor<4xf32>
// OVERLAP: comm.start %{{.*}} {channel = 2 : i64, names = ["l2.w"]} : tensor<4xf32>
// OVERLAP: comm.start %{{.*}} {names = ["l1.w"]} : tensor<6xf32>
// OVERLAP: comm.start %{{.*}} {channel = 1 : i64, names = ["l1.w"]} : tensor<5xf32>
// OVERLAP: comm.start %{{.*}} {channel = 2 : i64, names = ["l1.w"]} : tensor<5xf32>
// PLAN: comm.start
// PLAN: comm.wait

// Four ranks print the same lines (sorted here, as ranks interleave); the
// sum over r of (r + 1) * (i + 1) + k is 10 * (i + 1) + 4 k, and the avg of
// the last gradient is a quarter of that.
// CHECK-COUNT-4: [10,  20,  30,  40,  50,  60,  70,  80]
// CHECK-COUNT-4: [14,  24,  34,  44]
// CHECK-COUNT-4: [18,  28,  38,  48,  58,  68,  78,  88,  98,  108,  118,  128,  138,  148,  158,  168]
// CHECK-COUNT-4: [5.5,  8,  10.5,  13]
// CHECK-NOT: [

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<?xf32>) {
  %m = bufferization.to_buffer %t : tensor<?xf32> to memref<?xf32>
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

// (rank + 1) * (i + 1) + k
func.func @gradient(%rank: index, %k: index, %n: index) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %t = tensor.generate %n {
  ^bb0(%i: index):
    %r1 = arith.addi %rank, %c1 : index
    %i1 = arith.addi %i, %c1 : index
    %p = arith.muli %r1, %i1 : index
    %v = arith.addi %p, %k : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    tensor.yield %vf : f32
  } : tensor<?xf32>
  return %t : tensor<?xf32>
}

// A backward pass of four layers, each step costing 100 us, producing one
// gradient each.
func.func @backward(%rank: index) -> (tensor<8xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  comm.compute () {cost_us = 100.0, layer = 3, name = "l3", phase = #comm.phase<backward>} : () -> ()
  %d0 = call @gradient(%rank, %c0, %c8) : (index, index, index) -> tensor<?xf32>
  %g0 = tensor.cast %d0 : tensor<?xf32> to tensor<8xf32>
  %r0 = comm.allreduce %g0 {name = "l3.w"} : tensor<8xf32> -> tensor<8xf32>
  comm.compute () {cost_us = 100.0, layer = 2, name = "l2", phase = #comm.phase<backward>} : () -> ()
  %d1 = call @gradient(%rank, %c1, %c4) : (index, index, index) -> tensor<?xf32>
  %g1 = tensor.cast %d1 : tensor<?xf32> to tensor<4xf32>
  %r1 = comm.allreduce %g1 {name = "l2.w"} : tensor<4xf32> -> tensor<4xf32>
  comm.compute () {cost_us = 100.0, layer = 1, name = "l1", phase = #comm.phase<backward>} : () -> ()
  %d2 = call @gradient(%rank, %c2, %c16) : (index, index, index) -> tensor<?xf32>
  %g2 = tensor.cast %d2 : tensor<?xf32> to tensor<16xf32>
  %r2 = comm.allreduce %g2 {name = "l1.w"} : tensor<16xf32> -> tensor<16xf32>
  comm.compute () {cost_us = 100.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> ()
  %d3 = call @gradient(%rank, %c3, %c4) : (index, index, index) -> tensor<?xf32>
  %g3 = tensor.cast %d3 : tensor<?xf32> to tensor<4xf32>
  %r3 = comm.allreduce %g3 {name = "l0.w", reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  return %r0, %r1, %r2, %r3 : tensor<8xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>
}

func.func @main() {
  %rank = comm.rank
  %r:4 = call @backward(%rank) : (index) -> (tensor<8xf32>, tensor<4xf32>, tensor<16xf32>, tensor<4xf32>)
  %p0 = tensor.cast %r#0 : tensor<8xf32> to tensor<?xf32>
  %p1 = tensor.cast %r#1 : tensor<4xf32> to tensor<?xf32>
  %p2 = tensor.cast %r#2 : tensor<16xf32> to tensor<?xf32>
  %p3 = tensor.cast %r#3 : tensor<4xf32> to tensor<?xf32>
  call @print(%p0) : (tensor<?xf32>) -> ()
  call @print(%p1) : (tensor<?xf32>) -> ()
  call @print(%p2) : (tensor<?xf32>) -> ()
  call @print(%p3) : (tensor<?xf32>) -> ()
  return
}
