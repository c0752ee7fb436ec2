// Invalid pipedream graphs, one fault each: the import fails with an error
// located at the offending line (and column, where there is one).

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-unknown-node.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: pipedream-unknown-node.graph.txt:4:11: error: unknown node 'node7' in edge

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-missing-field.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: pipedream-missing-field.graph.txt:2:27: error: missing field backward_compute_time in 'node2'

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-negative-time.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: pipedream-negative-time.graph.txt:2:77: error: negative backward_compute_time '-0.250'

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-bad-number.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NUMBER
// NUMBER: pipedream-bad-number.graph.txt:2:83: error: bad number '0.1O0' for forward_compute_time

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-odd-parameter-size.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PARAMETERS
// PARAMETERS: pipedream-odd-parameter-size.graph.txt:2:155: error: parameter_size '22.000' is not a multiple of 4 bytes (one f32)

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-cycle.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CYCLE
// CYCLE: pipedream-cycle.graph.txt:10:2: error: the edges form a cycle: node2 -- node3 -- node4 -- node2

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-duplicate-node.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DUPLICATE
// DUPLICATE: pipedream-duplicate-node.graph.txt:3:1: error: duplicate node 'node2'
// DUPLICATE: pipedream-duplicate-node.graph.txt:2:1: note: first defined here

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-stray-line.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STRAY
// STRAY: pipedream-stray-line.graph.txt:3:2: error: expected a node ('<id> -- <description> -- <fields>') or an edge ('<id> -- <id>')

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-no-fields.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-FIELDS
// NO-FIELDS: pipedream-no-fields.graph.txt:4:2: error: expected ' -- forward_compute_time=..., backward_compute_time=..., activation_size=..., parameter_size=...' after the description of 'node2'

// A profile is one connected graph: a file cut short after its nodes, or
// two pieces, is an error naming a node that is cut off.
// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-no-edges.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-EDGES
// NO-EDGES: pipedream-no-edges.graph.txt:3:1: error: node 'node3' has no edges, in a graph of 3 nodes: is the file cut short? A profile lists its edges after its nodes

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-disconnected.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DISCONNECTED
// DISCONNECTED: pipedream-disconnected.graph.txt:3:1: error: the graph is not connected: node 'node3' is not linked to 'node1' by any path of edges: is the file cut short?

// activation_size is not used, but it is checked: one size or a list, each
// a finite, non-negative number.
// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-negative-activation.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ACTIVATION
// ACTIVATION: pipedream-negative-activation.graph.txt:1:93: error: negative activation_size '-100.0'

// RUN: not commopt-translate --import-pipedream %S/Inputs/pipedream-bad-activation-list.graph.txt 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ACTIVATION-LIST
// ACTIVATION-LIST: pipedream-bad-activation-list.graph.txt:1:93: error: activation_size '[8.0; 4.0' is neither a number nor a list '[a; b; ...]'
