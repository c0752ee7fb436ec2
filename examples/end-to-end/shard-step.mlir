// A data-parallel step as a sharding compiler emits it: upstream's shard
// dialect on a 1-D grid of 4 processes, gradients reduced over the grid
// with shard.all_reduce. Each process scales its input by its index + 1, so
// the sums are 1 + 2 + 3 + 4 = 10 times the input on every rank.
//
// Import, plan, add a timing @main, lower and run on 4 ranks:
//
//   commopt-opt shard-step.mlir --comm-import-shard --comm-optimize \
//     --comm-add-step-driver=steps=3 --commopt-lower-to-llvm -o lowered.mlir
//   mpirun -np 4 mlir-runner lowered.mlir -e main -entry-point-result=void \
//     -shared-libs=$libs
//
// (libs as for allreduce.mlir). The lowered module checks on entry that the
// job has as many ranks as the grid; test/Integration/shard-step-4-ranks.mlir
// runs it.

shard.grid @data(shape = 4)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func private @print(%t: tensor<8xf32>) {
  %m = bufferization.to_buffer %t : tensor<8xf32> to memref<8xf32>
  %u = memref.cast %m : memref<8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @step(%input: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %index = shard.process_linear_index on @data : index
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %index, %c1 : index
  %i64 = arith.index_cast %i1 : index to i64
  %scale = arith.sitofp %i64 : i64 to f32
  %empty = tensor.empty() : tensor<8xf32>
  %grad = linalg.generic
      {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
       iterator_types = ["parallel"]}
      ins(%input : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %bias = tensor.splat %scale : tensor<8xf32>
  %sum = shard.all_reduce %grad on @data grid_axes = [0] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %max = shard.all_reduce %bias on @data grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
  call @print(%sum) : (tensor<8xf32>) -> ()
  call @print(%max) : (tensor<8xf32>) -> ()
  return %sum, %max : tensor<8xf32>, tensor<8xf32>
}
