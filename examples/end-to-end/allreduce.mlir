// A training step's gradients, reduced across ranks with comm ops.
//
// Each rank makes its "gradients" from its rank with ordinary tensor ops,
// reduces them (sum, avg, max, min, f32 and f64, one bucket of two
// gradients) and prints the results. Lower it and run it on 4 ranks:
//
//   commopt-opt allreduce.mlir --commopt-lower-to-llvm -o lowered.mlir
//   mpirun -np 4 mlir-runner lowered.mlir -e main -entry-point-result=void \
//     -shared-libs=$libs
//
// with libs=build/lib/libcommrt.so plus libmlir_c_runner_utils.so and
// libmlir_runner_utils.so from /usr/lib/llvm-22/lib, comma-separated.
//
// Every rank prints the same reductions; test/Integration checks them.

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefF64(memref<*xf64>) attributes {llvm.emit_c_interface}

func.func @print_f32(%t: tensor<?xf32>) {
  %m = bufferization.to_buffer %t : tensor<?xf32> to memref<?xf32>
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print_f64(%t: tensor<?x?xf64>) {
  %m = bufferization.to_buffer %t : tensor<?x?xf64> to memref<?x?xf64>
  %u = memref.cast %m : memref<?x?xf64> to memref<*xf64>
  call @printMemrefF64(%u) : (memref<*xf64>) -> ()
  return
}

// value(i) = (rank + 1) * (i + 1)
func.func @ramp(%rank: index, %n: index) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %t = tensor.generate %n {
  ^bb0(%i: index):
    %r1 = arith.addi %rank, %c1 : index
    %i1 = arith.addi %i, %c1 : index
    %p = arith.muli %r1, %i1 : index
    %pi = arith.index_cast %p : index to i64
    %v = arith.sitofp %pi : i64 to f32
    tensor.yield %v : f32
  } : tensor<?xf32>
  return %t : tensor<?xf32>
}

func.func @main() {
  %rank = comm.rank
  %size = comm.world_size
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index

  // Who am I: [rank, world size].
  %rf = arith.index_cast %rank : index to i64
  %sf = arith.index_cast %size : index to i64
  %rv = arith.sitofp %rf : i64 to f32
  %sv = arith.sitofp %sf : i64 to f32
  %id = tensor.from_elements %rv, %sv : tensor<2xf32>
  %idd = tensor.cast %id : tensor<2xf32> to tensor<?xf32>
  call @print_f32(%idd) : (tensor<?xf32>) -> ()

  // sum over ranks of (r + 1) * (i + 1) = 10 * (i + 1)
  %g = call @ramp(%rank, %c5) : (index, index) -> tensor<?xf32>
  %sum = comm.allreduce %g {name = "sum"} : tensor<?xf32> -> tensor<?xf32>
  call @print_f32(%sum) : (tensor<?xf32>) -> ()

  // avg: 2.5 * (i + 1); max: 4 * (i + 1); min: 1 * (i + 1)
  %avg = comm.allreduce %g {reduce = #comm.reduce<avg>} : tensor<?xf32> -> tensor<?xf32>
  %max = comm.allreduce %g {reduce = #comm.reduce<max>} : tensor<?xf32> -> tensor<?xf32>
  %min = comm.allreduce %g {reduce = #comm.reduce<min>} : tensor<?xf32> -> tensor<?xf32>
  call @print_f32(%avg) : (tensor<?xf32>) -> ()
  call @print_f32(%max) : (tensor<?xf32>) -> ()
  call @print_f32(%min) : (tensor<?xf32>) -> ()

  // f64, two dimensions, and the gradient's old value is still used after
  // the collective (bufferization must copy it): g2 = rank * 100 + (3i + j).
  %g2 = tensor.generate %c2, %c3 {
  ^bb0(%i: index, %j: index):
    %row = arith.muli %i, %c3 : index
    %e = arith.addi %row, %j : index
    %h = arith.constant 100 : index
    %rb = arith.muli %rank, %h : index
    %x = arith.addi %rb, %e : index
    %xi = arith.index_cast %x : index to i64
    %xf = arith.sitofp %xi : i64 to f64
    tensor.yield %xf : f64
  } : tensor<?x?xf64>
  %sum2 = comm.allreduce %g2 : tensor<?x?xf64> -> tensor<?x?xf64>
  // The sum over ranks, 600 + 4 * (3i + j), then the rank's own gradient,
  // unchanged.
  call @print_f64(%sum2) : (tensor<?x?xf64>) -> ()
  call @print_f64(%g2) : (tensor<?x?xf64>) -> ()

  // A bucket: two gradients of different shapes, one collective.
  %a = call @ramp(%rank, %c3) : (index, index) -> tensor<?xf32>
  %b = call @ramp(%rank, %c2) : (index, index) -> tensor<?xf32>
  %f:2 = comm.fused_allreduce %a, %b {names = ["a", "b"], reduce = #comm.reduce<max>}
      : tensor<?xf32>, tensor<?xf32> -> tensor<?xf32>, tensor<?xf32>
  call @print_f32(%f#0) : (tensor<?xf32>) -> ()
  call @print_f32(%f#1) : (tensor<?xf32>) -> ()
  return
}
