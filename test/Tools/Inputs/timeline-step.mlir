// A planned step of two started allreduces, for commopt-timeline's tests.
module attributes {comm.cluster = "ethernet10-16"} {
  func.func @step() -> (tensor<1048576xf32>, tensor<65536xf32>) {
    comm.compute () {cost_us = 30000.0 : f64, name = "forward", phase = #comm.phase<forward>} : () -> ()
    %a = comm.compute () {cost_us = 20000.0 : f64, layer = 1 : i64, name = "l1", phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
    %ta = comm.start %a {channel = 0 : i64, names = ["big.weight"], reduce = #comm.reduce<avg>} : tensor<1048576xf32>
    %b = comm.compute () {cost_us = 10000.0 : f64, layer = 0 : i64, name = "l0", phase = #comm.phase<backward>} : () -> tensor<65536xf32>
    %tb = comm.start %b {channel = 0 : i64, names = ["small.weight"], reduce = #comm.reduce<avg>} : tensor<65536xf32>
    %ra = comm.wait %ta : tensor<1048576xf32>
    %rb = comm.wait %tb : tensor<65536xf32>
    comm.compute (%ra, %rb) {cost_us = 5000.0 : f64, name = "update", phase = #comm.phase<optimizer>} : (tensor<1048576xf32>, tensor<65536xf32>) -> ()
    return %ra, %rb : tensor<1048576xf32>, tensor<65536xf32>
  }
}
