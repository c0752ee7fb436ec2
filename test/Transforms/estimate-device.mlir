// RUN: commopt-opt %s -o /dev/null \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-shared-channels.json device=%S/Inputs/slow-device.json" 2>&1 \
// RUN:   | FileCheck %s

// Ops without a measured cost are timed with the device's roofline
// (docs/CostModel.md, section 3): max(flops / peak, bytes / bandwidth).
// arith.addf on tensor<1024xf32> does 1024 flops and moves 3 x 4096 B:
// max(1024 / 1.024e9 s, 12288 / 6.144e9 s) = max(1 us, 2 us) = 2 us. The
// allreduce of the 4096 B result (10 us + 4096 / 1024 us = 14 us) follows.

// CHECK: comm-estimate: @roofline
// CHECK: device slow-device
// CHECK: step 16.000 us
// CHECK-NEXT: compute 2.000 us
// CHECK-NEXT: communication 14.000 us
func.func @roofline(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %sum = arith.addf %a, %b : tensor<1024xf32>
  %r = comm.allreduce %sum : tensor<1024xf32> -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
