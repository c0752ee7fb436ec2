// RUN: commopt-translate %s --export-plan | FileCheck %s
// RUN: commopt-translate %s --export-plan | %python -c "import json, sys; json.load(sys.stdin)"

// A mixed-wire bucket says for each gradient whether it travels in the
// bucket's wire type; other collectives say nothing of it.

// CHECK:      "collectives": [
// CHECK-NEXT:  {
// CHECK-NEXT:   "kind": "dense",
// CHECK-NEXT:   "op": "comm.start",
// CHECK-NEXT:   "reduce": "avg",
// CHECK-NEXT:   "wire": "f16",
// CHECK-NEXT:   "prescale": 0.25,
// CHECK-NEXT:   "channel": 0,
// CHECK-NEXT:   "priority": null,
// CHECK-NEXT:   "gradients": [
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "fc.weight",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:      8,
// CHECK-NEXT:      4
// CHECK-NEXT:     ],
// CHECK-NEXT:     "dtype": "f32",
// CHECK-NEXT:     "offset": 0,
// CHECK-NEXT:     "count": 32,
// CHECK-NEXT:     "narrowed": true
// CHECK-NEXT:    },
// CHECK-NEXT:    {
// CHECK-NEXT:     "name": "fc.bias",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:      8
// CHECK-NEXT:     ],
// CHECK-NEXT:     "dtype": "f32",
// CHECK-NEXT:     "offset": 0,
// CHECK-NEXT:     "count": 8,
// CHECK-NEXT:     "narrowed": false
// CHECK-NEXT:    }
// CHECK-NEXT:   ]
// CHECK-NEXT:  },
// CHECK-NEXT:  {
// CHECK-NEXT:   "kind": "dense",
// CHECK-NEXT:   "op": "comm.allreduce",
// CHECK-NOT:    "narrowed"
// CHECK:        ]

module attributes {comm.model = "tiny"} {
  func.func @train_step() -> (tensor<8x4xf32>, tensor<8xf32>, tensor<2xf32>)
      attributes {comm.estimate = {cluster = "nvlink-8", communication_us = 60.0 : f64, compute_us = 20.0 : f64, exposed_us = 50.0 : f64, mode = "step", ranks = 8 : i64, step_us = 70.0 : f64}} {
    %w, %b = comm.compute () {cost_us = 10.0} : () -> (tensor<8x4xf32>, tensor<8xf32>)
    %t = comm.start %w, %b {names = ["fc.weight", "fc.bias"], narrowed = array<i1: true, false>, prescale = 2.500000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16} : tensor<8x4xf32>, tensor<8xf32>
    %h = comm.compute () {cost_us = 10.0} : () -> tensor<2xf32>
    %hr = comm.allreduce %h {name = "head.bias"} : tensor<2xf32> -> tensor<2xf32>
    %r:2 = comm.wait %t : tensor<8x4xf32>, tensor<8xf32>
    return %r#0, %r#1, %hr : tensor<8x4xf32>, tensor<8xf32>, tensor<2xf32>
  }
}
