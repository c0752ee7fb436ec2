// RUN: commopt-translate %s --export-plan | FileCheck %s
// RUN: commopt-translate %s --export-plan | %python -c "import json, sys; json.load(sys.stdin)"

// The lossless rows exchange goes into the plan with its row length in
// chunk_elements (the product of the dimensions after the first, which the
// bridge needs to cut the gradient into rows), blocking or started.

// CHECK:      "kind": "sparse",
// CHECK:      "channel": null,
// CHECK:      "sparse": {
// CHECK-NEXT:   "select": "rows",
// CHECK-NEXT:   "density": 0.015625,
// CHECK-NEXT:   "exchange": "hash",
// CHECK-NEXT:   "chunk_elements": 64
// CHECK-NEXT: },
// CHECK:      "name": "embedding.weight",
// CHECK-NEXT: "shape": [
// CHECK-NEXT:   1000,
// CHECK-NEXT:   64
// CHECK-NEXT: ],

// CHECK:      "kind": "sparse",
// CHECK:      "channel": 2,
// CHECK:      "sparse": {
// CHECK-NEXT:   "select": "rows",
// CHECK-NEXT:   "density": 0.5,
// CHECK-NEXT:   "exchange": "allgather",
// CHECK-NEXT:   "chunk_elements": 1
// CHECK-NEXT: },
// CHECK:      "name": "offsets",
func.func @train_step(%g: tensor<1000x64xf32>, %o: tensor<300xf32>)
    -> (tensor<1000x64xf32>, tensor<300xf32>)
    attributes {comm.estimate = {cluster = "flat-16", communication_us = 60.0 : f64, compute_us = 150.0 : f64, exposed_us = 50.0 : f64, mode = "step", ranks = 16 : i64, step_us = 200.0 : f64}} {
  %0 = comm.sparse_allreduce %g
      {density = 0.015625, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<avg>,
       name = "embedding.weight"}
      : tensor<1000x64xf32> -> tensor<1000x64xf32>
  %t = comm.sparse_start %o
      {channel = 2 : i64, density = 0.5, select = #comm.select<rows>,
       exchange = #comm.exchange<allgather>, reduce = #comm.reduce<avg>,
       name = "offsets"}
      : tensor<300xf32>
  %1 = comm.wait %t : tensor<300xf32>
  return %0, %1 : tensor<1000x64xf32>, tensor<300xf32>
}
