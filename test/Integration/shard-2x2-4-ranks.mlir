// A shard module on a 2x2 grid (examples/end-to-end/shard-2x2.mlir) reduces
// over each axis of the grid and over both: imported, planned, lowered and
// run on 4 ranks, every rank gets the exact sums (and mean) of its own
// group (commrt_group_split, one communicator per row and per column), with
// the flat and with the hierarchical allreduce.
//
// RUN: commopt-opt %S/../../examples/end-to-end/shard-2x2.mlir --comm-import-shard --comm-optimize --comm-add-step-driver=steps=1 --commopt-lower-to-llvm -o %t.lowered.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.lowered.mlir
// LOWERED-NOT: shard.
// LOWERED: llvm.call @commrt_group_split
// LOWERED: llvm.call @commrt_group_fused_allreduce_start
//
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.lowered.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: FileCheck %s --check-prefix=RANK0 < %t.out/1/rank.0/stdout
// RUN: FileCheck %s --check-prefix=RANK1 < %t.out/1/rank.1/stdout
// RUN: FileCheck %s --check-prefix=RANK2 < %t.out/1/rank.2/stdout
// RUN: FileCheck %s --check-prefix=RANK3 < %t.out/1/rank.3/stdout
//
// The same with the hierarchical allreduce on two emulated nodes of two
// ranks (the rows): equal results.
// RUN: rm -rf %t.hier
// RUN: %mpirun -np 4 -x COMMRT_ALLREDUCE=hierarchical -x COMMRT_RANKS_PER_NODE=2 \
// RUN:   --output-filename %t.hier mlir-runner %t.lowered.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: FileCheck %s --check-prefix=RANK0 < %t.hier/1/rank.0/stdout
// RUN: FileCheck %s --check-prefix=RANK1 < %t.hier/1/rank.1/stdout
// RUN: FileCheck %s --check-prefix=RANK2 < %t.hier/1/rank.2/stdout
// RUN: FileCheck %s --check-prefix=RANK3 < %t.hier/1/rank.3/stdout
//
// Rank r contributes r + 1. Rows {0, 1}, {2, 3}; columns {0, 2}, {1, 3}.
// RANK0: data =
// RANK0-NEXT: [3,  3,  3,  3]
// RANK0: data =
// RANK0-NEXT: [4,  4,  4,  4]
// RANK0: data =
// RANK0-NEXT: [10,  10,  10,  10]
// RANK0: data =
// RANK0-NEXT: [1.5,  1.5,  1.5,  1.5]
//
// RANK1: data =
// RANK1-NEXT: [3,  3,  3,  3]
// RANK1: data =
// RANK1-NEXT: [6,  6,  6,  6]
// RANK1: data =
// RANK1-NEXT: [10,  10,  10,  10]
// RANK1: data =
// RANK1-NEXT: [1.5,  1.5,  1.5,  1.5]
//
// RANK2: data =
// RANK2-NEXT: [7,  7,  7,  7]
// RANK2: data =
// RANK2-NEXT: [4,  4,  4,  4]
// RANK2: data =
// RANK2-NEXT: [10,  10,  10,  10]
// RANK2: data =
// RANK2-NEXT: [3.5,  3.5,  3.5,  3.5]
//
// RANK3: data =
// RANK3-NEXT: [7,  7,  7,  7]
// RANK3: data =
// RANK3-NEXT: [6,  6,  6,  6]
// RANK3: data =
// RANK3-NEXT: [10,  10,  10,  10]
// RANK3: data =
// RANK3-NEXT: [3.5,  3.5,  3.5,  3.5]
