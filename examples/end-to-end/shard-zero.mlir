// A sharded data-parallel step (ZeRO/FSDP) as upstream's shard dialect
// writes it, on a 1-D grid of 4 processes: each process's gradient of 8x2
// is reduce-scattered along its first axis (each process keeps 2 rows of
// the sum); each process slices its 2 rows of the replicated parameter
// (shard.all_slice, which upstream's partitioner emits where a replicated
// tensor becomes sharded), updates them with its rows of the gradient, and
// the updated shards are all-gathered back into the whole parameter, as a
// sharded optimizer does. Process r's gradient is (r + 1) (2 i + j + 1), so
// the sums are 10 (2 i + j + 1); the parameter is 1000 + 2 i + j, so the
// updated one is 990 - 9 (2 i + j).
//
// Import, plan, lower and run on 4 ranks:
//
//   commopt-opt shard-zero.mlir --comm-import-shard --comm-optimize \
//     --commopt-lower-to-llvm -o lowered.mlir
//   mpirun -np 4 mlir-runner lowered.mlir -e main -entry-point-result=void \
//     -shared-libs=$libs
//
// (libs as for allreduce.mlir); test/Integration/shard-zero-4-ranks.mlir
// runs it.

shard.grid @data(shape = 4)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func private @print(%t: tensor<16xf32>) {
  %m = bufferization.to_buffer %t : tensor<16xf32> to memref<16xf32>
  %u = memref.cast %m : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func private @print_shard(%t: tensor<4xf32>) {
  %m = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  %u = memref.cast %m : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %index = shard.process_linear_index on @data : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %grad = tensor.generate {
  ^bb0(%i: index, %j: index):
    %r1 = arith.addi %index, %c1 : index
    %i2 = arith.muli %i, %c2 : index
    %ij = arith.addi %i2, %j : index
    %ij1 = arith.addi %ij, %c1 : index
    %p = arith.muli %r1, %ij1 : index
    %pi = arith.index_cast %p : index to i64
    %v = arith.sitofp %pi : i64 to f32
    tensor.yield %v : f32
  } : tensor<8x2xf32>
  %param = tensor.generate {
  ^bb0(%i: index, %j: index):
    %i2 = arith.muli %i, %c2 : index
    %ij = arith.addi %i2, %j : index
    %pi = arith.index_cast %ij : index to i64
    %v = arith.sitofp %pi : i64 to f32
    %c1000 = arith.constant 1000.0 : f32
    %w = arith.addf %v, %c1000 : f32
    tensor.yield %w : f32
  } : tensor<8x2xf32>
  %shard = shard.reduce_scatter %grad on @data grid_axes = [0] reduction = sum scatter_axis = 0 : tensor<8x2xf32> -> tensor<2x2xf32>
  %own = shard.all_slice %param on @data grid_axes = [0] slice_axis = 0 : tensor<8x2xf32> -> tensor<2x2xf32>
  %empty = tensor.empty() : tensor<2x2xf32>
  %updated = linalg.sub ins(%own, %shard : tensor<2x2xf32>, tensor<2x2xf32>) outs(%empty : tensor<2x2xf32>) -> tensor<2x2xf32>
  %whole = shard.all_gather %updated on @data grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<8x2xf32>
  %flat_shard = tensor.collapse_shape %shard [[0, 1]] : tensor<2x2xf32> into tensor<4xf32>
  %flat_whole = tensor.collapse_shape %whole [[0, 1]] : tensor<8x2xf32> into tensor<16xf32>
  call @print_shard(%flat_shard) : (tensor<4xf32>) -> ()
  call @print(%flat_whole) : (tensor<16xf32>) -> ()
  return
}
