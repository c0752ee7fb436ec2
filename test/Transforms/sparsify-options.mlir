// RUN: not commopt-opt %s --comm-sparsify="density=0" 2>&1 | FileCheck %s --check-prefix=DENSITY0
// RUN: not commopt-opt %s --comm-sparsify="density=1.5" 2>&1 | FileCheck %s --check-prefix=DENSITY15
// RUN: not commopt-opt %s --comm-sparsify="density=often" 2>&1 | FileCheck %s --check-prefix=DENSITYPARSE
// RUN: not commopt-opt %s --comm-sparsify="cluster=no-such-cluster" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-opt %s --comm-sparsify="cluster=%S/Inputs/bad-cluster.json" 2>&1 | FileCheck %s --check-prefix=CLUSTERFILE
// RUN: not commopt-opt %s --comm-sparsify="exchange=ring" 2>&1 | FileCheck %s --check-prefix=EXCHANGE
// RUN: not commopt-opt %s --comm-sparsify="select=chunk" 2>&1 | FileCheck %s --check-prefix=SELECT
// RUN: not commopt-opt %s --comm-sparsify="min-bytes=-1" 2>&1 | FileCheck %s --check-prefix=MINBYTES
// RUN: not commopt-opt %s --comm-sparsify="chunk-elements=0" 2>&1 | FileCheck %s --check-prefix=CHUNK
// RUN: not commopt-opt %s --comm-sparsify="device=no-such-device" 2>&1 | FileCheck %s --check-prefix=DEVICE

// DENSITY0: error: comm-sparsify: density must be in (0, 1], got 0
// DENSITY15: error: comm-sparsify: density must be in (0, 1], got 1.5
// DENSITYPARSE: for the --density option: 'often' value invalid for floating point argument
// CLUSTER: error: comm-sparsify: option 'cluster': {{.*}}no-such-cluster
// CLUSTER-SAME: gradientflow-64
// CLUSTERFILE: error: comm-sparsify: option 'cluster': {{.*}}bad-cluster.json: invalid cluster description: must divide ranks at cluster.ranks_per_node
// EXCHANGE: error: comm-sparsify: option 'exchange': unknown value 'ring'; expected one of auto, allgather, hash, chunk{{$}}
// SELECT: error: comm-sparsify: option 'select': unknown value 'chunk'; expected one of threshold, topk (chunk selection comes with exchange=chunk)
// MINBYTES: error: comm-sparsify: min-bytes must be non-negative, got -1
// CHUNK: error: comm-sparsify: chunk-elements must be positive, got 0
// DEVICE: error: comm-sparsify: option 'device': {{.*}}no-such-device

func.func @f() {
  return
}
