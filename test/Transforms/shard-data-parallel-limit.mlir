// RUN: commopt-opt %s -verify-diagnostics --comm-shard-data-parallel="cluster=%S/Inputs/flat-4.json memory-limit-mb=1.5"

// One 1 MiB weight on 4 ranks: every plan holds its gathered parameters
// (1 MiB), its gradient (1) and shards (0.25 each) at once, more than the
// 1.5 MiB limit.
// expected-error @+1 {{comm-shard-data-parallel: option 'memory-limit-mb': no sharded plan fits in 1.50 MiB per rank; the smallest of 1 plans holds 2.25 MiB at once}}
func.func @too_big() -> tensor<262144xf32> {
  comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<forward>} : () -> ()
  %g = comm.compute () {cost_us = 20.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r = comm.allreduce %g {name = "l0.weight", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  return %r : tensor<262144xf32>
}
