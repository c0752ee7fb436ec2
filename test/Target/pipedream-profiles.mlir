// REQUIRES: pipedream-profiles

// Imports of pipedream's measured profiles, parsed and verified again by
// commopt-opt, checked against what an independent reader of each graph.txt
// (check-pipedream-import.py) finds in it: the number of gradients, their
// total bytes, and the summed forward and backward time of all non-input
// nodes.

// RUN: commopt-translate --import-pipedream %pipedream/alexnet.graph.txt | commopt-opt \
// RUN:   | %python %S/check-pipedream-import.py %pipedream/alexnet.graph.txt \
// RUN:   | FileCheck %s --check-prefix=ALEXNET
// ALEXNET: alexnet: 8 gradients, 244403360 bytes

// RUN: commopt-translate --import-pipedream %pipedream/resnet18.graph.txt | commopt-opt \
// RUN:   | %python %S/check-pipedream-import.py %pipedream/resnet18.graph.txt \
// RUN:   | FileCheck %s --check-prefix=RESNET18
// RESNET18: resnet18: 41 gradients, 46758048 bytes

// RUN: commopt-translate --import-pipedream %pipedream/resnet50.graph.txt | commopt-opt \
// RUN:   | %python %S/check-pipedream-import.py %pipedream/resnet50.graph.txt \
// RUN:   | FileCheck %s --check-prefix=RESNET50
// RESNET50: resnet50: 107 gradients, 102228128 bytes

// RUN: commopt-translate --import-pipedream %pipedream/gnmt.graph.txt | commopt-opt \
// RUN:   | %python %S/check-pipedream-import.py %pipedream/gnmt.graph.txt \
// RUN:   | FileCheck %s --check-prefix=GNMT
// GNMT: gnmt: 11 gradients, 775063808 bytes
