// RUN: commopt-opt %s --comm-fuse-buckets --comm-schedule-overlap \
// RUN:   | commopt-opt --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   | FileCheck %s

// Fusion, then overlap, then bufferization: the bucket's start and wait
// work in place on the function's own buffers, with no copies, while the
// unrelated compute runs in between.

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[W:.*]]: memref<256x256xf32>, %[[B:.*]]: memref<256xf32>, %[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: %[[T:.*]] = comm.start %[[W]], %[[B]] {names = ["w", "b"], reduce = #comm.reduce<avg>} : memref<256x256xf32>, memref<256xf32>
// CHECK-NEXT: linalg.add ins(%[[X]], %[[Y]] : memref<4xf32>, memref<4xf32>) outs(%[[X]] : memref<4xf32>)
// CHECK-NEXT: comm.wait %[[T]]{{$}}
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK-NEXT: return %[[W]], %[[B]], %[[X]]
func.func @step(%w: tensor<256x256xf32>, %b: tensor<256xf32>, %x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<256x256xf32>, tensor<256xf32>, tensor<4xf32>) {
  %rw = comm.allreduce %w {name = "w", reduce = #comm.reduce<avg>} : tensor<256x256xf32> -> tensor<256x256xf32>
  %rb = comm.allreduce %b {name = "b", reduce = #comm.reduce<avg>} : tensor<256xf32> -> tensor<256xf32>
  %s = linalg.add ins(%x, %y : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
  return %rw, %rb, %s : tensor<256x256xf32>, tensor<256xf32>, tensor<4xf32>
}
