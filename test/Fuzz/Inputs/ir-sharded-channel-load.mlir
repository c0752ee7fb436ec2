// A reduce-scatter among the rows of a 2x2 grid, as test/Conversion/
// CommToRuntime/sharded.mlir has it: comm-optimize's overlap scheduling
// split it into a comm.reduce_scatter_start, whose channel load was read
// as a comm.start's.
shard.grid @grid(shape = 2x2)

func.func @grouped(%g: tensor<8xf32>) -> tensor<4xf32> {
  %s = comm.reduce_scatter %g {shards = 2, group = #comm.group<@grid, axes = [1]>} : tensor<8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
