// RUN: commopt-opt %s --comm-sparsify -split-input-file | FileCheck %s
// RUN: commopt-opt %s --comm-sparsify="min-bytes=0" -split-input-file | FileCheck %s --check-prefix=MIN0
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/single-rank.json" -split-input-file | FileCheck %s --check-prefix=ONE
// RUN: commopt-opt %s --comm-sparsify="device=%S/Inputs/slow-device.json" -split-input-file | FileCheck %s --check-prefix=SLOW
// RUN: commopt-opt %s --comm-sparsify="exclude=fc.weight,no.such.parameter" -split-input-file | FileCheck %s --check-prefix=EXCLUDE
// RUN: commopt-opt %s --comm-sparsify="device=%S/Inputs/slow-device.json all" -split-input-file | FileCheck %s --check-prefix=ALL

// Exchange chosen by the cost model on clusters of few and of many ranks.
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-4.json" -split-input-file | FileCheck %s --check-prefix=FEW
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json" -split-input-file | FileCheck %s --check-prefix=MANY
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-4.json density=0.01 chunk-elements=1048576" -split-input-file | FileCheck %s --check-prefix=FEW-COARSE
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json density=0.01 chunk-elements=1048576" -split-input-file | FileCheck %s --check-prefix=MANY-COARSE

// Fixed exchanges and densities on 64 ranks.
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json exchange=hash select=topk" -split-input-file | FileCheck %s --check-prefix=HASH
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json exchange=chunk select=topk chunk-elements=65536" -split-input-file | FileCheck %s --check-prefix=CHUNK
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json exchange=allgather density=0.01" -split-input-file | FileCheck %s --check-prefix=AG1
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json exchange=allgather density=0.05" -split-input-file | FileCheck %s --check-prefix=AG5
// RUN: commopt-opt %s --comm-sparsify="cluster=%S/Inputs/flat-64.json density=1" -split-input-file | FileCheck %s --check-prefix=D100

// A training step as the profile importers build it, on the default
// cluster (gradientflow-64) at the default density (0.001). The cost model
// gives, in us:
//   fc.weight (2048000 f32): dense 4482, allgather 1821, hash 4325, chunk 2131
//   conv (1048576 f32):      dense 2778, allgather 1658, hash 4148, chunk 2131
//   fc.bias (1000 f32):      dense 992,  allgather 1486, hash 3963, chunk 2077
// (every collective the runtime issues: the allgather exchange is three
// allgathers, the hash exchange seven collectives, the chunk exchange a
// reduce, a broadcast and an allreduce). The weights go sparse with the
// allgather; the bias is below min-bytes (1 MiB) and stays dense, and with
// min-bytes=0 its dense allreduce is still the cheapest. The sparse figures
// are the exchanges'; the local steps (sparseLocalBytes) add about 93 us to
// fc.weight's and 48 us to conv's on the default device, the v100
// (900 GB/s).

// CHECK-LABEL: module attributes {test.split = "train_step"}
// CHECK-NEXT: ml_program.global private mutable @fc_weight_residual(dense<0.000000e+00> : tensor<1000x2048xf32>) : tensor<1000x2048xf32>
// CHECK-NEXT: ml_program.global private mutable @layer4_2_conv3_weight_residual(dense<0.000000e+00> : tensor<2048x512x1x1xf32>) : tensor<2048x512x1x1xf32>
// CHECK-NEXT: func.func @train_step
// CHECK: %[[FC:.*]]:2 = comm.compute() {{.*}}name = "fc"
// CHECK-NEXT: %[[RES:.*]] = ml_program.global_load @fc_weight_residual : tensor<1000x2048xf32>
// CHECK-NEXT: %[[W:.*]]:2 = comm.sparse_allreduce %[[FC]]#0, %[[RES]] {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, name = "fc.weight", reduce = #comm.reduce<avg>, select = #comm.select<threshold>} : tensor<1000x2048xf32>, tensor<1000x2048xf32> -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
// CHECK-NEXT: ml_program.global_store @fc_weight_residual = %[[W]]#1 : tensor<1000x2048xf32>
// CHECK-NEXT: %[[B:.*]] = comm.allreduce %[[FC]]#1 {name = "fc.bias", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
// CHECK-NEXT: %[[CONV:.*]] = comm.compute() {{.*}}name = "layer4.2.conv3"
// CHECK-NEXT: %[[RES2:.*]] = ml_program.global_load @layer4_2_conv3_weight_residual
// CHECK-NEXT: %[[C:.*]]:2 = comm.sparse_allreduce %[[CONV]], %[[RES2]] {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, name = "layer4.2.conv3.weight", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}
// CHECK-NEXT: ml_program.global_store @layer4_2_conv3_weight_residual = %[[C]]#1
// CHECK-NEXT: return %[[W]]#0, %[[B]], %[[C]]#0

// MIN0-LABEL: module attributes {test.split = "train_step"}
// MIN0-NOT: @fc_bias_residual
// MIN0: comm.sparse_allreduce {{.*}}name = "fc.weight"
// MIN0: comm.allreduce {{.*}}name = "fc.bias"
// MIN0: comm.sparse_allreduce {{.*}}name = "layer4.2.conv3.weight"

// With `all`, every candidate goes sparse even where the dense allreduce is
// cheaper (the slow device below); the bias stays below min-bytes.
// ALL-LABEL: module attributes {test.split = "train_step"}
// ALL: comm.sparse_allreduce {{.*}}name = "fc.weight"
// ALL: comm.allreduce {{.*}}name = "fc.bias"
// ALL: comm.sparse_allreduce {{.*}}name = "layer4.2.conv3.weight"

// Excluded parameters stay dense; names that match nothing are ignored.
// EXCLUDE-LABEL: module attributes {test.split = "train_step"}
// EXCLUDE-NOT: @fc_weight_residual
// EXCLUDE: comm.allreduce {{.*}}name = "fc.weight"
// EXCLUDE: comm.sparse_allreduce {{.*}}name = "layer4.2.conv3.weight"

// On a device that runs the local steps at 6.144 GB/s, they cost more than
// the dense allreduce: fc.weight's 84041728 B take 13679 us, conv's
// 43029365 B 7003 us. Everything stays dense.
// SLOW-LABEL: module attributes {test.split = "train_step"}
// SLOW-NOT: comm.sparse_allreduce
// SLOW: comm.allreduce {{.*}}name = "fc.weight"
// SLOW-NOT: comm.sparse_allreduce
// SLOW: comm.allreduce {{.*}}name = "fc.bias"
// SLOW-NOT: comm.sparse_allreduce
// SLOW: comm.allreduce {{.*}}name = "layer4.2.conv3.weight"
// SLOW-NOT: comm.sparse_allreduce
// SLOW: return

// One rank communicates nothing: sparse never pays.
// ONE-LABEL: module attributes {test.split = "train_step"}
// ONE-NOT: ml_program
// ONE-NOT: comm.sparse_allreduce
// ONE: comm.allreduce {{.*}}name = "fc.weight"
// ONE-NOT: comm.sparse_allreduce
// ONE: comm.allreduce {{.*}}name = "fc.bias"
// ONE-NOT: comm.sparse_allreduce
// ONE: comm.allreduce {{.*}}name = "layer4.2.conv3.weight"
// ONE-NOT: comm.sparse_allreduce
// ONE: return
module attributes {test.split = "train_step"} {
  func.func @train_step(%x: tensor<32x2048xf32>)
      -> (tensor<1000x2048xf32>, tensor<1000xf32>, tensor<2048x512x1x1xf32>) {
    %gw, %gb = comm.compute () {cost_us = 480.0, layer = 1, name = "fc",
                                phase = #comm.phase<backward>}
        : () -> (tensor<1000x2048xf32>, tensor<1000xf32>)
    %w = comm.allreduce %gw {name = "fc.weight", reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %b = comm.allreduce %gb {name = "fc.bias", reduce = #comm.reduce<avg>}
        : tensor<1000xf32> -> tensor<1000xf32>
    %gc = comm.compute () {cost_us = 900.0, layer = 0, name = "layer4.2.conv3",
                           phase = #comm.phase<backward>}
        : () -> tensor<2048x512x1x1xf32>
    %c = comm.allreduce %gc {name = "layer4.2.conv3.weight",
                             reduce = #comm.reduce<avg>}
        : tensor<2048x512x1x1xf32> -> tensor<2048x512x1x1xf32>
    return %w, %b, %c
        : tensor<1000x2048xf32>, tensor<1000xf32>, tensor<2048x512x1x1xf32>
  }
}

// -----

// Residual symbols: one per gradient, named after the parameter, unique in
// the module (the symbol table), even across functions and against symbols
// that were there before. Each global comes before the function using it.

// CHECK-LABEL: module attributes {test.split = "names"}
// CHECK-NEXT: func.func private @grad_residual()
// CHECK-NEXT: ml_program.global private mutable @fc_weight_residual(
// CHECK-NEXT: ml_program.global private mutable @grad_residual_0(
// CHECK-NEXT: ml_program.global private mutable @_0_weight_residual(
// CHECK-NEXT: func.func @first
// CHECK: ml_program.global_load @fc_weight_residual
// CHECK: comm.sparse_allreduce {{.*}}name = "fc.weight"
// CHECK: ml_program.global_store @fc_weight_residual
// CHECK: ml_program.global_load @grad_residual_0
// CHECK: comm.sparse_allreduce %{{.*}}, %{{.*}} {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, select = #comm.select<threshold>} : tensor<512x1024xf32>
// CHECK: ml_program.global_store @grad_residual_0
// CHECK: ml_program.global_load @_0_weight_residual
// CHECK: comm.sparse_allreduce {{.*}}name = "0.weight"
// CHECK: ml_program.global_store @_0_weight_residual
// CHECK: ml_program.global private mutable @fc_weight_residual_1(
// CHECK-NEXT: func.func @second
// CHECK: ml_program.global_load @fc_weight_residual_1
// CHECK: comm.sparse_allreduce {{.*}}name = "fc.weight"
// CHECK: ml_program.global_store @fc_weight_residual_1
module attributes {test.split = "names"} {
  func.func private @grad_residual()
  func.func @first(%a: tensor<1000x2048xf32>, %b: tensor<512x1024xf32>,
                   %c: tensor<512x1024xf32>)
      -> (tensor<1000x2048xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>) {
    %0 = comm.allreduce %a {name = "fc.weight"}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %1 = comm.allreduce %b : tensor<512x1024xf32> -> tensor<512x1024xf32>
    %2 = comm.allreduce %c {name = "0.weight"}
        : tensor<512x1024xf32> -> tensor<512x1024xf32>
    return %0, %1, %2
        : tensor<1000x2048xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>
  }
  func.func @second(%a: tensor<1000x2048xf32>) -> tensor<1000x2048xf32> {
    %0 = comm.allreduce %a {name = "fc.weight"}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    return %0 : tensor<1000x2048xf32>
  }
}

// -----

// In a loop, the residual is loaded and stored around the collective in the
// loop body, so every iteration accumulates into it.

// CHECK-LABEL: module attributes {test.split = "loop"}
// CHECK-NEXT: ml_program.global private mutable @w_residual(
// CHECK-NEXT: func.func @loop
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK-NEXT: %[[RES:.*]] = ml_program.global_load @w_residual
// CHECK-NEXT: %[[S:.*]]:2 = comm.sparse_allreduce %[[ACC]], %[[RES]]
// CHECK-NEXT: ml_program.global_store @w_residual = %[[S]]#1
// CHECK-NEXT: scf.yield %[[S]]#0
module attributes {test.split = "loop"} {
  func.func @loop(%g: tensor<1000x2048xf32>, %n: index) -> tensor<1000x2048xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g)
        -> tensor<1000x2048xf32> {
      %x = comm.allreduce %acc {name = "w"}
          : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
      scf.yield %x : tensor<1000x2048xf32>
    }
    return %r : tensor<1000x2048xf32>
  }
}

// -----

// Left alone, although large enough to pay: fused buckets, start/wait,
// max/min, integers, dynamic shapes, wire precision plans and ops already
// in buffer form.

// CHECK-LABEL: module attributes {test.split = "left_alone"}
// CHECK-NOT: ml_program
// CHECK-NOT: comm.sparse_allreduce
// CHECK: func.func @left_alone
// CHECK-NEXT: comm.fused_allreduce
// CHECK-NEXT: comm.start
// CHECK-NEXT: comm.wait
// CHECK-NEXT: comm.allreduce {{.*}}reduce = #comm.reduce<max>
// CHECK-NEXT: comm.allreduce {{.*}}reduce = #comm.reduce<min>
// CHECK-NEXT: comm.allreduce {{.*}} : tensor<1000x2048xi32>
// CHECK-NEXT: comm.allreduce {{.*}} : tensor<?x2048xf32>
// CHECK-NEXT: comm.allreduce {{.*}}wire = bf16
// CHECK-NEXT: comm.allreduce {{.*}}prescale
// CHECK-NEXT: comm.allreduce {{.*}} : memref<1000x2048xf32>
// CHECK-NEXT: return
module attributes {test.split = "left_alone"} {
  func.func @left_alone(%a: tensor<1000x2048xf32>, %b: tensor<1000x2048xf32>,
                        %i: tensor<1000x2048xi32>, %d: tensor<?x2048xf32>,
                        %m: memref<1000x2048xf32>) {
    %0:2 = comm.fused_allreduce %a, %b {reduce = #comm.reduce<avg>}
        : tensor<1000x2048xf32>, tensor<1000x2048xf32>
        -> tensor<1000x2048xf32>, tensor<1000x2048xf32>
    %t = comm.start %a : tensor<1000x2048xf32>
    %1 = comm.wait %t : tensor<1000x2048xf32>
    %2 = comm.allreduce %a {reduce = #comm.reduce<max>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %3 = comm.allreduce %a {reduce = #comm.reduce<min>}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %4 = comm.allreduce %i : tensor<1000x2048xi32> -> tensor<1000x2048xi32>
    %5 = comm.allreduce %d : tensor<?x2048xf32> -> tensor<?x2048xf32>
    %6 = comm.allreduce %a {wire = bf16}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    %7 = comm.allreduce %a {prescale = 0.5}
        : tensor<1000x2048xf32> -> tensor<1000x2048xf32>
    comm.allreduce %m : memref<1000x2048xf32>
    return
  }
}

// -----

// The exchange follows the costs. Clusters flat-4 and flat-64 (Inputs/):
// p ranks in a flat ring, a = 1 us per message, b = 1e-3 us per byte. The
// gradient: N = 10^6 f32 (4 MB), indices of 4 bytes, so s = 8 bytes per
// pair; k = d N entries per rank. With docs/CostModel.md section 2:
//   dense     2(p-1) a + 2(p-1)/p 4N b
//   allgather (p-1) a + (p-1)/p p k s b
//   hash      [(p-1) a + (p-1)/p k s b]                      (all-to-all)
//             + [(p-1) a + (p-1)/p min(N u s, 4N) b], u = 1 - (1-d)^p
//   chunk     C = ceil(N / c) chunks of c elements, ceil(d C) selected:
//             [2(p-1) a + 2(p-1)/p 4C b] + [2(p-1) a + 2(p-1)/p 4 min(ceil(d C) c, N) b]
//
// d = 0.001, c = 32768 (C = 31, one chunk selected), in us:
//   p = 4:  dense 6006, allgather 3 + 24 = 27, hash 9 + 26.96 = 35.96,
//           chunk 6.19 + 202.61 = 208.79                    -> allgather
//   p = 64: dense 8001, allgather 63 + 504 = 567,
//           hash 70.88 + 551.45 = 622.32 (u = 0.0620),
//           chunk 126.24 + 384.05 = 510.29                   -> chunk
// The allgather's volume grows with p; the chunks' does not.
//
// d = 0.01, c = 1048576 (one chunk holding the whole gradient, so the chunk
// exchange sends everything and never pays), in us:
//   p = 4:  allgather 3 + 240 = 243, hash 63 + 239.42 = 302.42 -> allgather
//   p = 64: allgather 63 + 5040 = 5103,
//           hash 141.75 + 3798.93 = 3940.68 (u = 0.4744)      -> hash
// Owners send the union of all selections once, not every rank's pairs to
// every rank.

// FEW-LABEL: func.func @choice
// FEW: comm.sparse_allreduce {{.*}} {density = 1.000000e-03 : f64, exchange = #comm.exchange<allgather>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}
// MANY-LABEL: func.func @choice
// MANY: comm.sparse_allreduce {{.*}} {chunk_elements = 32768 : i64, density = 1.000000e-03 : f64, exchange = #comm.exchange<chunk>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<chunk>}
// FEW-COARSE-LABEL: func.func @choice
// FEW-COARSE: comm.sparse_allreduce {{.*}} {density = 1.000000e-02 : f64, exchange = #comm.exchange<allgather>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}
// MANY-COARSE-LABEL: func.func @choice
// MANY-COARSE: comm.sparse_allreduce {{.*}} {density = 1.000000e-02 : f64, exchange = #comm.exchange<hash>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}

// A fixed exchange is used when it pays (hash 622 and chunk with c = 65536,
// 768 us, against dense 8001); the chunk exchange brings chunk selection
// whatever `select` says.
// HASH-LABEL: func.func @choice
// HASH: comm.sparse_allreduce {{.*}} {density = 1.000000e-03 : f64, exchange = #comm.exchange<hash>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<topk>}
// CHUNK-LABEL: func.func @choice
// CHUNK: comm.sparse_allreduce {{.*}} {chunk_elements = 65536 : i64, density = 1.000000e-03 : f64, exchange = #comm.exchange<chunk>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<chunk>}

// Density on 64 ranks. The allgather pays below d of about 1/p:
//   d = 0.01: allgather 63 + 5040 = 5103 < dense 8001         -> sparse
//   d = 0.05: allgather 63 + 25200 = 25263 > dense 8001       -> dense
// At d = 1 nothing pays: allgather 504063, hash 7938.00 + 4000.50 = 11938.50
// (u = 1), chunk 126.24 + 8001 = 8127.24 (all 31 chunks), dense 8001.
// AG1-LABEL: func.func @choice
// AG1: comm.sparse_allreduce {{.*}} {density = 1.000000e-02 : f64, exchange = #comm.exchange<allgather>, name = "w", reduce = #comm.reduce<avg>, select = #comm.select<threshold>}
// AG5-LABEL: module attributes {test.split = "choice"}
// AG5-NOT: ml_program
// AG5: comm.allreduce {{.*}}name = "w"
// AG5-NOT: comm.sparse_allreduce
// D100-LABEL: module attributes {test.split = "choice"}
// D100-NOT: ml_program
// D100: comm.allreduce {{.*}}name = "w"
// D100-NOT: comm.sparse_allreduce
module attributes {test.split = "choice"} {
  func.func @choice(%g: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {
    %r = comm.allreduce %g {name = "w", reduce = #comm.reduce<avg>}
        : tensor<1000x1000xf32> -> tensor<1000x1000xf32>
    return %r : tensor<1000x1000xf32>
  }
}
