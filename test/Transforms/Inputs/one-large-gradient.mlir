// One 4 MiB gradient, for the partition limits of comm-schedule-overlap.
func.func @step() -> tensor<1048576xf32> {
  %g = comm.compute () {cost_us = 10.0, layer = 0, name = "l0", phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
  %r = comm.allreduce %g {name = "big.weight"} : tensor<1048576xf32> -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}
