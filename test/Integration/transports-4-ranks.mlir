// Collectives that name their transport run on it: here every rank's
// backend in use is MPI (no GPU), so the MPI transport carries them, blocking
// and started, among all ranks and within a process group; the lowered step
// makes the transport available on entry (commrt_use_transport). A plan
// naming NCCL on a machine where NCCL cannot be created stops at that entry
// on every rank, with the runtime's message, and mpirun exits non-zero.
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: FileCheck %s --check-prefixes=CHECK,EVEN < %t.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefixes=CHECK,ODD < %t.out/1/rank.3/stdout
// RUN: sed 's/transport<mpi>/transport<nccl>/' %s | commopt-opt --commopt-lower-to-llvm -o %t.nccl.mlir
// RUN: not timeout 120 %mpirun -np 4 mlir-runner %t.nccl.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NCCL

// sum over ranks of (r + 1) * (i + 1) = 10 * (i + 1), by the tree and
// started on channel 1; within the columns of a 2x2 grid (ranks 0 and 2,
// 1 and 3): 4 (i + 1) and 6 (i + 1).
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  40]
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  40]
// EVEN: data =
// EVEN-NEXT: [4,  8,  12,  16]
// ODD: data =
// ODD-NEXT: [6,  12,  18,  24]

// NCCL: commrt: rank {{[0-3]}}: COMMRT_ERROR_UNAVAILABLE: commrt_use_transport:

shard.grid @grid(shape = 2x2)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<4xf32>) {
  %m = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  %u = memref.cast %m : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %rank = comm.rank
  %c1 = arith.constant 1 : index
  %g = tensor.generate {
  ^bb0(%i: index):
    %r1 = arith.addi %rank, %c1 : index
    %i1 = arith.addi %i, %c1 : index
    %p = arith.muli %r1, %i1 : index
    %pi = arith.index_cast %p : index to i64
    %v = arith.sitofp %pi : i64 to f32
    tensor.yield %v : f32
  } : tensor<4xf32>
  %a = comm.allreduce %g {algorithm = #comm.algorithm<tree>,
                          transport = #comm.transport<mpi>}
      : tensor<4xf32> -> tensor<4xf32>
  call @print(%a) : (tensor<4xf32>) -> ()
  %t = comm.start %g {channel = 1 : i64, transport = #comm.transport<mpi>}
      : tensor<4xf32>
  %b = comm.wait %t : tensor<4xf32>
  call @print(%b) : (tensor<4xf32>) -> ()
  %c = comm.allreduce %g {group = #comm.group<@grid, axes = [0]>,
                          transport = #comm.transport<mpi>}
      : tensor<4xf32> -> tensor<4xf32>
  call @print(%c) : (tensor<4xf32>) -> ()
  return
}
