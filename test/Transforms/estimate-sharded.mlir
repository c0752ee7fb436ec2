// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json" -o /dev/null 2>&1 | FileCheck %s

// A reduce-scatter and an all-gather are each one pass of the ring over the
// whole tensor (the reduce-scatter's operand, the all-gather's result):
// (p - 1) alpha + (p - 1) / p n beta, half an allreduce of the same tensor.
// On flat-4 (1 us per message, 1 GB/s), n = 4 MiB:
//   3 * 1 us + 0.75 * 4194304 B * 1e-9 s/B = 3148.728 us
//   allreduce: twice that, 6297.456 us.
// In bf16 on the wire the reduce-scatter moves half the bytes:
//   3 us + 0.75 * 2097152 B * 1e-9 s/B = 1575.864 us.

// CHECK: comm-estimate: @step
// CHECK: step                14170.776 us
// CHECK: name                bytes  channel      start (us)        end (us)    exposed (us)
// CHECK-DAG: allreduce         4194304        0        {{[0-9.]+}}  {{ *[0-9.]+}}        6297.456
// CHECK-DAG: scatter           4194304        0           0.000        3148.728        3148.728
// CHECK-DAG: gather            4194304        0        3148.728        6297.456        3148.728
// CHECK-DAG: narrow            2097152        0        {{[0-9.]+}}  {{ *[0-9.]+}}        1575.864

func.func @step(%g: tensor<1048576xf32>, %p: tensor<262144xf32>)
    -> (tensor<262144xf32>, tensor<1048576xf32>, tensor<1048576xf32>,
        tensor<262144xf32>) {
  %s = comm.reduce_scatter %g {names = ["scatter"], shards = 4}
      : tensor<1048576xf32> -> tensor<262144xf32>
  %w = comm.all_gather %p {names = ["gather"], shards = 4}
      : tensor<262144xf32> -> tensor<1048576xf32>
  %a = comm.allreduce %g {name = "allreduce"}
      : tensor<1048576xf32> -> tensor<1048576xf32>
  %n = comm.reduce_scatter %g {names = ["narrow"], shards = 4, wire = bf16}
      : tensor<1048576xf32> -> tensor<262144xf32>
  return %s, %w, %a, %n
      : tensor<262144xf32>, tensor<1048576xf32>, tensor<1048576xf32>,
        tensor<262144xf32>
}

// The flat tensor of several gradients is priced as one: two of 2 MiB
// reduce-scattered together cost the 4 MiB's 3148.728 us, and gathered
// back as much (a collective of several members is named by its op).
// CHECK-LABEL: comm-estimate: @flat
// CHECK: step                 6297.456 us
// CHECK-DAG: comm.reduce_scatter         4194304        0           0.000        3148.728        3148.728
// CHECK-DAG: comm.all_gather             4194304        0        3148.728        6297.456        3148.728
func.func @flat(%w: tensor<524288xf32>, %b: tensor<524288xf32>)
    -> (tensor<524288xf32>, tensor<524288xf32>) {
  %s = comm.reduce_scatter %w, %b {names = ["weight", "bias"], shards = 4}
      : tensor<524288xf32>, tensor<524288xf32> -> tensor<262144xf32>
  %p:2 = comm.all_gather %s {names = ["gathered", "again"], shards = 4}
      : tensor<262144xf32> -> tensor<524288xf32>, tensor<524288xf32>
  return %p#0, %p#1 : tensor<524288xf32>, tensor<524288xf32>
}
