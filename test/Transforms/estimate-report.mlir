// RUN: commopt-opt %s -o /dev/null \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json top=2" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TEXT
// RUN: commopt-opt %s -o /dev/null 2>&1 \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json report-file=%t.txt" \
// RUN:   | count 0
// RUN: FileCheck %s --check-prefix=FILE < %t.txt
// RUN: commopt-opt %s -o /dev/null \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json report=json report-file=%t.json"
// RUN: %python -m json.tool %t.json | FileCheck %s --check-prefix=JSON
// RUN: commopt-opt %s -o /dev/null 2>&1 \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json report=none" \
// RUN:   | count 0
// RUN: commopt-opt %s -o /dev/null \
// RUN:   --comm-estimate="cluster=%S/Inputs/two-ranks-independent.json top=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOP0

// The reports of comm-estimate on one step (figures from
// docs/CostModel.md, as in estimate.mlir: an allreduce of n bytes costs
// 10 us + n / 1024 us on independent channels).
//
// backward 0-100; "small" (4096 B, 14 us) 100-114 on channel 0 and "large"
// (40960 B, 50 us) 100-150 on channel 1 overlap "hide" 100-130; "tiny"
// (1024 B, 11 us, blocking) is issued after "hide", 130-141 on channel 0;
// the optimizer waits for all three, 150-160. Step 160, compute 140,
// communication 14 + 50 + 11 = 75, exposed 20 (12.5%). Per collective, the
// time no compute runs: small 0, large 130-150 = 20, tiny 130-141 = 11.
// Memory: the three gradients (46080 B, all returned, so live to the end)
// and their parameters, which every rank holds whole: 92160 B = 0.088 MiB.

// TEXT: comm-estimate: toy @step
// TEXT-NEXT: cluster two-ranks-independent (2 ranks, 2 per node, ring allreduce, 2 independent channels)
// TEXT-NEXT: device v100
// TEXT-NEXT: mode step
// TEXT-NEXT: step 160.000 us
// TEXT-NEXT: compute 140.000 us
// TEXT-NEXT: communication 75.000 us
// TEXT-NEXT: exposed 20.000 us (12.5% of the step)
// TEXT-NEXT: memory 0.088 MiB at most a rank (parameters, gradients, shards)
// TEXT-NEXT: collectives 3; the 2 most exposed:
// TEXT-NEXT: name bytes channel start (us) end (us) exposed (us)
// TEXT-NEXT: large 40960 1 100.000 150.000 20.000
// TEXT-NEXT: tiny 1024 0 130.000 141.000 11.000
// TEXT-EMPTY:

// The default top=10 lists all three; a report file gets the same text.
// FILE: comm-estimate: toy @step
// FILE: collectives 3; the 3 most exposed:
// FILE-NEXT: name
// FILE-NEXT: large
// FILE-NEXT: tiny
// FILE-NEXT: small 4096 0 100.000 114.000 0.000

// TOP0: collectives 3
// TOP0-NOT: name

// Every collective in program order, with its op, wire bytes, channel,
// priority if it has one, and times.
// JSON: "format": "commopt-estimate",
// JSON-NEXT: "version": 1,
// JSON-NEXT: "cluster": {
// JSON: "name": "two-ranks-independent",
// JSON: "device": {
// JSON: "name": "v100",
// JSON: "mode": "step",
// JSON-NEXT: "functions": [
// JSON-NEXT: {
// JSON-NEXT: "model": "toy",
// JSON-NEXT: "function": "step",
// JSON-NEXT: "step_us": 160,
// JSON-NEXT: "compute_us": 140,
// JSON-NEXT: "communication_us": 75,
// JSON-NEXT: "exposed_us": 20,
// JSON-NEXT: "exposed_fraction": 0.125,
// JSON-NEXT: "peak_memory_bytes": 92160,
// JSON-NEXT: "collectives": [
// JSON-NEXT: {
// JSON-NEXT: "index": 0,
// JSON-NEXT: "name": "small",
// JSON-NEXT: "members": [
// JSON-NEXT: "small"
// JSON-NEXT: ],
// JSON-NEXT: "op": "comm.start",
// JSON-NEXT: "bytes": 4096,
// JSON-NEXT: "channel": 0,
// JSON-NEXT: "blocking": false,
// JSON-NEXT: "issue_us": 100,
// JSON-NEXT: "start_us": 100,
// JSON-NEXT: "end_us": 114,
// JSON-NEXT: "duration_us": 14,
// JSON-NEXT: "exposed_us": 0
// JSON-NEXT: },
// JSON-NEXT: {
// JSON-NEXT: "index": 1,
// JSON-NEXT: "name": "large",
// JSON-NEXT: "members": [
// JSON-NEXT: "large"
// JSON-NEXT: ],
// JSON-NEXT: "op": "comm.start",
// JSON-NEXT: "bytes": 40960,
// JSON-NEXT: "channel": 1,
// JSON-NEXT: "priority": 0,
// JSON-NEXT: "blocking": false,
// JSON-NEXT: "issue_us": 100,
// JSON-NEXT: "start_us": 100,
// JSON-NEXT: "end_us": 150,
// JSON-NEXT: "duration_us": 50,
// JSON-NEXT: "exposed_us": 20
// JSON-NEXT: },
// JSON-NEXT: {
// JSON-NEXT: "index": 2,
// JSON-NEXT: "name": "tiny",
// JSON-NEXT: "members": [
// JSON-NEXT: "tiny"
// JSON-NEXT: ],
// JSON-NEXT: "op": "comm.allreduce",
// JSON-NEXT: "bytes": 1024,
// JSON-NEXT: "channel": 0,
// JSON-NEXT: "blocking": true,
// JSON-NEXT: "issue_us": 130,
// JSON-NEXT: "start_us": 130,
// JSON-NEXT: "end_us": 141,
// JSON-NEXT: "duration_us": 11,
// JSON-NEXT: "exposed_us": 11
// JSON-NEXT: }
// JSON-NEXT: ]
// JSON-NEXT: }
// JSON-NEXT: ]
// JSON-NEXT: }

module attributes {comm.model = "toy"} {
  func.func @step() -> (tensor<1024xf32>, tensor<10240xf32>, tensor<256xf32>) {
    %g:3 = comm.compute () {cost_us = 100.0 : f64, name = "backward"} : () -> (tensor<1024xf32>, tensor<10240xf32>, tensor<256xf32>)
    %t0 = comm.start %g#0 {names = ["small"]} : tensor<1024xf32>
    %t1 = comm.start %g#1 {channel = 1 : i64, names = ["large"], priority = 0 : i64} : tensor<10240xf32>
    comm.compute () {cost_us = 30.0 : f64, name = "hide"} : () -> ()
    %r0 = comm.wait %t0 : tensor<1024xf32>
    %r1 = comm.wait %t1 : tensor<10240xf32>
    %r2 = comm.allreduce %g#2 {name = "tiny"} : tensor<256xf32> -> tensor<256xf32>
    comm.compute () {cost_us = 10.0 : f64, name = "optimizer"} : () -> ()
    return %r0, %r1, %r2 : tensor<1024xf32>, tensor<10240xf32>, tensor<256xf32>
  }
}
