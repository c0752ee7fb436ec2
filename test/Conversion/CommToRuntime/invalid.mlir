// RUN: commopt-opt %s --convert-comm-to-runtime -split-input-file -verify-diagnostics

func.func @not_bufferized(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comm.allreduce' op operates on tensors: run one-shot-bufferize before convert-comm-to-runtime}}
  %0 = comm.allreduce %g : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @integer_gradient(%m: memref<4xi32>) {
  // expected-error @+1 {{'comm.allreduce' op cannot be lowered: the runtime communicates f16, bf16, f32 and f64 gradients, not 'i32'}}
  comm.allreduce %m : memref<4xi32>
  return
}

// -----

// The runtime function a collective needs is taken: the collective stays
// as it is, and the conversion fails.
func.func @symbol_taken(%m: memref<4xf32>) {
  // expected-error @+2 {{failed to legalize operation 'comm.allreduce' that was explicitly marked illegal}}
  // expected-error @+1 {{cannot declare runtime function @commrt_allreduce with type '(!llvm.ptr, i64, i32, i32) -> i32': the module already has it with type '(i32) -> ()'}}
  comm.allreduce %m : memref<4xf32>
  return
}
func.func private @commrt_allreduce(i32)

// -----

// The runtime takes the prescale as an f32: one that rounds to 0 or
// infinity there cannot be passed on.
func.func @prescale_out_of_f32_range(%m: memref<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op cannot be lowered: prescale 1.000000e-50 is out of the range of f32}}
  comm.allreduce %m {prescale = 1.0e-50 : f64, wire = bf16} : memref<4xf32>
  return
}

// -----

// The runtime's sparse allreduce takes f32 gradients only.
func.func @sparse_f64(%g: memref<1024xf64>, %r: memref<1024xf64>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op cannot be lowered: the runtime's sparse allreduce takes f32 gradients, not 'f64'}}
  comm.sparse_allreduce %g, %r {density = 0.01, select = #comm.select<threshold>, exchange = #comm.exchange<allgather>}
      : memref<1024xf64>, memref<1024xf64>
  return
}

// -----

func.func @sparse_tensor_form(%g: tensor<1024xf32>, %r: tensor<1024xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op operates on tensors: run one-shot-bufferize before convert-comm-to-runtime}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.01, select = #comm.select<chunk>, exchange = #comm.exchange<chunk>}
      : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
  return %0#0, %0#1 : tensor<1024xf32>, tensor<1024xf32>
}

// -----

// A group's members come from the grid's shape: a dynamic one cannot say
// who they are.
// expected-error @+1 {{'shard.grid' op cannot be lowered: the runtime needs a grid of static shape to check the rank count}}
shard.grid @grid(shape = 2x?)

func.func @dynamic_grid_group(%m: memref<4xf32>) {
  comm.allreduce %m {group = #comm.group<@grid, axes = [1]>} : memref<4xf32>
  return
}

// -----

func.func @integer_output(%m: memref<4xi32>) {
  // expected-error @+2 {{failed to legalize operation 'comm.compute' that was explicitly marked illegal}}
  // expected-error @+1 {{'comm.compute' op cannot lower an output of element type 'i32': the runtime fills f32, f64, f16 and bf16}}
  comm.compute () outs(%m : memref<4xi32>) {cost_us = 1.0} : () -> ()
  return
}

// -----

func.func @strided_output(%m: memref<4x4xf32>) {
  %v = memref.subview %m[0, 1] [4, 2] [1, 1]
      : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1], offset: 1>>
  // expected-error @+2 {{failed to legalize operation 'comm.compute' that was explicitly marked illegal}}
  // expected-error @+1 {{'comm.compute' op cannot lower the non-contiguous output 'memref<4x2xf32, strided<[4, 1], offset: 1>>': the runtime fills contiguous buffers}}
  comm.compute () outs(%v : memref<4x2xf32, strided<[4, 1], offset: 1>>) {cost_us = 1.0} : () -> ()
  return
}
