// RUN: commopt-opt %s --pass-pipeline="builtin.module(func.func(comm-forward-residuals))" -split-input-file | FileCheck %s

// The residual is copied out of its global, updated by the sparse allreduce
// and copied back: the op updates the global itself, both copies and the
// buffer go. Blocking and started alike.
// CHECK-LABEL: func.func @blocking
// CHECK-NEXT: %[[G:.*]] = memref.get_global @w_residual
// CHECK-NEXT: comm.sparse_allreduce %{{.*}}, %[[G]]
// CHECK-NEXT: return
memref.global "private" @w_residual : memref<16xf32> = dense<0.0>
func.func @blocking(%grad: memref<16xf32>) {
  %g = memref.get_global @w_residual : memref<16xf32>
  %r = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  %h = memref.get_global @w_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}

// CHECK-LABEL: func.func @started
// CHECK-NEXT: %[[G:.*]] = memref.get_global @w_residual
// CHECK-NEXT: %[[T:.*]] = comm.sparse_start %{{.*}}, %[[G]]
// CHECK-NEXT: comm.compute
// CHECK-NEXT: comm.wait %[[T]]
// CHECK-NEXT: return
func.func @started(%grad: memref<16xf32>) {
  %g = memref.get_global @w_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  %t = comm.sparse_start %grad, %r {density = 0.25, exchange = #comm.exchange<hash>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  comm.compute () {cost_us = 5.0} : () -> ()
  comm.wait %t
  %h = memref.get_global @w_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}

// -----

// Left alone: the global is read between the copies (through the loaded
// value, or loaded again), a call that might read it comes between them, the
// result goes to another global, or the buffer has another use.
// CHECK-LABEL: func.func @read_between
// CHECK: memref.alloc
// CHECK-COUNT-2: memref.copy
// CHECK-LABEL: func.func @loaded_again
// CHECK: memref.alloc
// CHECK-COUNT-2: memref.copy
// CHECK-LABEL: func.func @call_between
// CHECK: memref.alloc
// CHECK-COUNT-2: memref.copy
// CHECK-LABEL: func.func @other_global
// CHECK: memref.alloc
// CHECK-COUNT-2: memref.copy
// CHECK-LABEL: func.func @other_use
// CHECK: memref.alloc
// CHECK-COUNT-2: memref.copy
memref.global "private" @a_residual : memref<16xf32> = dense<0.0>
memref.global "private" @b_residual : memref<16xf32> = dense<0.0>
func.func private @opaque()
func.func @read_between(%grad: memref<16xf32>, %out: memref<16xf32>) {
  %g = memref.get_global @a_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  comm.compute (%g) {cost_us = 1.0} : (memref<16xf32>) -> ()
  %h = memref.get_global @a_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}
func.func @loaded_again(%grad: memref<16xf32>) {
  %g = memref.get_global @a_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  %again = memref.get_global @a_residual : memref<16xf32>
  comm.compute (%again) {cost_us = 1.0} : (memref<16xf32>) -> ()
  %h = memref.get_global @a_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}
func.func @call_between(%grad: memref<16xf32>) {
  %g = memref.get_global @a_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  func.call @opaque() : () -> ()
  %h = memref.get_global @a_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}
func.func @other_global(%grad: memref<16xf32>) {
  %g = memref.get_global @a_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  %h = memref.get_global @b_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return
}
func.func @other_use(%grad: memref<16xf32>) -> memref<16xf32> {
  %g = memref.get_global @a_residual : memref<16xf32>
  %r = memref.alloc() : memref<16xf32>
  memref.copy %g, %r : memref<16xf32> to memref<16xf32>
  comm.sparse_allreduce %grad, %r {density = 0.25, exchange = #comm.exchange<allgather>, select = #comm.select<topk>} : memref<16xf32>, memref<16xf32>
  %h = memref.get_global @a_residual : memref<16xf32>
  memref.copy %r, %h : memref<16xf32> to memref<16xf32>
  return %r : memref<16xf32>
}
