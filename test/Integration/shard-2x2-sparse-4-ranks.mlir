// Sparse allreduces over the process groups of a 2x2 grid, on 4 ranks: a
// shard module reduces one gradient over each axis of the grid (rows,
// columns), over both, and averages it over the rows; comm-import-shard
// makes grouped comm.allreduces, comm-sparsify (`all`) makes them sparse (keeping
// each group), and the lowering runs each on the calling rank's group
// (commrt_group_sparse_allreduce), with the allgather and with the hash
// exchange.
//
// Rank r's gradient of 16 entries is g_r[i] = (r + 1) * (i + 1). At density
// 0.25 (k = 4) every rank selects the block g[12..15] in the first step and,
// with a zero gradient, the next block g[8..11] from its residual in the
// second. The results are the sums over the rank's own group, exact in f32:
// rows {0, 1} and {2, 3} give 3 and 7 times (i + 1), columns {0, 2} and
// {1, 3} 4 and 6 times, all ranks 10 times, and the rows' mean 1.5 and 3.5
// times. A group that leaked into another (or all ranks) gives other sums.
//
// RUN: commopt-opt %s --comm-import-shard --comm-sparsify="all density=0.25 min-bytes=0 exchange=allgather cluster=%S/Inputs/cluster-4-ranks.json" -o %t.allgather.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.allgather.mlir
// RUN: commopt-opt %t.allgather.mlir --commopt-lower-to-llvm -o %t.allgather.llvm.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.allgather.llvm.mlir
// RUN: rm -rf %t.allgather.out
// RUN: %mpirun -np 4 --output-filename %t.allgather.out mlir-runner %t.allgather.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefix=RANK$r < %t.allgather.out/1/rank.$r/stdout || exit 1; done
//
// RUN: commopt-opt %s --comm-import-shard --comm-sparsify="all density=0.25 min-bytes=0 exchange=hash select=topk cluster=%S/Inputs/cluster-4-ranks.json" -o %t.hash.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.hash.mlir
// RUN: commopt-opt %t.hash.mlir --commopt-lower-to-llvm -o %t.hash.llvm.mlir
// RUN: rm -rf %t.hash.out
// RUN: %mpirun -np 4 --output-filename %t.hash.out mlir-runner %t.hash.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefix=RANK$r < %t.hash.out/1/rank.$r/stdout || exit 1; done

// PLAN-LABEL: func.func @step
// PLAN: comm.sparse_allreduce {{.*}}group = #comm.group<@mesh, axes = [1]>
// PLAN: comm.sparse_allreduce {{.*}}group = #comm.group<@mesh, axes = [0]>
// Over both axes is over all ranks: no group.
// PLAN: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<{{allgather|hash}}>, select =
// PLAN: comm.sparse_allreduce {{.*}}group = #comm.group<@mesh, axes = [1]>{{.*}}reduce = #comm.reduce<avg>
// PLAN-NOT: comm.allreduce
// LOWERED-COUNT-2: llvm.call @commrt_group_sparse_allreduce
// LOWERED: llvm.call @commrt_sparse_allreduce
// LOWERED: llvm.call @commrt_group_sparse_allreduce
//
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  39,  42,  45,  48]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  52,  56,  60,  64]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  130,  140,  150,  160]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  19.5,  21,  22.5,  24]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  27,  30,  33,  36,  0,  0,  0,  0]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  36,  40,  44,  48,  0,  0,  0,  0]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  90,  100,  110,  120,  0,  0,  0,  0]
// RANK0: data =
// RANK0-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  13.5,  15,  16.5,  18,  0,  0,  0,  0]
// RANK0-NOT: data =
//
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  39,  42,  45,  48]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  78,  84,  90,  96]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  130,  140,  150,  160]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  19.5,  21,  22.5,  24]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  27,  30,  33,  36,  0,  0,  0,  0]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  54,  60,  66,  72,  0,  0,  0,  0]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  90,  100,  110,  120,  0,  0,  0,  0]
// RANK1: data =
// RANK1-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  13.5,  15,  16.5,  18,  0,  0,  0,  0]
// RANK1-NOT: data =
//
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  91,  98,  105,  112]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  52,  56,  60,  64]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  130,  140,  150,  160]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  45.5,  49,  52.5,  56]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  63,  70,  77,  84,  0,  0,  0,  0]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  36,  40,  44,  48,  0,  0,  0,  0]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  90,  100,  110,  120,  0,  0,  0,  0]
// RANK2: data =
// RANK2-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  31.5,  35,  38.5,  42,  0,  0,  0,  0]
// RANK2-NOT: data =
//
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  91,  98,  105,  112]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  78,  84,  90,  96]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  130,  140,  150,  160]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  45.5,  49,  52.5,  56]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  63,  70,  77,  84,  0,  0,  0,  0]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  54,  60,  66,  72,  0,  0,  0,  0]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  90,  100,  110,  120,  0,  0,  0,  0]
// RANK3: data =
// RANK3-NEXT: [0,  0,  0,  0,  0,  0,  0,  0,  31.5,  35,  38.5,  42,  0,  0,  0,  0]
// RANK3-NOT: data =

shard.grid @mesh(shape = 2x2)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<16xf32>) {
  %m = bufferization.to_buffer %t : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @step(%g: tensor<16xf32>) {
  %rows = shard.all_reduce %g on @mesh grid_axes = [1] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %columns = shard.all_reduce %g on @mesh grid_axes = [0] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %all = shard.all_reduce %g on @mesh grid_axes = [0, 1] reduction = sum : tensor<16xf32> -> tensor<16xf32>
  %mean = shard.all_reduce %g on @mesh grid_axes = [1] reduction = average : tensor<16xf32> -> tensor<16xf32>
  call @print(%rows) : (tensor<16xf32>) -> ()
  call @print(%columns) : (tensor<16xf32>) -> ()
  call @print(%all) : (tensor<16xf32>) -> ()
  call @print(%mean) : (tensor<16xf32>) -> ()
  return
}

func.func @main() {
  %rank = shard.process_linear_index on @mesh : index
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
  call @step(%g) : (tensor<16xf32>) -> ()
  call @step(%zero) : (tensor<16xf32>) -> ()
  return
}
