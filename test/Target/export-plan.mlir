// RUN: commopt-translate %s --export-plan | FileCheck %s
// RUN: commopt-translate %s --export-plan | %python -c "import json, sys; json.load(sys.stdin)"

// The collectives of a planned step in issue order: a start carrying a bucket
// with an f16 wire, two pieces of a partitioned gradient, a sparse allreduce,
// a started sparse allreduce (on its channel) and a collective the plan left
// unscheduled. comm.wait ops are not in the
// plan, and neither are ops that do not communicate.

// CHECK:      "format": "commopt-plan",
// CHECK-NEXT: "version": 1,
// CHECK:      "model": "tiny",
// CHECK-NEXT: "function": "train_step",
// CHECK-NEXT: "world_size": 8,
// CHECK-NEXT: "cluster": {
// CHECK-NEXT:  "name": "nvlink-8",
// CHECK-NEXT:  "ranks": 8,
// CHECK-NEXT:  "description": {
// CHECK:      "estimate": {
// CHECK-NEXT:  "step_us": 200,
// CHECK-NEXT:  "compute_us": 150,
// CHECK-NEXT:  "communication_us": 60,
// CHECK-NEXT:  "exposed_us": 50,
// CHECK-NEXT:  "mode": "step"
// CHECK:      "collectives": [
// CHECK-NEXT:  {
// CHECK-NEXT:   "kind": "dense",
// CHECK-NEXT:   "op": "comm.start",
// CHECK-NEXT:   "reduce": "avg",
// CHECK-NEXT:   "wire": "f16",
// CHECK-NEXT:   "prescale": 0.25,
// CHECK-NEXT:   "channel": 1,
// CHECK-NEXT:   "priority": 2,
// CHECK-NEXT:   "start_us": 10,
// CHECK-NEXT:   "end_us": 20,
// CHECK-NEXT:   "gradients": [
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "fc.weight",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:      8,
// CHECK-NEXT:      4
// CHECK-NEXT:     ],
// CHECK-NEXT:     "dtype": "f32",
// CHECK-NEXT:     "offset": 0,
// CHECK-NEXT:     "count": 32
// CHECK-NEXT:    },
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "fc.bias",
// CHECK:          "count": 8
// CHECK:        "op": "comm.start",
// CHECK-NEXT:   "reduce": "sum",
// CHECK-NEXT:   "wire": "none",
// CHECK-NEXT:   "prescale": 1,
// CHECK-NEXT:   "channel": 0,
// CHECK-NEXT:   "priority": null,
// CHECK-NEXT:   "gradients": [
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "conv.weight",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:      4,
// CHECK-NEXT:      2,
// CHECK-NEXT:      3
// CHECK-NEXT:     ],
// CHECK-NEXT:     "dtype": "bf16",
// CHECK-NEXT:     "offset": 0,
// CHECK-NEXT:     "count": 12
// CHECK:        "op": "comm.start",
// CHECK:          "name": "conv.weight",
// CHECK:          "offset": 12,
// CHECK-NEXT:     "count": 12
// CHECK:        "kind": "sparse",
// CHECK-NEXT:   "op": "comm.sparse_allreduce",
// CHECK-NEXT:   "reduce": "avg",
// CHECK-NEXT:   "wire": "none",
// CHECK-NEXT:   "prescale": 1,
// CHECK-NEXT:   "channel": null,
// CHECK-NEXT:   "priority": null,
// CHECK-NEXT:   "sparse": {
// CHECK-NEXT:    "select": "chunk",
// CHECK-NEXT:    "density": 0.5,
// CHECK-NEXT:    "exchange": "chunk",
// CHECK-NEXT:    "chunk_elements": 16
// CHECK-NEXT:   },
// CHECK-NEXT:   "gradients": [
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "embed.weight",
// CHECK:        "kind": "sparse",
// CHECK-NEXT:   "op": "comm.sparse_start",
// CHECK-NEXT:   "reduce": "sum",
// CHECK-NEXT:   "wire": "none",
// CHECK-NEXT:   "prescale": 1,
// CHECK-NEXT:   "channel": 1,
// CHECK-NEXT:   "priority": 0,
// CHECK-NEXT:   "sparse": {
// CHECK-NEXT:    "select": "topk",
// CHECK-NEXT:    "density": 0.25,
// CHECK-NEXT:    "exchange": "hash"
// CHECK-NEXT:   },
// CHECK-NEXT:   "gradients": [
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "pos.weight",
// CHECK:        "kind": "dense",
// CHECK-NEXT:   "op": "comm.allreduce",
// CHECK:        "channel": null,
// CHECK:          "name": "head.bias",
// CHECK:          "dtype": "f64",
// CHECK-NOT:    "op":
module attributes {comm.model = "tiny"} {
  ml_program.global private mutable @embed_weight_residual(dense<0.0> : tensor<64xf32>) : tensor<64xf32>
  ml_program.global private mutable @pos_weight_residual(dense<0.0> : tensor<32xf32>) : tensor<32xf32>
  func.func @train_step() -> (tensor<8x4xf32>, tensor<8xf32>, tensor<4x2x3xbf16>, tensor<64xf32>, tensor<32xf32>, tensor<2xf64>)
      attributes {comm.estimate = {cluster = "nvlink-8", communication_us = 60.0 : f64, compute_us = 150.0 : f64, exposed_us = 50.0 : f64, mode = "step", ranks = 8 : i64, step_us = 200.0 : f64}} {
    %w, %b = comm.compute () {cost_us = 10.0, layer = 2, phase = #comm.phase<backward>} : () -> (tensor<8x4xf32>, tensor<8xf32>)
    %t0 = comm.start %w, %b {channel = 1 : i64, comm.end_us = 20.0 : f64, comm.start_us = 10.0 : f64, names = ["fc.weight", "fc.bias"], prescale = 2.500000e-01 : f64, priority = 2 : i64, reduce = #comm.reduce<avg>, wire = f16} : tensor<8x4xf32>, tensor<8xf32>
    %c = comm.compute () {cost_us = 10.0, layer = 1, phase = #comm.phase<backward>} : () -> tensor<4x2x3xbf16>
    %flat = tensor.collapse_shape %c [[0, 1, 2]] : tensor<4x2x3xbf16> into tensor<24xbf16>
    %p0 = tensor.extract_slice %flat[0] [12] [1] : tensor<24xbf16> to tensor<12xbf16>
    %t1 = comm.start %p0 {names = ["conv.weight"]} : tensor<12xbf16>
    %p1 = tensor.extract_slice %flat[12] [12] [1] : tensor<24xbf16> to tensor<12xbf16>
    %t2 = comm.start %p1 {names = ["conv.weight"]} : tensor<12xbf16>
    %e = comm.compute () {cost_us = 10.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<64xf32>
    %res = ml_program.global_load @embed_weight_residual : tensor<64xf32>
    %er, %eres = comm.sparse_allreduce %e, %res {chunk_elements = 16 : i64, density = 5.000000e-01 : f64, exchange = #comm.exchange<chunk>, name = "embed.weight", reduce = #comm.reduce<avg>, select = #comm.select<chunk>} : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>, tensor<64xf32>
    ml_program.global_store @embed_weight_residual = %eres : tensor<64xf32>
    %pos = comm.compute () {cost_us = 10.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<32xf32>
    %pres = ml_program.global_load @pos_weight_residual : tensor<32xf32>
    %t3 = comm.sparse_start %pos, %pres {channel = 1 : i64, density = 2.500000e-01 : f64, exchange = #comm.exchange<hash>, name = "pos.weight", priority = 0 : i64, select = #comm.select<topk>} : tensor<32xf32>, tensor<32xf32>
    %h = comm.compute () {cost_us = 10.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<2xf64>
    %hr = comm.allreduce %h {name = "head.bias"} : tensor<2xf64> -> tensor<2xf64>
    %r0:2 = comm.wait %t0 : tensor<8x4xf32>, tensor<8xf32>
    %r1 = comm.wait %t1 : tensor<12xbf16>
    %r2 = comm.wait %t2 : tensor<12xbf16>
    %r3:2 = comm.wait %t3 : tensor<32xf32>, tensor<32xf32>
    ml_program.global_store @pos_weight_residual = %r3#1 : tensor<32xf32>
    %empty = tensor.empty() : tensor<24xbf16>
    %i0 = tensor.insert_slice %r1 into %empty[0] [12] [1] : tensor<12xbf16> into tensor<24xbf16>
    %i1 = tensor.insert_slice %r2 into %i0[12] [12] [1] : tensor<12xbf16> into tensor<24xbf16>
    %cr = tensor.expand_shape %i1 [[0, 1, 2]] output_shape [4, 2, 3] : tensor<24xbf16> into tensor<4x2x3xbf16>
    return %r0#0, %r0#1, %cr, %er, %r3#0, %hr : tensor<8x4xf32>, tensor<8xf32>, tensor<4x2x3xbf16>, tensor<64xf32>, tensor<32xf32>, tensor<2xf64>
  }
}
