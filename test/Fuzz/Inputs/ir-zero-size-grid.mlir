// commopt-ir-fuzzer's finding, reduced: a grouped allreduce on a grid with
// an axis of size 0. Pricing its group read past the end of an empty list
// of members (AddressSanitizer: stack-buffer-overflow in
// ClusterModel::forGroup).
shard.grid @grid(shape = 0x4)

func.func @groups(%a: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {name = "rows_a", group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  %1 = comm.allreduce %b {name = "rows_b", group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
