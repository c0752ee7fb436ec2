shard.grid @grid(shape = 4)

func.func @index_elements(%g: tensor<8xindex>) -> tensor<2xindex> {
  %0 = shard.reduce_scatter %g on @grid grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<8xindex> -> tensor<2xindex>
  return %0 : tensor<2xindex>
}
