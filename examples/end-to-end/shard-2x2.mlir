// A step on a 2-D grid, as a sharding compiler emits it for data x tensor
// parallelism: upstream's shard dialect on a 2x2 grid of 4 processes
// (row-major: process r is at (r / 2, r % 2)), gradients reduced over one
// axis of the grid or both with shard.all_reduce. Each process scales its
// input by r + 1, so
//   over axis 1 (the rows {0, 1} and {2, 3}):    3 on ranks 0-1, 7 on 2-3;
//   over axis 0 (the columns {0, 2} and {1, 3}): 4 on ranks 0, 2; 6 on 1, 3;
//   over both axes (all four):                   10 everywhere;
// and the mean over the rows is 1.5 on ranks 0-1, 3.5 on 2-3.
//
// Import, plan, add a timing @main, lower and run on 4 ranks:
//
//   commopt-opt shard-2x2.mlir --comm-import-shard --comm-optimize \
//     --comm-add-step-driver=steps=2 --commopt-lower-to-llvm -o lowered.mlir
//   mpirun -np 4 mlir-runner lowered.mlir -e main -entry-point-result=void \
//     -shared-libs=$libs
//
// (libs as for allreduce.mlir); test/Integration/shard-2x2-4-ranks.mlir runs
// it.

shard.grid @mesh(shape = 2x2)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func private @print(%t: tensor<4xf32>) {
  %m = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  %u = memref.cast %m : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @step(%input: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %index = shard.process_linear_index on @mesh : index
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %index, %c1 : index
  %i64 = arith.index_cast %i1 : index to i64
  %scale = arith.sitofp %i64 : i64 to f32
  %grad = tensor.splat %scale : tensor<4xf32>
  %rows = shard.all_reduce %grad on @mesh grid_axes = [1] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  %columns = shard.all_reduce %grad on @mesh grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  %all = shard.all_reduce %grad on @mesh grid_axes = [0, 1] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  %mean = shard.all_reduce %grad on @mesh grid_axes = [1] reduction = average : tensor<4xf32> -> tensor<4xf32>
  call @print(%rows) : (tensor<4xf32>) -> ()
  call @print(%columns) : (tensor<4xf32>) -> ()
  call @print(%all) : (tensor<4xf32>) -> ()
  call @print(%mean) : (tensor<4xf32>) -> ()
  return %rows, %columns, %all, %mean
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
