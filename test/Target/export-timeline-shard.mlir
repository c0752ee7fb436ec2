// The exports read modules whose collectives run among process groups of a
// shard.grid (the shard dialect is registered with them).
//
// RUN: commopt-opt %S/../../examples/end-to-end/shard-step.mlir --comm-import-shard --comm-optimize \
// RUN:   | commopt-translate --export-timeline 2>/dev/null | FileCheck %s
//
// CHECK: "generator":"commopt-translate --export-timeline"
// CHECK: "traceEvents": [
