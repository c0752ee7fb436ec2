// A parameter name that is not UTF-8, found by commopt-ir-fuzzer
// (docs/Robustness.md): the op verifiers reject it before any export writes
// it into JSON.
//
// RUN: not commopt-opt %S/Inputs/ir-invalid-utf8.mlir 2>&1 | FileCheck %s
// RUN: not commopt-translate %S/Inputs/ir-invalid-utf8.mlir --export-plan 2>&1 | FileCheck %s
//
// CHECK: error: 'comm.allreduce' op name 'fc....' is not valid UTF-8 at byte 3: names go into JSON plans and reports
