// A module whose model name is not UTF-8 (the bytes FF FE): the module
// verifier rejects it before any export writes it into JSON.
module attributes {comm.model = "one-\FF\FElayer"} {
  func.func @train_step() -> tensor<1024xf32> {
    %0 = comm.compute() {cost_us = 5.0e+01 : f64, layer = 0 : i64, name = "fc", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %1 = comm.allreduce %0 {name = "fc.weight", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    return %1 : tensor<1024xf32>
  }
}
