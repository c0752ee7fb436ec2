// An upstream shard module of a sharded data-parallel step
// (examples/end-to-end/shard-zero.mlir: shard.reduce_scatter of each
// process's gradient, shard.all_slice of the replicated parameter,
// shard.all_gather of the updated shards) imported, planned and lowered as
// the example says (comm-optimize starts both collectives on channels),
// runs on 4 ranks with exact results: rank r keeps rows 2r and 2r + 1 of
// the sum, slices the same rows of the parameter, and every rank gathers
// the whole updated parameter, 990 - 9 k at flat index k.
//
// RUN: commopt-opt %S/../../examples/end-to-end/shard-zero.mlir --comm-import-shard --comm-optimize --commopt-lower-to-llvm -o %t.lowered.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered.mlir
// LOWERED-NOT: shard.
// LOWERED: llvm.call @commrt_expect_size
// LOWERED: llvm.call @commrt_rank
// LOWERED: llvm.call @commrt_reduce_scatter_start(
// LOWERED: llvm.call @commrt_all_gather_start(
//
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.lowered.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefixes=CHECK,RANK$r < %t.out/1/rank.$r/stdout || exit 1; done
//
// RANK0: data =
// RANK0-NEXT: [10,  20,  30,  40]
// RANK1: data =
// RANK1-NEXT: [50,  60,  70,  80]
// RANK2: data =
// RANK2-NEXT: [90,  100,  110,  120]
// RANK3: data =
// RANK3-NEXT: [130,  140,  150,  160]
// CHECK: data =
// CHECK-NEXT: [990,  981,  972,  963,  954,  945,  936,  927,  918,  909,  900,  891,  882,  873,  864,  855]
// CHECK-NOT: data =
