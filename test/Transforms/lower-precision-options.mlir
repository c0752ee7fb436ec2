// RUN: not commopt-opt %s --comm-lower-precision="wire=f8" 2>&1 | FileCheck %s --check-prefix=WIRE
// RUN: not commopt-opt %s --comm-lower-precision="min-bytes=-1" 2>&1 | FileCheck %s --check-prefix=MIN
// RUN: not commopt-opt %s --comm-lower-precision="min-bytes=lots" 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not commopt-opt %s --comm-lower-precision="keep-f32=*bias" 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not commopt-opt %s --comm-lower-precision="keep-f32=bn[12" 2>&1 | FileCheck %s --check-prefix=BRACKET
// RUN: not commopt-opt %s --comm-lower-precision="cluster=ib56-64" 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: not commopt-opt %s --comm-lower-precision="cluster=%S/Inputs/cluster-bad-ranks.json" 2>&1 | FileCheck %s --check-prefix=FILE

// WIRE: error: comm-lower-precision: option 'wire': unknown value 'f8'; expected one of f16, bf16{{$}}
// MIN: error: comm-lower-precision: min-bytes must be non-negative, got -1
// PARSE: for the --min-bytes option: 'lots' value invalid for long argument
// PARSE: error: comm-lower-precision: cannot parse options 'min-bytes=lots'{{$}}
// REGEX: error: comm-lower-precision: keep-f32 '*bias' is not a valid regular expression: repetition-operator operand invalid
// BRACKET: error: comm-lower-precision: keep-f32 'bn[12' is not a valid regular expression: brackets ([ ]) not balanced
// PRESET: error: comm-lower-precision: cluster 'ib56-64': 'ib56-64' is neither a cluster preset (gradientflow-64, {{.*}}) nor a file
// FILE: error: comm-lower-precision: cluster '{{.*}}cluster-bad-ranks.json': {{.*}}cluster-bad-ranks.json: invalid cluster description: must divide ranks at cluster.ranks_per_node

func.func @f(%m: memref<16384xf32>) {
  comm.allreduce %m : memref<16384xf32>
  return
}
