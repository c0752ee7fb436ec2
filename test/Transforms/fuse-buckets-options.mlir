// RUN: not commopt-opt %s --comm-fuse-buckets="policy=greedy" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=0" 2>&1 | FileCheck %s --check-prefix=CAP
// RUN: not commopt-opt %s --comm-fuse-buckets="first-bucket-mb=-1" 2>&1 | FileCheck %s --check-prefix=FIRST
// RUN: not commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=lots" 2>&1 | FileCheck %s --check-prefix=PARSE

// POLICY: error: comm-fuse-buckets: unknown policy 'greedy'; expected 'threshold'
// CAP: error: comm-fuse-buckets: bucket-cap-mb must be positive, got 0
// FIRST: error: comm-fuse-buckets: first-bucket-mb must be non-negative, got -1
// PARSE: for the --bucket-cap-mb option: 'lots' value invalid for floating point argument

func.func @f() {
  return
}
