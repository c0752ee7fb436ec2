// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-independent.json \
// RUN:   | FileCheck %s
// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-independent.json \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s --check-prefix=VALID
// RUN: commopt-translate --export-timeline %s --timeline-mode=steady \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-independent.json \
// RUN:   | FileCheck %s --check-prefix=STEADY
// RUN: commopt-translate --export-timeline %s --timeline-mode=steady \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-independent.json \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s --check-prefix=STEADY-VALID

// The timeline of the two-layer step of test/Transforms/estimate.mlir
// (figures computed there) as Chrome trace event JSON: one process per
// function, named after the model and the function; thread 1 is compute,
// thread 2 + c communication channel c. Complete events ("X") carry the
// start and duration in microseconds; events are written one per line.

// CHECK: {"displayTimeUnit": "ms",
// CHECK-NEXT: "otherData": {"generator":"commopt-translate --export-timeline","model":"toy","cluster":"two-ranks-independent","cluster_source":"option","device":"v100","mode":"step","steps":{"@layers":{"step_us":210,"simulated_step_us":210,"cpu_us":0,"cpu_bound_us":0,"network_idle_us":0,"host_bound_us":0}}},
// CHECK-NEXT: "traceEvents": [
// CHECK-NEXT: {"name":"process_name","ph":"M","pid":1,"args":{"name":"toy @layers"}},
// CHECK-NEXT: {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"compute"}},
// CHECK-NEXT: {"name":"thread_sort_index","ph":"M","pid":1,"tid":1,"args":{"sort_index":1}},
// CHECK-NEXT: {"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"channel 0"}},
// CHECK-NEXT: {"name":"thread_sort_index","ph":"M","pid":1,"tid":2,"args":{"sort_index":2}},
// CHECK-NEXT: {"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"channel 1"}},
// CHECK-NEXT: {"name":"thread_sort_index","ph":"M","pid":1,"tid":3,"args":{"sort_index":3}},
// CHECK-NEXT: {"name":"fc0","cat":"compute","ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":0}},
// CHECK-NEXT: {"name":"fc1","cat":"compute","ph":"X","ts":10,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":1}},
// CHECK-NEXT: {"name":"fc1","cat":"compute","ph":"X","ts":20,"dur":20,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"backward","layer":1}},
// CHECK-NEXT: {"name":"fc0","cat":"compute","ph":"X","ts":40,"dur":20,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"backward","layer":0}},
// CHECK-NEXT: {"name":"fc1.weight","cat":"communication","ph":"X","ts":40,"dur":170,"pid":1,"tid":3,"args":{"op":"comm.start","collective":0,"bytes":163840,"local_us":0,"sent_bytes":163840,"members":["fc1.weight"],"issue_us":40,"exposed_us":150}},
// CHECK-NEXT: {"name":"fc0.weight","cat":"communication","ph":"X","ts":60,"dur":14,"pid":1,"tid":2,"args":{"op":"comm.start","collective":1,"bytes":4096,"local_us":0,"sent_bytes":4096,"members":["fc0.weight"],"issue_us":60,"exposed_us":14}}
// CHECK-NEXT: ]}

// VALID: valid trace: 6 complete events, 7 metadata events
// VALID-NEXT: process 1 'toy @layers' thread 1 'compute': 4 events, busy 60.000 us
// VALID-NEXT: process 1 'toy @layers' thread 2 'channel 0': 1 events, busy 14.000 us
// VALID-NEXT: process 1 'toy @layers' thread 3 'channel 1': 1 events, busy 170.000 us

// Steady state: the 4 measured iterations, from the start of the first
// (274 us into the simulation, see estimate.mlir), numbered from 0. The
// second iteration starts 200 us later; layer 1's forward waits for the
// previous iteration's gradient of layer 1 (until 336).
// STEADY: "mode":"steady"
// STEADY: {"name":"fc0","cat":"compute","ph":"X","ts":0,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":0,"iteration":0}},
// STEADY-NEXT: {"name":"fc1","cat":"compute","ph":"X","ts":136,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":1,"iteration":0}},
// STEADY: {"name":"fc0","cat":"compute","ph":"X","ts":200,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":0,"iteration":1}},
// STEADY-NEXT: {"name":"fc1","cat":"compute","ph":"X","ts":336,"dur":10,"pid":1,"tid":1,"args":{"op":"comm.compute","phase":"forward","layer":1,"iteration":1}},
// STEADY: {"name":"fc1.weight","cat":"communication","ph":"X","ts":166,"dur":170,"pid":1,"tid":3,"args":{"op":"comm.start","collective":0,"bytes":163840,"local_us":0,"sent_bytes":163840,"members":["fc1.weight"],"issue_us":166,"exposed_us":140,"iteration":0}},
// STEADY-NEXT: {"name":"fc0.weight","cat":"communication","ph":"X","ts":186,"dur":14,"pid":1,"tid":2,"args":{"op":"comm.start","collective":1,"bytes":4096,"local_us":0,"sent_bytes":4096,"members":["fc0.weight"],"issue_us":186,"exposed_us":14,"iteration":0}},

// STEADY-VALID: valid trace: 24 complete events, 7 metadata events
// STEADY-VALID-NEXT: thread 1 'compute': 16 events, busy 240.000 us
// STEADY-VALID-NEXT: thread 2 'channel 0': 4 events, busy 56.000 us
// STEADY-VALID-NEXT: thread 3 'channel 1': 4 events, busy 680.000 us

module attributes {comm.model = "toy"} {
  func.func @layers() -> (tensor<40960xf32>, tensor<1024xf32>) {
    comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "fc0", phase = #comm.phase<forward>} : () -> ()
    comm.compute () {cost_us = 10.0 : f64, layer = 1 : i64, name = "fc1", phase = #comm.phase<forward>} : () -> ()
    %g1 = comm.compute () {cost_us = 20.0 : f64, layer = 1 : i64, name = "fc1", phase = #comm.phase<backward>} : () -> tensor<40960xf32>
    %t1 = comm.start %g1 {channel = 1 : i64, names = ["fc1.weight"]} : tensor<40960xf32>
    %g0 = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "fc0", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %t0 = comm.start %g0 {names = ["fc0.weight"]} : tensor<1024xf32>
    %r1 = comm.wait %t1 : tensor<40960xf32>
    %r0 = comm.wait %t0 : tensor<1024xf32>
    return %r1, %r0 : tensor<40960xf32>, tensor<1024xf32>
  }

  // Left alone: a declaration has no timeline.
  func.func private @external()
}
