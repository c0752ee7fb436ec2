// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/../../bench/cluster/emulated-2x2-1gbit.json" | FileCheck %s
// RUN: commopt-opt %s --comm-estimate="cluster=%S/../../bench/cluster/emulated-2x2-1gbit.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLAT
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/../../bench/cluster/emulated-2x2-1gbit.json" --comm-estimate="cluster=%S/../../bench/cluster/emulated-2x2-1gbit.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PICKED

// On the description calibrated on two emulated nodes of two ranks at
// 1 Gbit/s (bench/runtime/two_level.sh, BENCHMARKS.md "Two levels on
// emulated nodes"), the planner picks the hierarchical allreduce for
// ResNet-50's fused gradients (25557032 f32), as was measured fastest there
// (1.007 s against the flat ring's 1.284 s). Its prices are those the
// benchmark compares with the measurements: with inter-node beta
// 8.478e-9 s/B and intra-node beta 1.188e-9 s/B (both alphas 0),
//   ring:         2 * 3/4 * n * 8.478e-3 us/B                 = 1.300 s
//   hierarchical: 2 * 1/2 * n * (1.188e-3 + 8.478e-3) us/B    = 0.988 s

// The choice replaces an algorithm already there.
// CHECK-LABEL: func.func @resnet50
// CHECK: comm.allreduce {{.*}}{algorithm = #comm.algorithm<hierarchical>, name = "auto"}
// CHECK: comm.allreduce {{.*}}{algorithm = #comm.algorithm<hierarchical>, name = "ring"}

// Priced before the choice (the description's own algorithm is the ring,
// and the second collective asks for it) and after.
// FLAT: auto       102228128        0           0.000     1300063.831
// FLAT: ring       102228128        0     1300063.831     2600127.662
// PICKED: auto       102228128        0           0.000      988162.789
// PICKED: ring       102228128        0      988162.789     1976325.577
func.func @resnet50(%g: tensor<25557032xf32>)
    -> (tensor<25557032xf32>, tensor<25557032xf32>) {
  %0 = comm.allreduce %g {name = "auto"}
      : tensor<25557032xf32> -> tensor<25557032xf32>
  %1 = comm.allreduce %g {name = "ring", algorithm = #comm.algorithm<ring>}
      : tensor<25557032xf32> -> tensor<25557032xf32>
  return %0, %1 : tensor<25557032xf32>, tensor<25557032xf32>
}
