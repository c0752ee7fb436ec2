// Option errors name the option as the user typed it (the pipeline's, not
// an inner pass's), list every valid value and suggest the nearest
// spelling.

// RUN: not commopt-opt %s --comm-optimize="fusoin=cost" 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: comm-optimize: unknown option 'fusoin'; did you mean 'fusion'?
// RUN: not commopt-opt %s --comm-optimize="colour=red" 2>&1 | FileCheck %s --check-prefix=FARNAME
// FARNAME: comm-optimize: unknown option 'colour'; its options are {{.*}}bucket-cap-mb, {{.*}}wire-min-bytes
// RUN: not commopt-opt %s --comm-optimize="wire=fp16" 2>&1 | FileCheck %s --check-prefix=WIRE
// WIRE: comm-optimize: option 'wire': unknown value 'fp16'; expected one of none, f16, bf16 (did you mean 'f16'?)
// RUN: not commopt-opt %s --comm-optimize="fusion=ddp" 2>&1 | FileCheck %s --check-prefix=FUSION
// FUSION: comm-optimize: option 'fusion': unknown value 'ddp'; expected one of threshold, cost, mgwfbp, none{{$}}
// RUN: not commopt-opt %s --comm-optimize="estimate=stedy" 2>&1 | FileCheck %s --check-prefix=ESTIMATE
// ESTIMATE: comm-optimize: option 'estimate': unknown value 'stedy'; expected one of none, step, steady (did you mean 'steady'?)
// RUN: not commopt-opt %s --pass-pipeline="builtin.module(comm-optimize{report=xml})" 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: error: comm-optimize: option 'report': unknown value 'xml'; expected one of text, json, none{{$}}
// RUN: not commopt-opt %s --comm-optimize="sparse-exchange=rnig" 2>&1 | FileCheck %s --check-prefix=EXCHANGE
// EXCHANGE: error: comm-optimize: option 'sparse-exchange': unknown value 'rnig'; expected one of auto, allgather, hash, chunk{{$}}
// A report needs an estimate; without one, its options would do nothing.
// RUN: not commopt-opt %s --comm-optimize="report=json" 2>&1 | FileCheck %s --check-prefix=NO-ESTIMATE
// NO-ESTIMATE: error: comm-optimize: option 'report': there is no report without an estimate; add estimate=step or estimate=steady
// RUN: not commopt-opt %s --comm-optimize="report-file=%t.json" 2>&1 | FileCheck %s --check-prefix=NO-ESTIMATE-FILE
// NO-ESTIMATE-FILE: error: comm-optimize: option 'report-file': there is no report without an estimate
// RUN: not commopt-opt %s --comm-optimize="channels=100000" 2>&1 | FileCheck %s --check-prefix=CHANNELS
// CHANNELS: comm-optimize: option 'channels': expected 0 (the cluster's) or a count up to 64, got 100000
// RUN: not commopt-opt %s --comm-optimize="bucket-cap-mb=inf" 2>&1 | FileCheck %s --check-prefix=CAP
// CAP: comm-optimize: option 'bucket-cap-mb': expected a positive finite size in MiB, got
// RUN: not commopt-opt %s --comm-optimize="density=2" 2>&1 | FileCheck %s --check-prefix=DENSITY
// DENSITY: comm-optimize: option 'density': expected a fraction in (0, 1], got
// RUN: not commopt-opt %s --comm-optimize="sparse-chunk-elements=0" 2>&1 | FileCheck %s --check-prefix=CHUNK
// CHUNK: comm-optimize: option 'sparse-chunk-elements': expected a positive element count, got 0
// RUN: not commopt-opt %s --comm-optimize="lossy-margin=1" 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: not commopt-opt %s --comm-optimize="lossy-margin=-0.1" 2>&1 | FileCheck %s --check-prefix=MARGIN
// MARGIN: comm-optimize: option 'lossy-margin': expected a fraction of the step in [0, 1), got
// RUN: not commopt-opt %s --comm-optimize="channels=two" 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: for the --channels option: 'two' value invalid for integer argument
// PARSE: error: comm-optimize: cannot parse options 'channels=two'{{$}}
// The sharded plan's options need shard, and shard plans no sparse
// gradients.
// RUN: not commopt-opt %s --comm-optimize="shard=zero" 2>&1 | FileCheck %s --check-prefix=SHARD
// SHARD: error: comm-optimize: option 'shard': unknown value 'zero'; expected one of none, grad, full{{$}}
// RUN: not commopt-opt %s --comm-optimize="shard-prefetch=2" 2>&1 | FileCheck %s --check-prefix=SHARD-PREFETCH
// SHARD-PREFETCH: error: comm-optimize: option 'shard-prefetch': applies to sharded plans only; add shard=grad or shard=full
// RUN: not commopt-opt %s --comm-optimize="shard-memory-limit-mb=100" 2>&1 | FileCheck %s --check-prefix=SHARD-LIMIT
// SHARD-LIMIT: error: comm-optimize: option 'shard-memory-limit-mb': applies to sharded plans only
// RUN: not commopt-opt %s --comm-optimize="shard=full shard-memory-limit-mb=-5" 2>&1 | FileCheck %s --check-prefix=SHARD-NEGATIVE
// SHARD-NEGATIVE: error: comm-optimize: option 'shard-memory-limit-mb': expected a non-negative finite size in MiB (0: no limit), got -5
// RUN: not commopt-opt %s --comm-optimize="shard=grad shard-prefetch=-3" 2>&1 | FileCheck %s --check-prefix=SHARD-DEPTH
// SHARD-DEPTH: error: comm-optimize: option 'shard-prefetch': expected -1 (by cost) or a unit count of 0 or more, got -3
// RUN: not commopt-opt %s --comm-optimize="shard=full sparse=true" 2>&1 | FileCheck %s --check-prefix=SHARD-SPARSE
// SHARD-SPARSE: error: comm-optimize: option 'sparse': a sharded plan reduce-scatters every gradient dense; leave sparse out with shard

// The passes' own option names are checked the same way.
// RUN: not commopt-opt %s --comm-fuse-buckets="polcy=cost" 2>&1 | FileCheck %s --check-prefix=PASS
// PASS: comm-fuse-buckets: unknown option 'polcy'; did you mean 'policy'?
// RUN: not commopt-opt %s --comm-estimate="mod=steady" 2>&1 | FileCheck %s --check-prefix=PASS2
// PASS2: comm-estimate: unknown option 'mod'; did you mean 'mode'?
// RUN: not commopt-opt %s --commopt-lower-to-llvm="compute-dealy=true" 2>&1 | FileCheck %s --check-prefix=LOWER
// LOWER: commopt-lower-to-llvm: unknown option 'compute-dealy'; did you mean 'compute-delay'?
// RUN: not commopt-opt %s --convert-comm-to-runtime="delay=1" 2>&1 | FileCheck %s --check-prefix=CONVERT
// CONVERT: convert-comm-to-runtime: unknown option 'delay'; its options are compute-delay

// Valid options still parse, in any order, with quoted values.
// RUN: commopt-opt %s --comm-optimize="wire=bf16 fusion=threshold bucket-cap-mb=1 channels=1" | FileCheck %s --check-prefix=VALID
// VALID: comm.start

func.func @train_step() -> tensor<1000xf32> {
  %g = comm.compute () {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> tensor<1000xf32>
  %r = comm.allreduce %g {name = "l0.w", reduce = #comm.reduce<avg>} : tensor<1000xf32> -> tensor<1000xf32>
  return %r : tensor<1000xf32>
}
