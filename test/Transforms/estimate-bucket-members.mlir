// Reports name a bucket by its members: the text report's name column, the
// JSON report's `members`, and the trace's `args.members`. Long member
// lists are shortened to the first and last in the name, never in
// `members`.

// RUN: commopt-opt %s -o /dev/null --comm-estimate="cluster=ib56-16" 2>&1 | FileCheck %s --check-prefix=TEXT
// TEXT: bucket of 2: fc.weight, fc.bias
// TEXT: bucket of 4: layer1.0.conv1.weight .. layer1.1.conv2.weight
// TEXT: single.weight

// RUN: commopt-opt %s -o /dev/null --comm-estimate="cluster=ib56-16 report=json" 2>&1 | FileCheck %s --check-prefix=JSON
// JSON: "name": "bucket of 2: fc.weight, fc.bias",
// JSON-NEXT: "members": [
// JSON-NEXT: "fc.weight",
// JSON-NEXT: "fc.bias"
// JSON-NEXT: ],
// JSON: "name": "bucket of 4: layer1.0.conv1.weight .. layer1.1.conv2.weight",
// JSON-NEXT: "members": [
// JSON-NEXT: "layer1.0.conv1.weight",
// JSON-NEXT: "layer1.0.conv2.weight",
// JSON-NEXT: "layer1.1.conv1.weight",
// JSON-NEXT: "layer1.1.conv2.weight"
// JSON-NEXT: ],

// RUN: commopt-translate --export-timeline --timeline-cluster=ib56-16 %s | FileCheck %s --check-prefix=TRACE
// TRACE: "name":"bucket of 2: fc.weight, fc.bias",{{.*}}"members":["fc.weight","fc.bias"]
// TRACE: "members":["layer1.0.conv1.weight","layer1.0.conv2.weight","layer1.1.conv1.weight","layer1.1.conv2.weight"]

// A bucket whose op names no parameters keeps the plain count.
// RUN: sed -e 's/names = \[[^]]*\], //' %s | commopt-opt -o /dev/null --comm-estimate="cluster=ib56-16" 2>&1 | FileCheck %s --check-prefix=UNNAMED
// UNNAMED: bucket of 2{{ }}
// UNNAMED-NOT: fc.weight

func.func @step(%w: tensor<1000x512xf32>, %b: tensor<1000xf32>,
                %c0: tensor<64x64x3x3xf32>, %c1: tensor<64x64x3x3xf32>,
                %c2: tensor<64x64x3x3xf32>, %c3: tensor<64x64x3x3xf32>,
                %s: tensor<4096xf32>)
    -> (tensor<1000x512xf32>, tensor<1000xf32>, tensor<64x64x3x3xf32>,
        tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>,
        tensor<4096xf32>) {
  %r:2 = comm.fused_allreduce %w, %b {names = ["fc.weight", "fc.bias"], reduce = #comm.reduce<avg>} : tensor<1000x512xf32>, tensor<1000xf32> -> tensor<1000x512xf32>, tensor<1000xf32>
  %t = comm.start %c0, %c1, %c2, %c3 {names = ["layer1.0.conv1.weight", "layer1.0.conv2.weight", "layer1.1.conv1.weight", "layer1.1.conv2.weight"], reduce = #comm.reduce<avg>} : tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>
  comm.compute () {cost_us = 100.0, name = "backward", phase = #comm.phase<backward>} : () -> ()
  %c:4 = comm.wait %t : tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>
  %single = comm.allreduce %s {name = "single.weight", reduce = #comm.reduce<avg>} : tensor<4096xf32> -> tensor<4096xf32>
  return %r#0, %r#1, %c#0, %c#1, %c#2, %c#3, %single : tensor<1000x512xf32>, tensor<1000xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<64x64x3x3xf32>, tensor<4096xf32>
}
