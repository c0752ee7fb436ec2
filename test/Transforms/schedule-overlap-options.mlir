// RUN: commopt-opt %s --comm-schedule-overlap="channels=0" | FileCheck %s --check-prefix=ZERO
// RUN: commopt-opt %s --comm-record-cluster=cluster=ib56-16 --comm-schedule-overlap="channels=0" | FileCheck %s --check-prefix=ZERO-RECORDED
// RUN: not commopt-opt %s --comm-schedule-overlap="channels=65" 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not commopt-opt %s --comm-schedule-overlap="channels=-2" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not commopt-opt %s --comm-schedule-overlap="partition-mb=-1" 2>&1 | FileCheck %s --check-prefix=PARTITION
// RUN: not commopt-opt %s --comm-schedule-overlap="partition-mb=inf" 2>&1 | FileCheck %s --check-prefix=INFINITE
// RUN: not commopt-opt %s --comm-schedule-overlap="channels=two" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: commopt-opt %s --comm-schedule-overlap="channels=64" | FileCheck %s --check-prefix=MANY
// RUN: commopt-opt %s --comm-schedule-overlap="partition-mb=1e-9" | FileCheck %s --check-prefix=TINY
// RUN: not commopt-opt %S/Inputs/one-large-gradient.mlir --comm-schedule-overlap="partition-mb=1e-6" 2>&1 | FileCheck %s --check-prefix=PIECES
// PIECES: error: comm-schedule-overlap: option 'partition-mb': 1e-06 would cut this 4194304-byte gradient into 1048576 pieces; at most 1024 are allowed, so use partition-mb=0.00390625 or more
// RUN: commopt-opt %S/Inputs/one-large-gradient.mlir --comm-schedule-overlap="partition-mb=0.00390625" | FileCheck %s --check-prefix=MOST
// MOST-COUNT-1024: comm.start
// MOST-NOT: comm.start
// RUN: commopt-opt %s --comm-schedule-overlap="partition-mb=0" | FileCheck %s --check-prefix=OFF

// channels=0: the channel count of the cluster the module records, else of
// gradientflow-64 (2 channels); ib56-16 has one.
// ZERO-LABEL: func.func @edges
// ZERO: comm.start %{{.*}} {channel = 1 : i64}
// ZERO-NOT: channel = 2
// ZERO-RECORDED: module attributes {comm.cluster = "ib56-16"}
// ZERO-RECORDED-NOT: channel =
// TOOMANY: error: comm-schedule-overlap: option 'channels': expected 0 (the cluster's) or a count up to 64, got 65
// NEGATIVE: error: comm-schedule-overlap: option 'channels': expected 0 (the cluster's) or a count up to 64, got -2
// PARTITION: error: comm-schedule-overlap: partition-mb must be a non-negative finite number, got -1
// INFINITE: error: comm-schedule-overlap: partition-mb must be a non-negative finite number, got INF
// PARSE: for the --channels option: 'two' value invalid for integer argument

// More channels than collectives: each collective gets its own.
// MANY-LABEL: func.func @edges
// MANY-NEXT: comm.start %{{.*}} : tensor<3xf32>
// MANY-NEXT: comm.start %{{.*}} {channel = 1 : i64} : tensor<2xf32>
// MANY-NEXT: comm.start %{{.*}} {channel = 2 : i64} : tensor<f32>

// A cap below one element: one piece per element; a 0-d gradient, a single
// element, is never cut.
// TINY-LABEL: func.func @edges
// TINY-NEXT: tensor.extract_slice %{{.*}}[0] [1] [1] : tensor<3xf32> to tensor<1xf32>
// TINY-NEXT: comm.start
// TINY-NEXT: tensor.extract_slice %{{.*}}[1] [1] [1] : tensor<3xf32> to tensor<1xf32>
// TINY-NEXT: comm.start
// TINY-NEXT: tensor.extract_slice %{{.*}}[2] [1] [1] : tensor<3xf32> to tensor<1xf32>
// TINY-NEXT: comm.start
// TINY-NEXT: tensor.extract_slice %{{.*}}[0] [1] [1] : tensor<2xf32> to tensor<1xf32>
// TINY-NEXT: comm.start
// TINY-NEXT: tensor.extract_slice %{{.*}}[1] [1] [1] : tensor<2xf32> to tensor<1xf32>
// TINY-NEXT: comm.start
// TINY-NEXT: comm.start %{{.*}} : tensor<f32>

// partition-mb=0 turns partitioning off.
// OFF-LABEL: func.func @edges
// OFF-NOT: tensor.
// OFF: return
func.func @edges(%a: tensor<3xf32>, %b: tensor<2xf32>, %c: tensor<f32>) -> (tensor<3xf32>, tensor<2xf32>, tensor<f32>) {
  %ra = comm.allreduce %a : tensor<3xf32> -> tensor<3xf32>
  %rb = comm.allreduce %b : tensor<2xf32> -> tensor<2xf32>
  %rc = comm.allreduce %c : tensor<f32> -> tensor<f32>
  return %ra, %rb, %rc : tensor<3xf32>, tensor<2xf32>, tensor<f32>
}
