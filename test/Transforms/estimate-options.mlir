// RUN: not commopt-opt %s --comm-estimate="cluster=nowhere" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-opt %s --comm-estimate="cluster=%S/Inputs/bad-cluster-ranks-per-node.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-CLUSTER
// RUN: not commopt-opt %s --comm-estimate="cluster=%S/Inputs/malformed-cluster.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MALFORMED
// RUN: not commopt-opt %s --comm-estimate="device=tpu" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DEVICE
// RUN: not commopt-opt %s --comm-estimate="mode=fast" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MODE
// RUN: not commopt-opt %s --comm-estimate="report=xml" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REPORT
// RUN: not commopt-opt %s --comm-estimate="report-file=%t.missing/report.txt" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REPORT-FILE
// RUN: not commopt-opt %s --comm-estimate="top=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOP

// Bad options: the error names the pass, the option and the loader's
// message.

// CLUSTER: error: comm-estimate: option 'cluster': 'nowhere' is neither a cluster preset (gradientflow-64, ib100-512, nvlink-8, ethernet10-16, ib56-16) nor a file
// BAD-CLUSTER: error: comm-estimate: option 'cluster': {{.*}}bad-cluster-ranks-per-node.json: invalid cluster description: must divide ranks at cluster.ranks_per_node
// MALFORMED: error: comm-estimate: option 'cluster': {{.*}}malformed-cluster.json: invalid cluster description: [1:14, byte=14]: Expected object key
// DEVICE: error: comm-estimate: option 'device': 'tpu' is neither a device preset (v100, p40, a100, h100) nor a file
// MODE: error: comm-estimate: option 'mode': unknown value 'fast'; expected one of step, steady
// REPORT: error: comm-estimate: option 'report': unknown value 'xml'; expected one of text, json, none
// REPORT-FILE: error: comm-estimate: option 'report-file': cannot open output file '{{.*}}report.txt': No such file or directory
// TOP: for the --top option: '-1' value invalid for uint argument

func.func @f() {
  comm.compute () {cost_us = 1.0 : f64} : () -> ()
  return
}
