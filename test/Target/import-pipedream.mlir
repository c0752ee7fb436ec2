// RUN: commopt-translate --import-pipedream %S/Inputs/pipedream-small.graph.txt \
// RUN:   | FileCheck %s
// RUN: commopt-translate --import-pipedream %S/Inputs/pipedream-small.graph.txt \
// RUN:   | commopt-opt | FileCheck %s
// RUN: commopt-translate --import-pipedream %S/Inputs/pipedream-small.graph.txt \
// RUN:   --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// RUN: commopt-translate --import-pipedream %S/Inputs/tiny-model/graph.txt \
// RUN:   | FileCheck %s --check-prefix=DIR-NAME

// Import of a small pipedream graph.txt (parsed and verified again by
// commopt-opt). The input node is left out of the compute. Forward follows
// the edges; among nodes that are ready together, the one listed first in
// the file goes first (node3 before node2, and node4, listed second, only
// after node2 that feeds it). A description spanning several lines is joined
// into one; a list activation_size and a trailing stage_id are accepted. Each
// node with parameters yields one f32 gradient of parameter_size / 4
// elements, named after the node.

// CHECK-LABEL: module attributes {comm.model = "pipedream-small", comm.source = "pipedream"}
// CHECK-LABEL: func.func @train_step() -> (tensor<10xf32>, tensor<256xf32>)
// CHECK-NEXT: comm.compute() {cost_us = 1.500000e+03 : f64, layer = 0 : i64, name = "node3: EmuBidirLSTM( (bidir): LSTM(4, 4, bidirectional=True) (layer1): LSTM(4, 4) )", phase = #comm.phase<forward>} : () -> ()
// CHECK-NEXT: comm.compute() {cost_us = 1.250000e+02 : f64, layer = 1 : i64, name = "node2: ReLU(inplace)", phase = #comm.phase<forward>} : () -> ()
// CHECK-NEXT: comm.compute() {cost_us = 2.500000e+02 : f64, layer = 2 : i64, name = "node4: Linear(in_features=4, out_features=2, bias=True)", phase = #comm.phase<forward>} : () -> ()
// CHECK-NEXT: comm.compute() {cost_us = 0.000000e+00 : f64, layer = 3 : i64, name = "node5: Add", phase = #comm.phase<forward>} : () -> ()
// CHECK-NEXT: comm.compute() {cost_us = 0.000000e+00 : f64, layer = 3 : i64, name = "node5: Add", phase = #comm.phase<backward>} : () -> ()
// CHECK-NEXT: %[[LINEAR:.*]] = comm.compute() {cost_us = 5.000000e+02 : f64, layer = 2 : i64, name = "node4: Linear(in_features=4, out_features=2, bias=True)", phase = #comm.phase<backward>} : () -> tensor<10xf32>
// CHECK-NEXT: %[[LINEAR_G:.*]] = comm.allreduce %[[LINEAR]] {name = "node4", reduce = #comm.reduce<avg>} : tensor<10xf32> -> tensor<10xf32>
// CHECK-NEXT: comm.compute() {cost_us = 6.250000e+01 : f64, layer = 1 : i64, name = "node2: ReLU(inplace)", phase = #comm.phase<backward>} : () -> ()
// CHECK-NEXT: %[[LSTM:.*]] = comm.compute() {cost_us = 2.000000e+03 : f64, layer = 0 : i64, name = "node3: EmuBidirLSTM( (bidir): LSTM(4, 4, bidirectional=True) (layer1): LSTM(4, 4) )", phase = #comm.phase<backward>} : () -> tensor<256xf32>
// CHECK-NEXT: %[[LSTM_G:.*]] = comm.allreduce %[[LSTM]] {name = "node3", reduce = #comm.reduce<avg>} : tensor<256xf32> -> tensor<256xf32>
// CHECK-NEXT: return %[[LINEAR_G]], %[[LSTM_G]] : tensor<10xf32>, tensor<256xf32>
// CHECK-NEXT: }

// Each step is located at the line its node starts on.
// LOC-LABEL: func.func @train_step()
// LOC: comm.compute() {{.*}}name = "node3: {{.*}}loc("{{.*}}pipedream-small.graph.txt":3:1)

// pipedream writes <model>/graph.txt: the model is named after the folder.
// DIR-NAME-LABEL: module attributes {comm.model = "tiny-model", comm.source = "pipedream"}
// DIR-NAME-LABEL: func.func @train_step() -> tensor<1xf32>
// DIR-NAME-NEXT: comm.compute() {cost_us = 1.000000e+00 : f64, layer = 0 : i64, name = "node2: Linear(in_features=1, out_features=1, bias=False)", phase = #comm.phase<forward>} : () -> ()
// DIR-NAME-NEXT: %[[STEP:.*]] = comm.compute() {cost_us = 2.000000e+00 : f64, layer = 0 : i64, name = "node2: Linear(in_features=1, out_features=1, bias=False)", phase = #comm.phase<backward>} : () -> tensor<1xf32>
// DIR-NAME-NEXT: %[[GRAD:.*]] = comm.allreduce %[[STEP]] {name = "node2", reduce = #comm.reduce<avg>} : tensor<1xf32> -> tensor<1xf32>
// DIR-NAME-NEXT: return %[[GRAD]] : tensor<1xf32>
