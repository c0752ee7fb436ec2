// RUN: commopt-opt %s --comm-lower-precision | FileCheck %s
// RUN: commopt-opt %s --comm-lower-precision="wire=bf16 cluster=nvlink-8" | FileCheck %s --check-prefix=BF16
// RUN: commopt-opt %s --comm-lower-precision="min-bytes=0 keep-f32=" | FileCheck %s --check-prefix=ALL
// RUN: commopt-opt %s --comm-lower-precision="cluster=ib100-512" | FileCheck %s --check-prefix=IB512
// RUN: commopt-opt %s --comm-lower-precision="cluster=%S/Inputs/cluster-3-ranks.json" | FileCheck %s --check-prefix=THREE
// RUN: commopt-opt %s --comm-lower-precision="cluster=%S/Inputs/cluster-1-rank.json" | FileCheck %s --check-prefix=ONE
// RUN: commopt-opt %s --comm-lower-precision="keep-f32=^fc\.weight$" | FileCheck %s --check-prefix=ANCHORED

// Defaults: f16 on the wire, 64 KiB threshold, biases and normalisation
// parameters kept, prescale 1/64 (gradientflow-64 has 64 ranks).

// 16384 f32 = 65536 bytes: the smallest gradient that goes to f16. The
// prescale depends on the cluster's rank count only.
// CHECK-LABEL: func.func @sizes
// CHECK: comm.allreduce %{{.*}} {name = "below", reduce = #comm.reduce<avg>} : tensor<16383xf32>
// CHECK: comm.allreduce %{{.*}} {name = "at", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16} : tensor<16384xf32>
// CHECK: comm.allreduce %{{.*}} {name = "f64.at", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16} : tensor<8192xf64>
// CHECK: comm.allreduce %{{.*}} {name = "f64.below", reduce = #comm.reduce<avg>} : tensor<8191xf64>
// BF16-LABEL: func.func @sizes
// BF16: {name = "below", reduce = #comm.reduce<avg>}
// BF16: {name = "at", prescale = 1.250000e-01 : f64, reduce = #comm.reduce<avg>, wire = bf16}
// BF16: {name = "f64.at", prescale = 1.250000e-01 : f64, reduce = #comm.reduce<avg>, wire = bf16}
// BF16: {name = "f64.below", reduce = #comm.reduce<avg>}
// ALL-LABEL: func.func @sizes
// ALL: {name = "below", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16}
// ALL: {name = "at", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16}
// ALL: {name = "f64.at", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16}
// ALL: {name = "f64.below", prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16}
// IB512-LABEL: func.func @sizes
// IB512: {name = "at", prescale = 0.001953125 : f64, reduce = #comm.reduce<avg>, wire = f16}
// THREE-LABEL: func.func @sizes
// THREE: {name = "at", prescale = 0.33333333333333331 : f64, reduce = #comm.reduce<avg>, wire = f16}
// ONE-LABEL: func.func @sizes
// ONE: {name = "at", reduce = #comm.reduce<avg>, wire = f16}
func.func @sizes(%a: tensor<16383xf32>, %b: tensor<16384xf32>,
                 %c: tensor<8192xf64>, %d: tensor<8191xf64>)
    -> (tensor<16383xf32>, tensor<16384xf32>, tensor<8192xf64>, tensor<8191xf64>) {
  %0 = comm.allreduce %a {name = "below", reduce = #comm.reduce<avg>} : tensor<16383xf32> -> tensor<16383xf32>
  %1 = comm.allreduce %b {name = "at", reduce = #comm.reduce<avg>} : tensor<16384xf32> -> tensor<16384xf32>
  %2 = comm.allreduce %c {name = "f64.at", reduce = #comm.reduce<avg>} : tensor<8192xf64> -> tensor<8192xf64>
  %3 = comm.allreduce %d {name = "f64.below", reduce = #comm.reduce<avg>} : tensor<8191xf64> -> tensor<8191xf64>
  return %0, %1, %2, %3 : tensor<16383xf32>, tensor<16384xf32>, tensor<8192xf64>, tensor<8191xf64>
}

// Sum and avg are pre-divided; max and min cannot overflow and are not.
// CHECK-LABEL: func.func @reductions
// CHECK: comm.allreduce %{{.*}} {prescale = 1.562500e-02 : f64, wire = f16} : memref<16384xf32>
// CHECK: comm.allreduce %{{.*}} {prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16} : memref<16384xf32>
// CHECK: comm.allreduce %{{.*}} {reduce = #comm.reduce<max>, wire = f16} : memref<16384xf32>
// CHECK: comm.allreduce %{{.*}} {reduce = #comm.reduce<min>, wire = f16} : memref<16384xf32>
func.func @reductions(%m: memref<16384xf32>) {
  comm.allreduce %m : memref<16384xf32>
  comm.allreduce %m {reduce = #comm.reduce<avg>} : memref<16384xf32>
  comm.allreduce %m {reduce = #comm.reduce<max>} : memref<16384xf32>
  comm.allreduce %m {reduce = #comm.reduce<min>} : memref<16384xf32>
  return
}

// A bucket is one message: two gradients of 32 KiB each make 64 KiB. One
// name that matches keep-f32 keeps the whole bucket in f32; unnamed
// gradients ("") never match.
// CHECK-LABEL: func.func @buckets
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["conv1.weight", "conv2.weight"], prescale = 1.562500e-02 : f64, wire = f16}
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["conv1.weight", "fc.bias"]}
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["", "conv2.weight"], prescale = 1.562500e-02 : f64, wire = f16}
// CHECK: comm.fused_allreduce %{{.*}}, %{{.*}} : memref<8192xf32>, memref<8191xf32>
// CHECK-NOT: wire
// CHECK-NEXT: return
// ALL-LABEL: func.func @buckets
// ALL: {names = ["conv1.weight", "fc.bias"], prescale = 1.562500e-02 : f64, wire = f16}
// ALL: comm.fused_allreduce %{{.*}}, %{{.*}} {prescale = 1.562500e-02 : f64, wire = f16} : memref<8192xf32>, memref<8191xf32>
func.func @buckets(%a: tensor<8192xf32>, %b: tensor<8192xf32>,
                   %c: memref<8192xf32>, %d: memref<8191xf32>)
    -> (tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>) {
  %0:2 = comm.fused_allreduce %a, %b {names = ["conv1.weight", "conv2.weight"]}
      : tensor<8192xf32>, tensor<8192xf32> -> tensor<8192xf32>, tensor<8192xf32>
  %1:2 = comm.fused_allreduce %a, %b {names = ["conv1.weight", "fc.bias"]}
      : tensor<8192xf32>, tensor<8192xf32> -> tensor<8192xf32>, tensor<8192xf32>
  %2:2 = comm.fused_allreduce %a, %b {names = ["", "conv2.weight"]}
      : tensor<8192xf32>, tensor<8192xf32> -> tensor<8192xf32>, tensor<8192xf32>
  // 65532 bytes in buffer form: one element short.
  comm.fused_allreduce %c, %d : memref<8192xf32>, memref<8191xf32>
  return %0#0, %1#0, %2#0 : tensor<8192xf32>, tensor<8192xf32>, tensor<8192xf32>
}

// Asynchronous collectives, in tensor and buffer form.
// CHECK-LABEL: func.func @start_wait
// CHECK: comm.start %{{.*}}, %{{.*}} {channel = 1 : i64, names = ["w1", "w2"], prescale = 1.562500e-02 : f64, reduce = #comm.reduce<avg>, wire = f16} : tensor<8192xf32>, tensor<8192xf32>
// CHECK: comm.start %{{.*}} {prescale = 1.562500e-02 : f64, wire = f16} : memref<16384xf32>
// CHECK: comm.start %{{.*}} {names = ["ln_f.weight"]} : memref<16384xf32>
// BF16-LABEL: func.func @start_wait
// BF16: comm.start {{.*}} {channel = 1 : i64, names = ["w1", "w2"], prescale = 1.250000e-01 : f64, reduce = #comm.reduce<avg>, wire = bf16}
func.func @start_wait(%a: tensor<8192xf32>, %b: tensor<8192xf32>,
                      %m: memref<16384xf32>) -> (tensor<8192xf32>, tensor<8192xf32>) {
  %t = comm.start %a, %b {channel = 1 : i64, names = ["w1", "w2"], reduce = #comm.reduce<avg>}
      : tensor<8192xf32>, tensor<8192xf32>
  %t2 = comm.start %m : memref<16384xf32>
  comm.wait %t2
  %t3 = comm.start %m {names = ["ln_f.weight"]} : memref<16384xf32>
  comm.wait %t3
  %r:2 = comm.wait %t : tensor<8192xf32>, tensor<8192xf32>
  return %r#0, %r#1 : tensor<8192xf32>, tensor<8192xf32>
}

// The default keep-f32 pattern, searched anywhere in the name: biases,
// batch norm, layer norm (several spellings) stay in f32.
// CHECK-LABEL: func.func @keep_names
// CHECK: {name = "layer1.0.conv1.weight", prescale = 1.562500e-02 : f64, wire = f16}
// CHECK: {name = "fc.bias"} :
// CHECK: {name = "layer1.0.bn1.weight"} :
// CHECK: {name = "encoder.LayerNorm.weight"} :
// CHECK: {name = "decoder.layer_norm.weight"} :
// CHECK: {name = "ln_f.weight"} :
// CHECK: {name = "fc.weight", prescale = 1.562500e-02 : f64, wire = f16}
// An anchored pattern matches whole names only.
// ANCHORED-LABEL: func.func @keep_names
// ANCHORED: {name = "layer1.0.conv1.weight", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "fc.bias", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "layer1.0.bn1.weight", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "encoder.LayerNorm.weight", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "decoder.layer_norm.weight", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "ln_f.weight", prescale = 1.562500e-02 : f64, wire = f16}
// ANCHORED: {name = "fc.weight"} :
func.func @keep_names(%m: memref<16384xf32>) {
  comm.allreduce %m {name = "layer1.0.conv1.weight"} : memref<16384xf32>
  comm.allreduce %m {name = "fc.bias"} : memref<16384xf32>
  comm.allreduce %m {name = "layer1.0.bn1.weight"} : memref<16384xf32>
  comm.allreduce %m {name = "encoder.LayerNorm.weight"} : memref<16384xf32>
  comm.allreduce %m {name = "decoder.layer_norm.weight"} : memref<16384xf32>
  comm.allreduce %m {name = "ln_f.weight"} : memref<16384xf32>
  comm.allreduce %m {name = "fc.weight"} : memref<16384xf32>
  return
}

// Left alone: integers, gradients no wider than the wire type, collectives
// that already have a wire type. An existing prescale is kept.
// CHECK-LABEL: func.func @left_alone
// CHECK: comm.allreduce %{{.*}} : memref<65536xi32>
// CHECK: comm.allreduce %{{.*}} : memref<65536xf16>
// CHECK: comm.allreduce %{{.*}} : memref<65536xbf16>
// CHECK: comm.allreduce %{{.*}} {wire = bf16} : memref<16384xf32>
// CHECK: comm.allreduce %{{.*}} {prescale = 5.000000e-01 : f64, wire = f16} : memref<16384xf32>
// BF16-LABEL: func.func @left_alone
// BF16: comm.allreduce %{{.*}} : memref<65536xi32>
// BF16: comm.allreduce %{{.*}} : memref<65536xf16>
// BF16: comm.allreduce %{{.*}} : memref<65536xbf16>
// BF16: comm.allreduce %{{.*}} {wire = bf16} : memref<16384xf32>
// BF16: comm.allreduce %{{.*}} {prescale = 5.000000e-01 : f64, wire = bf16} : memref<16384xf32>
func.func @left_alone(%i: memref<65536xi32>, %h: memref<65536xf16>,
                      %bf: memref<65536xbf16>, %m: memref<16384xf32>) {
  comm.allreduce %i : memref<65536xi32>
  comm.allreduce %h : memref<65536xf16>
  comm.allreduce %bf : memref<65536xbf16>
  comm.allreduce %m {wire = bf16} : memref<16384xf32>
  comm.allreduce %m {prescale = 0.5 : f64} : memref<16384xf32>
  return
}

// A dynamic shape has no known size: only min-bytes=0 lowers it.
// CHECK-LABEL: func.func @dynamic
// CHECK: comm.allreduce %{{.*}} : memref<?xf32>
// ALL-LABEL: func.func @dynamic
// ALL: comm.allreduce %{{.*}} {prescale = 1.562500e-02 : f64, wire = f16} : memref<?xf32>
func.func @dynamic(%m: memref<?xf32>) {
  comm.allreduce %m : memref<?xf32>
  return
}
