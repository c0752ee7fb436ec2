// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json report=json report-file=%t.json" -o /dev/null
// RUN: %python -c "import json; [print(f['function'], int(f['peak_memory_bytes'])) for f in json.load(open('%t.json'))['functions']]" | FileCheck %s

// The step memory analysis (StepMemory.h): the most bytes a rank's step
// holds at once, as comm-estimate reports it.

// An allreduce reduces in place: its result shares the gradient's buffer,
// and the rank holds each allreduced gradient's parameter whole (4096 +
// 1024 B). The 1024 B gradient dies at its reduced value's last use,
// before the 8192 B of the last compute are made; the first, returned,
// lives to the end: 5120 + 4096 + max(1024, 8192) = 17408.
// CHECK: in_place 17408
func.func @in_place() -> tensor<1024xf32> {
  %g = comm.compute () {cost_us = 1.0 : f64} : () -> tensor<1024xf32>
  %r = comm.allreduce %g : tensor<1024xf32> -> tensor<1024xf32>
  %s = comm.compute () {cost_us = 1.0 : f64} : () -> tensor<256xf32>
  %t = comm.allreduce %s : tensor<256xf32> -> tensor<256xf32>
  comm.compute (%t) {cost_us = 1.0 : f64} : (tensor<256xf32>) -> ()
  %u = comm.compute () {cost_us = 1.0 : f64} : () -> tensor<2048xf32>
  comm.compute (%u) {cost_us = 1.0 : f64} : (tensor<2048xf32>) -> ()
  return %r : tensor<1024xf32>
}

// A reshape is a view of its operand; the arguments (400 B) are held
// throughout; a use in a nested region keeps the value until its op, whose
// result is a buffer of its own. At the scf.if: 400 + 4096 (%g, viewed as
// %v) + 400 = 4896.
// CHECK: views 4896
func.func @views(%a: tensor<100xf32>, %c: i1) -> tensor<100xf32> {
  %g = comm.compute () {cost_us = 1.0 : f64} : () -> tensor<32x32xf32>
  %v = tensor.collapse_shape %g [[0, 1]] : tensor<32x32xf32> into tensor<1024xf32>
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  %r = scf.if %c -> tensor<100xf32> {
    comm.compute (%v) {cost_us = 1.0 : f64} : (tensor<1024xf32>) -> ()
    scf.yield %a : tensor<100xf32>
  } else {
    scf.yield %a : tensor<100xf32>
  }
  return %r : tensor<100xf32>
}

// A started reduce-scatter's gradient (4096 B) lives until its wait, and
// its shard (1024 B) from its start; an all-gather's whole tensor (4096 B)
// too, until its last use. At the wait of the all-gather: the shard
// argument (1024), the gradient, the reduce-scatter's shard and the
// gathered tensor: 1024 + 4096 + 1024 + 4096 = 10240; the compute after it
// sees the gradient freed.
// CHECK: sharded 10240
func.func @sharded(%s: tensor<256xf32>) -> tensor<256xf32> {
  %g = comm.compute () {cost_us = 1.0 : f64} : () -> tensor<1024xf32>
  %t = comm.reduce_scatter_start %g {shards = 4 : i64} : tensor<1024xf32>
  %u = comm.all_gather_start %s {shards = 4 : i64} : tensor<256xf32>
  %w = comm.wait %u : tensor<1024xf32>
  %h = comm.wait %t : tensor<256xf32>
  comm.compute (%w) {cost_us = 1.0 : f64} : (tensor<1024xf32>) -> ()
  return %h : tensor<256xf32>
}

// Dynamic shapes count nothing; nor do sharded collectives' gradients as
// parameters: only the 64 B argument.
// CHECK: dynamic 64
func.func @dynamic(%n: index, %a: tensor<16xf32>) -> tensor<?xf32> {
  %g = tensor.empty(%n) : tensor<?xf32>
  %r = comm.allreduce %g : tensor<?xf32> -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// An index is 8 bytes; elements of other types (complex, here) are not
// counted: 4 x 8 = 32.
// CHECK: other_elements 32
func.func @other_elements(%i: tensor<4xindex>, %c: tensor<4xcomplex<f32>>) -> tensor<4xindex> {
  return %i : tensor<4xindex>
}
