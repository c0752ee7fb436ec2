// REQUIRES: pipedream-profiles

// The timeline of ResNet-50's measured pipedream profile, bucketed with
// DDP's policy, on the default cluster (gradientflow-64), as one step and in
// steady state, loads in Perfetto and chrome://tracing: check-chrome-trace.py
// checks the rules those viewers need.

// RUN: commopt-translate --import-pipedream %pipedream/resnet50.graph.txt \
// RUN:   | commopt-opt --comm-fuse-buckets | commopt-translate --export-timeline \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s
// RUN: commopt-translate --import-pipedream %pipedream/resnet50.graph.txt \
// RUN:   | commopt-opt --comm-fuse-buckets \
// RUN:   | commopt-translate --export-timeline --timeline-mode=steady \
// RUN:   | %python %S/check-chrome-trace.py | FileCheck %s

// CHECK: valid trace: {{[0-9]+}} complete events, 7 metadata events
// CHECK-NEXT: process 1 'resnet50 @train_step' thread 1 'compute': {{[1-9][0-9]*}} events
// CHECK-NEXT: process 1 'resnet50 @train_step' thread 2 'channel 0': {{[1-9][0-9]*}} events
// CHECK-NEXT: process 1 'resnet50 @train_step' thread 3 'channel 1': 0 events
