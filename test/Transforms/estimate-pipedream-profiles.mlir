// REQUIRES: pipedream-profiles

// The compute that comm-estimate simulates for each of pipedream's measured
// profiles equals the summed forward and backward time of the profile's
// nodes, Input nodes aside, as an independent reader of the graph.txt
// (check-pipedream-import.py) computes it. In steady state too: the compute
// of one iteration.

// RUN: commopt-translate --import-pipedream %pipedream/alexnet.graph.txt \
// RUN:   | commopt-opt --comm-estimate="report=json report-file=%t.alexnet.json" \
// RUN:   | %python %S/../Target/check-pipedream-import.py %pipedream/alexnet.graph.txt \
// RUN:       --estimate-report %t.alexnet.json | FileCheck %s
// RUN: commopt-translate --import-pipedream %pipedream/resnet18.graph.txt \
// RUN:   | commopt-opt --comm-estimate="report=json report-file=%t.resnet18.json" \
// RUN:   | %python %S/../Target/check-pipedream-import.py %pipedream/resnet18.graph.txt \
// RUN:       --estimate-report %t.resnet18.json | FileCheck %s
// RUN: commopt-translate --import-pipedream %pipedream/resnet50.graph.txt \
// RUN:   | commopt-opt --comm-estimate="report=json report-file=%t.resnet50.json" \
// RUN:   | %python %S/../Target/check-pipedream-import.py %pipedream/resnet50.graph.txt \
// RUN:       --estimate-report %t.resnet50.json | FileCheck %s
// RUN: commopt-translate --import-pipedream %pipedream/gnmt.graph.txt \
// RUN:   | commopt-opt --comm-estimate="report=json report-file=%t.gnmt.json" \
// RUN:   | %python %S/../Target/check-pipedream-import.py %pipedream/gnmt.graph.txt \
// RUN:       --estimate-report %t.gnmt.json | FileCheck %s

// RUN: commopt-translate --import-pipedream %pipedream/resnet50.graph.txt \
// RUN:   | commopt-opt --comm-fuse-buckets \
// RUN:       --comm-estimate="cluster=ib100-512 mode=steady report=json report-file=%t.steady.json" \
// RUN:   | %python %S/../Target/check-pipedream-import.py %pipedream/resnet50.graph.txt \
// RUN:       --estimate-report %t.steady.json | FileCheck %s

// CHECK: {{.*}}: {{[0-9]+}} gradients, {{[0-9]+}} bytes, {{[0-9.]+}} ms of compute, as estimated
