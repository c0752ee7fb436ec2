// A process group on a grid with an axis of size 0, found by
// commopt-ir-fuzzer (docs/Robustness.md): the op verifier rejects it, so no
// pass prices or lowers a group without processes.
//
// RUN: not commopt-opt %S/Inputs/ir-zero-size-grid.mlir --comm-optimize 2>&1 | FileCheck %s
// RUN: not commopt-translate %S/Inputs/ir-zero-size-grid.mlir --export-plan 2>&1 | FileCheck %s
//
// CHECK: error: 'comm.allreduce' op group's grid @grid has no processes: its axis 0 has size 0
