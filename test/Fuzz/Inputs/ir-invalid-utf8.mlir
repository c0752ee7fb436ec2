// A parameter name that is not UTF-8 (the bytes FA FF FF FF), found by
// commopt-ir-fuzzer: the exports write it into JSON, which LLVM's JSON
// writer asserts against (docs/Robustness.md, "Open findings").
module attributes {comm.model = "one-layer"} {
  func.func @train_step() -> tensor<1024xf32> {
    %0 = comm.compute() {cost_us = 5.0e+01 : f64, layer = 0 : i64, name = "fc", phase = #comm.phase<backward>} : () -> tensor<1024xf32>
    %1 = comm.allreduce %0 {name = "fc.úÿÿÿ", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
    return %1 : tensor<1024xf32>
  }
}
