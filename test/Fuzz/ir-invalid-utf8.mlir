// A parameter name that is not UTF-8, found by commopt-ir-fuzzer
// (docs/Robustness.md): the op verifiers reject it before any export writes
// it into JSON.
//
// RUN: not commopt-opt %S/Inputs/ir-invalid-utf8.mlir 2>&1 | FileCheck %s
// RUN: not commopt-translate %S/Inputs/ir-invalid-utf8.mlir --export-plan 2>&1 | FileCheck %s
//
// CHECK: error: 'comm.allreduce' op name 'fc....' is not valid UTF-8 at byte 3: names go into JSON plans and reports

// The module's comm.model (and comm.aliases, comm.unused: all comm
// attributes) are checked as the names are.
//
// RUN: not commopt-opt %S/Inputs/ir-invalid-utf8-model.mlir 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: not commopt-translate %S/Inputs/ir-invalid-utf8-model.mlir --export-plan 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: not commopt-translate %S/Inputs/ir-invalid-utf8-model.mlir --export-timeline 2>&1 | FileCheck %s --check-prefix=MODEL
//
// MODEL: error: 'builtin.module' op attribute 'comm.model' holds 'one-...', which is not valid UTF-8 at byte 4: names go into JSON plans and reports
