// RUN: not commopt-opt %s --comm-fuse-buckets="policy=greedy" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=0" 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: not commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=inf" 2>&1 | FileCheck %s --check-prefix=INF
// RUN: not commopt-opt %s --comm-fuse-buckets="first-bucket-mb=-1" 2>&1 | FileCheck %s --check-prefix=FIRST
// RUN: not commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=lots" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not commopt-opt %s --comm-fuse-buckets="policy=cost cluster=nowhere-42" 2>&1 | FileCheck %s --check-prefix=CLUSTER
// RUN: not commopt-opt %s --comm-fuse-buckets="policy=cost device=abacus" 2>&1 | FileCheck %s --check-prefix=DEVICE
// comm-optimize's fusion=none is not a policy of the pass; the parser of a
// textual pipeline reports a bad value the same way.
// RUN: not commopt-opt %s --comm-fuse-buckets="policy=none" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not commopt-opt %s --pass-pipeline="builtin.module(func.func(comm-fuse-buckets{policy=mgwfpb}))" 2>&1 | FileCheck %s --check-prefix=PIPELINE

// POLICY: error: comm-fuse-buckets: option 'policy': unknown value 'greedy'; expected one of threshold, cost, mgwfbp{{$}}
// NONE: error: comm-fuse-buckets: option 'policy': unknown value 'none'; expected one of threshold, cost, mgwfbp{{$}}
// PIPELINE: error: comm-fuse-buckets: option 'policy': unknown value 'mgwfpb'; expected one of threshold, cost, mgwfbp (did you mean 'mgwfbp'?)
// CAP: error: comm-fuse-buckets: bucket-cap-mb must be positive and finite, got 0
// INF: error: comm-fuse-buckets: bucket-cap-mb must be positive and finite, got INF
// FIRST: error: comm-fuse-buckets: first-bucket-mb must be non-negative, got -1
// CLUSTER: error: comm-fuse-buckets: cluster 'nowhere-42': {{.*}}nowhere-42
// DEVICE: error: comm-fuse-buckets: device 'abacus': {{.*}}abacus
// PARSE: for the --bucket-cap-mb option: 'lots' value invalid for floating point argument
// PARSE: error: comm-fuse-buckets: cannot parse options 'bucket-cap-mb=lots'{{$}}

func.func @f() {
  return
}
