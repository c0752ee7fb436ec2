// Integers written as doubles at the edge of int64_t: 9223372036854775807.0
// is 2^63 as a double, one past the largest int64_t. LLVM's JSON reader
// (llvm::json::Value::getAsInteger, LLVM 22.1) lets it through its range
// check and converts it, which is undefined behaviour (found by
// commopt-cluster-fuzzer and commopt-device-fuzzer under
// UndefinedBehaviorSanitizer; the fuzz build leaves that upstream
// conversion alone, scripts/sanitizer-suppressions/ubsan-ignorelist.txt). Whatever the
// conversion gives, the descriptions end in an error naming a field.

// RUN: not commopt-opt %s --comm-estimate="cluster=%S/Inputs/cluster-int64-bound.json" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-opt %s --comm-estimate="device=%S/Inputs/device-int64-bound.json" 2>&1 | FileCheck %s --check-prefix=DEVICE

// CLUSTER: error: comm-estimate: option 'cluster': {{.*}}cluster-int64-bound.json: invalid cluster description: {{.*}} at cluster.
// DEVICE: error: comm-estimate: option 'device': {{.*}}device-int64-bound.json: invalid device description: {{.*}} at device.

module attributes {comm.model = "one-layer"} {
  func.func @train_step() -> tensor<1024xf32> {
    %0 = comm.compute() {cost_us = 5.000000e+01 : f64, layer = 0 : i64, name = "fc", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %1 = comm.allreduce %0 {name = "fc.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    return %1 : tensor<1024xf32>
  }
}
