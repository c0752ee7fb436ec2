// RUN: commopt-translate %s --split-input-file --export-plan --verify-diagnostics
// RUN: not commopt-translate %s --split-input-file --export-timeline --timeline-cluster=nvlink-8 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TIMELINE

// TIMELINE: error: export-timeline: function name 'step...' is not valid UTF-8 at byte 4; JSON holds UTF-8 only
// TIMELINE: error: export-timeline: the model name 'tiny...' is not valid UTF-8 at byte 4; JSON holds UTF-8 only

// Symbol names may hold any bytes, and the exports write the function's and
// the module's (the model's, without comm.model) into JSON, which holds
// UTF-8 only: they fail naming the offset instead (docs/BadInput.md).

// expected-error @+1 {{export-plan: function name 'step...' is not valid UTF-8 at byte 4; JSON holds UTF-8 only}}
func.func @"step\FF"() -> tensor<4xf32> attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64}} {
  %g = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
  %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{export-plan: the model name 'tiny...' is not valid UTF-8 at byte 4; JSON holds UTF-8 only}}
module @"tiny\C0" {
  func.func @step() -> tensor<4xf32> attributes {comm.estimate = {cluster = "nvlink-8", ranks = 8 : i64}} {
    %g = comm.compute () {cost_us = 1.0} : () -> tensor<4xf32>
    %r = comm.allreduce %g {name = "w"} : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
