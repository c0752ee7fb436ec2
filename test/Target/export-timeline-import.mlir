// RUN: commopt-translate --import-pipedream %S/Inputs/pipedream-small.graph.txt \
// RUN:   | commopt-translate --export-timeline --timeline-cluster=nvlink-8 \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s --check-prefix=SMALL
// RUN: commopt-translate --import-pipedream %S/Inputs/pipedream-small.graph.txt \
// RUN:   | commopt-translate --export-timeline --timeline-mode=steady \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s --check-prefix=SMALL-STEADY

// Timelines of imported pipedream profiles load in Perfetto and
// chrome://tracing: check-chrome-trace.py checks the rules those viewers
// need. The small profile has 4 non-input nodes (a forward and a backward
// step each, the Add node's at zero cost) and 2 gradients; 4,437.5 us of
// compute per step (see import-pipedream.mlir).
// SMALL: valid trace: 10 complete events, 7 metadata events
// SMALL-NEXT: process 1 'pipedream-small @train_step' thread 1 'compute': 8 events, busy 4437.500 us
// SMALL-NEXT: process 1 'pipedream-small @train_step' thread 2 'channel 0': 2 events
// SMALL-NEXT: process 1 'pipedream-small @train_step' thread 3 'channel 1': 0 events

// Four measured iterations.
// SMALL-STEADY: valid trace: 40 complete events, 7 metadata events
// SMALL-STEADY-NEXT: thread 1 'compute': 32 events, busy 17750.000 us
// SMALL-STEADY-NEXT: thread 2 'channel 0': 8 events
