// Residual gradient compression on 4 ranks, planned by comm-sparsify (`all`)
// with each exchange scheme, lowered to the commrt runtime and run.
//
// Rank r's gradient of 16 entries is g_r[i] = (r + 1) * (i + 1), so with
// density 0.25 (k = 4 entries, or 1 chunk of 4 with chunk-elements=4) every
// rank and every scheme selects the same block of 4 indices: the largest
// magnitudes are a block at the end, and chunk norms grow with the index.
// The magnitudes are distinct, so threshold selection (the pass's default)
// takes exactly the top 4. Sums over ranks are 10 * (i + 1), exact in f32.
//
// Step 1 sends g[12..15] and keeps the rest in the residual global. Steps 2
// to 5 have zero gradients, so they send what the residual holds: steps 2 to
// 4 the next block of 4 each (the largest left), and step 5 finds the
// residual empty. Every entry of the gradient arrives exactly once, in full:
// the five printed results add up to the dense sum 10 * (i + 1), nothing is lost or
// sent twice, and the residual carries across steps in its ml_program
// global through bufferization and lowering.
//
// RUN: commopt-opt %s --comm-sparsify="all density=0.25 min-bytes=0 exchange=allgather cluster=%S/Inputs/cluster-4-ranks.json" -o %t.allgather.mlir
// RUN: FileCheck %s --check-prefix=PLAN-ALLGATHER < %t.allgather.mlir
// RUN: commopt-opt %t.allgather.mlir --commopt-lower-to-llvm -o %t.allgather.llvm.mlir
// RUN: rm -rf %t.allgather.out
// RUN: %mpirun -np 4 --output-filename %t.allgather.out mlir-runner %t.allgather.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s < %t.allgather.out/1/rank.$r/stdout || exit 1; done
//
// RUN: commopt-opt %s --comm-sparsify="all density=0.25 min-bytes=0 exchange=hash select=topk cluster=%S/Inputs/cluster-4-ranks.json" -o %t.hash.mlir
// RUN: FileCheck %s --check-prefix=PLAN-HASH < %t.hash.mlir
// RUN: commopt-opt %t.hash.mlir --commopt-lower-to-llvm -o %t.hash.llvm.mlir
// RUN: rm -rf %t.hash.out
// RUN: %mpirun -np 4 --output-filename %t.hash.out mlir-runner %t.hash.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s < %t.hash.out/1/rank.$r/stdout || exit 1; done
//
// RUN: commopt-opt %s --comm-sparsify="all density=0.25 min-bytes=0 exchange=chunk chunk-elements=4 cluster=%S/Inputs/cluster-4-ranks.json" -o %t.chunk.mlir
// RUN: FileCheck %s --check-prefix=PLAN-CHUNK < %t.chunk.mlir
// RUN: commopt-opt %t.chunk.mlir --commopt-lower-to-llvm -o %t.chunk.llvm.mlir
// RUN: rm -rf %t.chunk.out
// RUN: %mpirun -np 4 --output-filename %t.chunk.out mlir-runner %t.chunk.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s < %t.chunk.out/1/rank.$r/stdout || exit 1; done
//
// Started on a channel (comm-schedule-overlap: comm.sparse_start and
// comm.wait, the residual stored after the wait), the same steps give the
// same results.
// RUN: commopt-opt %t.hash.mlir --pass-pipeline="builtin.module(func.func(comm-schedule-overlap{channels=2}))" -o %t.started.mlir
// RUN: FileCheck %s --check-prefix=PLAN-STARTED < %t.started.mlir
// RUN: commopt-opt %t.started.mlir --commopt-lower-to-llvm -o %t.started.llvm.mlir
// RUN: rm -rf %t.started.out
// RUN: %mpirun -np 4 --output-filename %t.started.out mlir-runner %t.started.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s < %t.started.out/1/rank.$r/stdout || exit 1; done

// The pass sparsified the gradient, with the scheme asked for. A 16-element
// gradient is cheaper dense on any cluster (its sparse exchange is three
// collectives or more), so the plans are made with `all`, which sparsifies
// every candidate.
// PLAN-ALLGATHER: ml_program.global private mutable @w_residual
// PLAN-ALLGATHER: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<allgather>{{.*}}select = #comm.select<threshold>
// PLAN-HASH: ml_program.global private mutable @w_residual
// PLAN-HASH: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<hash>{{.*}}select = #comm.select<topk>
// PLAN-STARTED: %[[T:.*]] = comm.sparse_start {{.*}}exchange = #comm.exchange<hash>
// PLAN-STARTED-NEXT: %[[R:.*]]:2 = comm.wait %[[T]]
// PLAN-STARTED-NEXT: ml_program.global_store @w_residual = %[[R]]#1
// PLAN-STARTED-NOT: comm.sparse_allreduce
// PLAN-CHUNK: ml_program.global private mutable @w_residual
// PLAN-CHUNK: comm.sparse_allreduce {{.*}}chunk_elements = 4 : i64{{.*}}exchange = #comm.exchange<chunk>{{.*}}select = #comm.select<chunk>

// CHECK: data =
// CHECK-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  130,  140,  150,  160]
// CHECK: data =
// CHECK-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  90,  100,  110,  120,  0,  0,  0,  0]
// CHECK: data =
// CHECK-NEXT: [0,  0,  0,  0,  50,  60,  70,  80,  0,  0,  0,  0,  0,  0,  0,  0]
// CHECK: data =
// CHECK-NEXT: [10,  20,  30,  40,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0]
// CHECK: data =
// CHECK-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0]
// CHECK-NOT: data =

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<16xf32>) {
  %m = bufferization.to_buffer %t : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

// The training step: comm-sparsify makes the allreduce sparse.
func.func @step(%g: tensor<16xf32>) -> tensor<16xf32> {
  %r = comm.allreduce %g {name = "w"} : tensor<16xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
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
  } : tensor<16xf32>
  %zero = arith.constant dense<0.0> : tensor<16xf32>

  %s1 = call @step(%g) : (tensor<16xf32>) -> tensor<16xf32>
  call @print(%s1) : (tensor<16xf32>) -> ()
  %s2 = call @step(%zero) : (tensor<16xf32>) -> tensor<16xf32>
  call @print(%s2) : (tensor<16xf32>) -> ()
  %s3 = call @step(%zero) : (tensor<16xf32>) -> tensor<16xf32>
  call @print(%s3) : (tensor<16xf32>) -> ()
  %s4 = call @step(%zero) : (tensor<16xf32>) -> tensor<16xf32>
  call @print(%s4) : (tensor<16xf32>) -> ()
  %s5 = call @step(%zero) : (tensor<16xf32>) -> tensor<16xf32>
  call @print(%s5) : (tensor<16xf32>) -> ()
  return
}
