// The lossless rows exchange on 4 ranks, lowered and run: an embedding-like
// gradient of 8 rows of 2 entries, which each rank touches in a few rows
// (row 0 on every rank, row r + 1 on rank r alone, row 7 on ranks 0 and 2),
// reduced by the allgather exchange and by the hash exchange over all
// ranks, averaged by the hash exchange, and summed within the rows of a 2x2
// grid ({0, 1} and {2, 3}). Rank r's entry (i, j) of a touched row is
// (r + 1) (2 i + j + 1); every sum is exact in f32, so each result equals
// the dense allreduce's.
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.llvm.mlir
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefix=RANK$r < %t.out/1/rank.$r/stdout || exit 1; done

// LOWERED-COUNT-3: llvm.call @commrt_sparse_allreduce(
// LOWERED: llvm.call @commrt_group_sparse_allreduce(

// Every rank: the allgather's and the hash exchange's sums, the average.
// RANK0: data =
// RANK0-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK0: data =
// RANK0-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK0: data =
// RANK0-NEXT: [2.5,  5,  0.75,  1,  2.5,  3,  5.25,  6,  9,  10,  0,  0,  0,  0,  15,  16]
// RANK0: data =
// RANK0-NEXT: [3,  6,  3,  4,  10,  12,  0,  0,  0,  0,  0,  0,  0,  0,  15,  16]
// RANK0-NOT: data =
//
// RANK1: data =
// RANK1-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK1: data =
// RANK1-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK1: data =
// RANK1-NEXT: [2.5,  5,  0.75,  1,  2.5,  3,  5.25,  6,  9,  10,  0,  0,  0,  0,  15,  16]
// RANK1: data =
// RANK1-NEXT: [3,  6,  3,  4,  10,  12,  0,  0,  0,  0,  0,  0,  0,  0,  15,  16]
// RANK1-NOT: data =
//
// RANK2: data =
// RANK2-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK2: data =
// RANK2-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK2: data =
// RANK2-NEXT: [2.5,  5,  0.75,  1,  2.5,  3,  5.25,  6,  9,  10,  0,  0,  0,  0,  15,  16]
// RANK2: data =
// RANK2-NEXT: [7,  14,  0,  0,  0,  0,  21,  24,  36,  40,  0,  0,  0,  0,  45,  48]
// RANK2-NOT: data =
//
// RANK3: data =
// RANK3-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK3: data =
// RANK3-NEXT: [10,  20,  3,  4,  10,  12,  21,  24,  36,  40,  0,  0,  0,  0,  60,  64]
// RANK3: data =
// RANK3-NEXT: [2.5,  5,  0.75,  1,  2.5,  3,  5.25,  6,  9,  10,  0,  0,  0,  0,  15,  16]
// RANK3: data =
// RANK3-NEXT: [7,  14,  0,  0,  0,  0,  21,  24,  36,  40,  0,  0,  0,  0,  45,  48]
// RANK3-NOT: data =

shard.grid @mesh(shape = 2x2)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<8x2xf32>) {
  %flat = tensor.collapse_shape %t [[0, 1]] : tensor<8x2xf32> into tensor<16xf32>
  %m = bufferization.to_buffer %flat : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %rank = shard.process_linear_index on @mesh : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  %g = tensor.generate {
  ^bb0(%i: index, %j: index):
    // Touched: row 0, row rank + 1, row 7 on even ranks.
    %first = arith.cmpi eq, %i, %c0 : index
    %r1 = arith.addi %rank, %c1 : index
    %own = arith.cmpi eq, %i, %r1 : index
    %last = arith.cmpi eq, %i, %c7 : index
    %parity = arith.remui %rank, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    %shared = arith.andi %last, %even : i1
    %t0 = arith.ori %first, %own : i1
    %touched = arith.ori %t0, %shared : i1
    // (r + 1) (2 i + j + 1)
    %i2 = arith.muli %i, %c2 : index
    %ij = arith.addi %i2, %j : index
    %ij1 = arith.addi %ij, %c1 : index
    %p = arith.muli %r1, %ij1 : index
    %pi = arith.index_cast %p : index to i64
    %v = arith.sitofp %pi : i64 to f32
    %e = arith.select %touched, %v, %zero : f32
    tensor.yield %e : f32
  } : tensor<8x2xf32>
  %gathered = comm.sparse_allreduce %g
      {density = 0.25, select = #comm.select<rows>,
       exchange = #comm.exchange<allgather>}
      : tensor<8x2xf32> -> tensor<8x2xf32>
  %hashed = comm.sparse_allreduce %g
      {density = 0.25, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>}
      : tensor<8x2xf32> -> tensor<8x2xf32>
  %mean = comm.sparse_allreduce %g
      {density = 0.25, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<avg>}
      : tensor<8x2xf32> -> tensor<8x2xf32>
  %grouped = comm.sparse_allreduce %g
      {density = 0.25, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, group = #comm.group<@mesh, axes = [1]>}
      : tensor<8x2xf32> -> tensor<8x2xf32>
  call @print(%gathered) : (tensor<8x2xf32>) -> ()
  call @print(%hashed) : (tensor<8x2xf32>) -> ()
  call @print(%mean) : (tensor<8x2xf32>) -> ()
  call @print(%grouped) : (tensor<8x2xf32>) -> ()
  return
}
