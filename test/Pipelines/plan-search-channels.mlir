// comm-optimize's search schedules each option set on every channel count
// from the plan's down to one. On the test cluster (an allreduce of n bytes
// costs 10 us + n / 1024 us; two channels that share the link), a and b
// (1 MiB each) are ready 10 us apart, and update_a needs a. On one channel
// a runs alone at the full rate and update_a starts at 1144 us; on two, b
// starts beside a and halves its rate, and update_a waits until 2158 us.
// fusion=none keeps the two allreduces apart.

// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json fusion=none channels=2 estimate=step" -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: FileCheck %s --check-prefix=ONE < %t.mlir

// REPORT: comm-optimize: 2 plans compared, each option turned on and off on each channel count (simulated step of every function):
// REPORT-NEXT: channels=2 7158.000 us{{$}}
// REPORT-NEXT: channels=1 6144.000 us  <- chosen

// ONE: comm.plan_search = [{lossy = [], options = "channels=2", step_us = 7.158000e+03 : f64}, {chosen, lossy = [], options = "channels=1", step_us = 6.144000e+03 : f64}]
// ONE-NOT: channel =

// With another freedom on (wire=f16), each of its option sets is compared
// on both channel counts; the cluster's channels (channels=0) are the most.
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json fusion=none wire=f16 estimate=step" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WIRE
// WIRE: comm-optimize: 4 plans compared, each option turned on and off on each channel count
// WIRE-NEXT: wire=f16 channels=2 6134.000 us{{$}}
// WIRE-NEXT: wire=f16 channels=1 5632.000 us  <- chosen
// WIRE-NEXT: wire=none channels=2 7158.000 us{{$}}
// WIRE-NEXT: wire=none channels=1 6144.000 us{{$}}

// Cases left alone. search=false plans the channels given; the default
// (the cluster's channels, no other freedom) is planned once, without a
// search; more channels than the cluster has cannot be priced, so they are
// planned as asked.
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json fusion=none channels=2 search=false" | FileCheck %s --check-prefix=TWO
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json fusion=none" | FileCheck %s --check-prefix=TWO
// RUN: commopt-opt %s --comm-optimize="cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json fusion=none channels=3" | FileCheck %s --check-prefix=THREE
// TWO-NOT: comm.plan_search
// TWO: comm.start %{{.*}}names = ["a"]
// TWO: comm.start %{{.*}}channel = 1 : i64, names = ["b"]
// THREE-NOT: comm.plan_search
// THREE: comm.start %{{.*}}channel = 1 : i64, names = ["b"]

func.func @step() -> (tensor<262144xf32>, tensor<262144xf32>) {
  comm.compute () {cost_us = 100.0, name = "forward", phase = #comm.phase<forward>} : () -> ()
  %a = comm.compute () {cost_us = 10.0, layer = 1, name = "l1", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %b = comm.compute () {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %ra = comm.allreduce %a {name = "a", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %rb = comm.allreduce %b {name = "b", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %u = comm.compute (%ra) {cost_us = 5000.0, name = "update_a"} : (tensor<262144xf32>) -> tensor<262144xf32>
  return %u, %rb : tensor<262144xf32>, tensor<262144xf32>
}
