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

// A real profile cut short at a line boundary (its first 40 lines: nodes
// without their edges) is an error, not a step in the wrong order.
// RUN: head -n 40 %pipedream/resnet50.graph.txt > %t.truncated.graph.txt
// RUN: not commopt-translate --import-pipedream %t.truncated.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: error: node '{{node[0-9]+}}' has no edges, in a graph of 40 nodes: is the file cut short?
