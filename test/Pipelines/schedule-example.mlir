// The README's example of a lit test for a schedule.
// RUN: commopt-opt %s --comm-optimize="cluster=nvlink-8 channels=1" | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK: %[[B:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, layer = 0 : i64
// CHECK-NEXT: %[[T:.*]] = comm.start %{{.*}}, %[[B]] {algorithm = #comm.algorithm<tree>, names = ["l1.w", "l0.w"], priority = 0 : i64
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait %[[T]]
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func @step() -> (tensor<1000xf32>, tensor<1000xf32>) {
  %a = comm.compute () {cost_us = 10.0, layer = 1, phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %ra = comm.allreduce %a {name = "l1.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  %b = comm.compute () {cost_us = 10.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %rb = comm.allreduce %b {name = "l0.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  return %ra, %rb : tensor<1000xf32>, tensor<1000xf32>
}
