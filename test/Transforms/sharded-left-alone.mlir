// RUN: commopt-opt %s --comm-lower-precision="min-bytes=0 keep-f32=" | FileCheck %s --check-prefix=NARROW
// RUN: commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=1000" --comm-select-algorithm="cluster=%S/Inputs/flat-4.json" | FileCheck %s --check-prefix=ALONE
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json report=none" \
// RUN:   | not commopt-translate --export-plan 2>&1 | FileCheck %s --check-prefix=EXPORT

// What the planning passes do with the sharded collectives.
//
// comm-lower-precision narrows a reduce-scatter's gradient to f16 as it does
// an allreduce's, and leaves the all-gather alone: it carries parameters.
// NARROW-LABEL: func.func @step
// NARROW: comm.reduce_scatter %{{.*}} {names = ["w"], prescale = {{.*}}, shards = 4 : i64, wire = f16}
// NARROW: comm.all_gather %{{.*}} {names = ["w"], shards = 4 : i64} :
// NARROW: comm.allreduce %{{.*}} {name = "b", {{.*}}wire = f16}
//
// Bucket fusion and algorithm selection plan allreduces: the sharded
// collectives stay unfused and without an algorithm (overlap scheduling
// splits them: schedule-overlap-sharded.mlir).
// ALONE-LABEL: func.func @step
// ALONE: comm.reduce_scatter %{{.*}} {names = ["w"], shards = 4 : i64} : tensor<4096xf32> -> tensor<1024xf32>
// ALONE: comm.all_gather %{{.*}} {names = ["w"], shards = 4 : i64} : tensor<1024xf32> -> tensor<4096xf32>
// ALONE: comm.allreduce %{{.*}} {algorithm = #comm.algorithm<ring>, name = "b"}
//
// The training bridge's plans allreduce every gradient: export-plan says so.
// EXPORT: error: export-plan: comm.reduce_scatter cannot be exported yet: the training bridge's plans allreduce every gradient

func.func @step(%g: tensor<4096xf32>, %p: tensor<1024xf32>, %b: tensor<4096xf32>)
    -> (tensor<1024xf32>, tensor<4096xf32>, tensor<4096xf32>) {
  %s = comm.reduce_scatter %g {names = ["w"], shards = 4}
      : tensor<4096xf32> -> tensor<1024xf32>
  %w = comm.all_gather %p {names = ["w"], shards = 4}
      : tensor<1024xf32> -> tensor<4096xf32>
  %r = comm.allreduce %b {name = "b"} : tensor<4096xf32> -> tensor<4096xf32>
  return %s, %w, %r : tensor<1024xf32>, tensor<4096xf32>, tensor<4096xf32>
}
