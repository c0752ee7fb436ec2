// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-basic.json \
// RUN:   | FileCheck %s --check-prefix=BASIC
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-basic.json \
// RUN:   | commopt-opt | FileCheck %s --check-prefix=BASIC
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-per-layer-forward.json \
// RUN:   | FileCheck %s --check-prefix=PER-LAYER
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-per-layer-forward.json \
// RUN:   | commopt-opt | FileCheck %s --check-prefix=PER-LAYER
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-no-layers.json \
// RUN:   | commopt-opt | FileCheck %s --check-prefix=NO-LAYERS

// Imports of commopt's JSON gradient profile; each input is also parsed and
// verified again by commopt-opt (round trip).

// Layers are listed in backward order, so `layer` counts down from 3. Only
// one layer has its own forward_us: the model-level forward_us gives a single
// forward step. A layer without parameters has a backward step without
// results; every dtype maps to its element type, and a shape of [] to a 0-d
// tensor. Unknown fields ("exporter", "note", "requires_grad") are ignored.
// BASIC-LABEL: module attributes {comm.model = "tiny-mlp", comm.source = "commopt-grad-profile"}
// BASIC-LABEL: func.func @train_step() -> (tensor<1000x2048xf32>, tensor<1000xf32>, tensor<64xbf16>, tensor<f64>, tensor<32000x64xf16>)
// BASIC-NEXT: comm.compute() {cost_us = 3.050000e+04 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
// BASIC-NEXT: %[[FC:.*]]:2 = comm.compute() {cost_us = 4.800000e+02 : f64, layer = 3 : i64, name = "fc", phase = #comm.phase<backward>} : () -> (tensor<1000x2048xf32>, tensor<1000xf32>)
// BASIC-NEXT: %[[FC_W:.*]] = comm.allreduce %[[FC]]#0 {name = "fc.weight", reduce = #comm.reduce<avg>} : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
// BASIC-NEXT: %[[FC_B:.*]] = comm.allreduce %[[FC]]#1 {name = "fc.bias", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
// BASIC-NEXT: comm.compute() {cost_us = 1.250000e+01 : f64, layer = 2 : i64, name = "relu", phase = #comm.phase<backward>} : () -> ()
// BASIC-NEXT: %[[NORM:.*]]:2 = comm.compute() {cost_us = 7.000000e+00 : f64, layer = 1 : i64, name = "norm", phase = #comm.phase<backward>} : () -> (tensor<64xbf16>, tensor<f64>)
// BASIC-NEXT: %[[NORM_S:.*]] = comm.allreduce %[[NORM]]#0 {name = "norm.scale", reduce = #comm.reduce<avg>} : tensor<64xbf16> -> tensor<64xbf16>
// BASIC-NEXT: %[[NORM_T:.*]] = comm.allreduce %[[NORM]]#1 {name = "norm.temperature", reduce = #comm.reduce<avg>} : tensor<f64> -> tensor<f64>
// BASIC-NEXT: %[[EMBED:.*]] = comm.compute() {cost_us = 0.000000e+00 : f64, layer = 0 : i64, name = "embed", phase = #comm.phase<backward>} : () -> tensor<32000x64xf16>
// BASIC-NEXT: %[[EMBED_W:.*]] = comm.allreduce %[[EMBED]] {name = "embed.weight", reduce = #comm.reduce<avg>} : tensor<32000x64xf16> -> tensor<32000x64xf16>
// BASIC-NEXT: return %[[FC_W]], %[[FC_B]], %[[NORM_S]], %[[NORM_T]], %[[EMBED_W]] : tensor<1000x2048xf32>, tensor<1000xf32>, tensor<64xbf16>, tensor<f64>, tensor<32000x64xf16>
// BASIC-NEXT: }

// Every layer has forward_us and the model has none: one forward step per
// layer, in forward order (the reverse of the file's order).
// PER-LAYER-LABEL: module attributes {comm.model = "two-layers", comm.source = "commopt-grad-profile"}
// PER-LAYER-LABEL: func.func @train_step() -> (tensor<10x32xf32>, tensor<32x8xf32>, tensor<32xf32>)
// PER-LAYER-NEXT: comm.compute() {cost_us = 3.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>} : () -> ()
// PER-LAYER-NEXT: comm.compute() {cost_us = 1.500000e+00 : f64, layer = 1 : i64, name = "act", phase = #comm.phase<forward>} : () -> ()
// PER-LAYER-NEXT: comm.compute() {cost_us = 2.000000e+01 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<forward>} : () -> ()
// PER-LAYER-NEXT: %[[FC2:.*]] = comm.compute() {cost_us = 4.000000e+01 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<backward>} : () -> tensor<10x32xf32>
// PER-LAYER-NEXT: %[[FC2_W:.*]] = comm.allreduce %[[FC2]] {name = "fc2.weight", reduce = #comm.reduce<avg>} : tensor<10x32xf32> -> tensor<10x32xf32>
// PER-LAYER-NEXT: comm.compute() {cost_us = 2.500000e+00 : f64, layer = 1 : i64, name = "act", phase = #comm.phase<backward>} : () -> ()
// PER-LAYER-NEXT: %[[FC1:.*]]:2 = comm.compute() {cost_us = 6.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> (tensor<32x8xf32>, tensor<32xf32>)
// PER-LAYER-NEXT: %[[FC1_W:.*]] = comm.allreduce %[[FC1]]#0 {name = "fc1.weight", reduce = #comm.reduce<avg>} : tensor<32x8xf32> -> tensor<32x8xf32>
// PER-LAYER-NEXT: %[[FC1_B:.*]] = comm.allreduce %[[FC1]]#1 {name = "fc1.bias", reduce = #comm.reduce<avg>} : tensor<32xf32> -> tensor<32xf32>
// The optimizer's update reads every reduced gradient.
// PER-LAYER-NEXT: comm.compute(%[[FC2_W]], %[[FC1_W]], %[[FC1_B]]) {cost_us = 1.250000e+01 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<10x32xf32>, tensor<32x8xf32>, tensor<32xf32>) -> ()
// PER-LAYER-NEXT: return %[[FC2_W]], %[[FC1_W]], %[[FC1_B]] : tensor<10x32xf32>, tensor<32x8xf32>, tensor<32xf32>
// PER-LAYER-NEXT: }

// No layers: the forward step alone, and nothing to return.
// NO-LAYERS-LABEL: module attributes {comm.model = "empty", comm.source = "commopt-grad-profile"}
// NO-LAYERS-LABEL: func.func @train_step() {
// NO-LAYERS-NEXT: comm.compute() {cost_us = 1.000000e+01 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
// NO-LAYERS-NEXT: return
// NO-LAYERS-NEXT: }

// A tied parameter is one gradient under its first name, its other names
// recorded on the module; parameters that got no gradient are recorded too.
// Both survive planning.
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-aliases.json \
// RUN:   | commopt-opt --comm-optimize | FileCheck %s --check-prefix=ALIASES
// ALIASES: module attributes {comm.aliases = {embedding.weight = ["head.weight"]}, comm.cluster = "gradientflow-64", comm.cluster_is_default, comm.model = "tied-lm", comm.source = "commopt-grad-profile", comm.unused = ["aux.weight"]}
// ALIASES-COUNT-1: "embedding.weight"
// ALIASES-NOT: "head.weight"

// Header totals that agree with the body: 4 layers (one without params), 5
// params (an alias is no param of its own; unused params count) and 1769
// elements (a scalar holds 1). `"aliases": null` counts as absent.
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals.json \
// RUN:   | commopt-opt | FileCheck %s --check-prefix=TOTALS
// TOTALS: module attributes {comm.aliases = {embedding.weight = ["head.weight"]}, comm.model = "tied-lm", comm.source = "commopt-grad-profile", comm.unused = ["aux.weight", "aux.bias"]}
// TOTALS: comm.compute() {{.*}}name = "head", phase = #comm.phase<backward>}
// TOTALS-NEXT: comm.allreduce {{.*}}name = "head.bias"
// TOTALS-NEXT: comm.compute() {{.*}}name = "act", phase = #comm.phase<backward>}
// TOTALS-NEXT: comm.compute() {{.*}}name = "embedding", phase = #comm.phase<backward>}
// TOTALS-NEXT: comm.allreduce {{.*}}name = "embedding.weight"
// TOTALS-NEXT: comm.allreduce {{.*}}name = "embedding.scale"
// TOTALS-NEXT: comm.compute() {{.*}}name = "aux", phase = #comm.phase<backward>}
// TOTALS-NEXT: comm.allreduce {{.*}}name = "aux.weight"
// TOTALS-NEXT: comm.allreduce {{.*}}name = "aux.bias"
// TOTALS-NEXT: return

// A gradient that is sparse by nature keeps what the profile measured on its
// allreduce: the fraction of rows touched on 1, 2, 4 ranks, and whether
// PyTorch gives it as a sparse COO tensor. A gradient without `sparse` gets
// neither.
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-sparse.json \
// RUN:   | FileCheck %s --check-prefix=SPARSE
// SPARSE: comm.allreduce %{{.*}} {name = "fc.weight", reduce = #comm.reduce<avg>}
// SPARSE: comm.allreduce %{{.*}} {comm.coo_gradient, comm.rows_touched = array<f64: 1.000000e-02, 1.800000e-02, 3.100000e-02>, name = "embedding.weight", reduce = #comm.reduce<avg>} : tensor<100000x64xf32>
// SPARSE: comm.allreduce %{{.*}} {comm.rows_touched = array<f64: 5.000000e-01>, name = "offsets.weight", reduce = #comm.reduce<avg>} : tensor<500xf32>
