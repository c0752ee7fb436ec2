// RUN: commopt-opt %s --comm-schedule-overlap -split-input-file | FileCheck %s
// RUN: commopt-opt %s --comm-schedule-overlap="sparse=false" -split-input-file | FileCheck %s --check-prefix=BLOCKING

// A sparse allreduce in tensor form becomes a comm.sparse_start right after
// its operands and a comm.wait right before the first use of its reduced
// gradient; the store of the new residual moves behind the wait, so it does
// not hold the wait back. The start keeps every attribute and gets the
// layer's priority.
// CHECK-LABEL: func.func @overlapped
// CHECK: %[[G:.*]] = comm.compute() {{.*}}name = "grad"
// CHECK-NEXT: %[[RES:.*]] = ml_program.global_load @w_residual
// CHECK-NEXT: %[[T:.*]] = comm.sparse_start %[[G]], %[[RES]] {chunk_elements = 64 : i64, density = 1.000000e-01 : f64, exchange = #comm.exchange<chunk>, name = "w", priority = 3 : i64, reduce = #comm.reduce<avg>, select = #comm.select<chunk>} : tensor<1024xf32>, tensor<1024xf32>
// CHECK-NEXT: comm.compute() {{.*}}name = "overlapped"
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait %[[T]] : tensor<1024xf32>, tensor<1024xf32>
// CHECK-NEXT: ml_program.global_store @w_residual = %[[R]]#1
// CHECK-NEXT: comm.compute(%[[R]]#0) {{.*}}name = "user"
// CHECK-NOT: comm.sparse_allreduce
// BLOCKING-LABEL: func.func @overlapped
// BLOCKING: comm.sparse_allreduce
// BLOCKING-NEXT: ml_program.global_store
// BLOCKING-NOT: comm.sparse_start
ml_program.global private mutable @w_residual(dense<0.0> : tensor<1024xf32>) : tensor<1024xf32>
func.func @overlapped() {
  %g = comm.compute () {cost_us = 1.0, layer = 3, phase = #comm.phase<backward>, name = "grad"} : () -> tensor<1024xf32>
  %res = ml_program.global_load @w_residual : tensor<1024xf32>
  %r, %nr = comm.sparse_allreduce %g, %res {density = 0.1, select = #comm.select<chunk>, exchange = #comm.exchange<chunk>, chunk_elements = 64, reduce = #comm.reduce<avg>, name = "w"}
      : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
  ml_program.global_store @w_residual = %nr : tensor<1024xf32>
  comm.compute () {cost_us = 2.0, name = "overlapped"} : () -> ()
  comm.compute (%r) {cost_us = 3.0, name = "user"} : (tensor<1024xf32>) -> ()
  return
}

// -----

// Where the reduced gradient is not used in the block, the wait goes before
// the terminator, with the store after it.
// CHECK-LABEL: func.func @unused
// CHECK: comm.sparse_start
// CHECK-NEXT: comm.compute() {{.*}}name = "rest"
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait
// CHECK-NEXT: ml_program.global_store @u_residual = %[[R]]#1
// CHECK-NEXT: return
// BLOCKING-LABEL: func.func @unused
ml_program.global private mutable @u_residual(dense<0.0> : tensor<16xf32>) : tensor<16xf32>
func.func @unused(%g: tensor<16xf32>) {
  %res = ml_program.global_load @u_residual : tensor<16xf32>
  %r, %nr = comm.sparse_allreduce %g, %res {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @u_residual = %nr : tensor<16xf32>
  comm.compute () {cost_us = 2.0, name = "rest"} : () -> ()
  return
}

// -----

// An op before the wait point that loads the residual's global (or a call,
// which might) keeps the store, and so the wait, ahead of it.
// CHECK-LABEL: func.func @global_read_later
// CHECK: comm.sparse_start
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait
// CHECK-NEXT: ml_program.global_store @v_residual = %[[R]]#1
// CHECK-NEXT: ml_program.global_load @v_residual
// CHECK-LABEL: func.func @call_later
// CHECK: comm.sparse_start
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait
// CHECK-NEXT: ml_program.global_store @v_residual = %[[R]]#1
// CHECK-NEXT: call @opaque
ml_program.global private mutable @v_residual(dense<0.0> : tensor<16xf32>) : tensor<16xf32>
func.func private @opaque()
func.func @global_read_later(%g: tensor<16xf32>) -> tensor<16xf32> {
  %res = ml_program.global_load @v_residual : tensor<16xf32>
  %r, %nr = comm.sparse_allreduce %g, %res {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @v_residual = %nr : tensor<16xf32>
  %again = ml_program.global_load @v_residual : tensor<16xf32>
  comm.compute (%r, %again) {cost_us = 2.0} : (tensor<16xf32>, tensor<16xf32>) -> ()
  return %r : tensor<16xf32>
}
func.func @call_later(%g: tensor<16xf32>) -> tensor<16xf32> {
  %res = ml_program.global_load @v_residual : tensor<16xf32>
  %r, %nr = comm.sparse_allreduce %g, %res {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<16xf32>
  ml_program.global_store @v_residual = %nr : tensor<16xf32>
  func.call @opaque() : () -> ()
  return %r : tensor<16xf32>
}

// -----

// A store already after the first use of the reduced gradient stays where
// it is, after the wait.
// CHECK-LABEL: func.func @store_after_use
// CHECK: %[[T:.*]] = comm.sparse_start
// CHECK-NEXT: %[[R:.*]]:2 = comm.wait %[[T]]
// CHECK-NEXT: comm.compute(%[[R]]#0) {{.*}}name = "user"
// CHECK-NEXT: ml_program.global_store @s_residual = %[[R]]#1
// CHECK-NEXT: return
ml_program.global private mutable @s_residual(dense<0.0> : tensor<16xf32>) : tensor<16xf32>
func.func @store_after_use(%g: tensor<16xf32>) {
  %res = ml_program.global_load @s_residual : tensor<16xf32>
  %r, %nr = comm.sparse_allreduce %g, %res {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<16xf32>
  comm.compute (%r) {cost_us = 2.0, name = "user"} : (tensor<16xf32>) -> ()
  ml_program.global_store @s_residual = %nr : tensor<16xf32>
  return
}

// -----

// Sparse and dense starts share the channels: each goes where the fewest
// bytes are in flight, a sparse start counting its selected part (here 4 KiB
// at density 0.5, 2 KiB) against the dense start's 1 KiB.
// CHECK-LABEL: func.func @channels
// CHECK: comm.start %{{.*}} {names = ["a"]}
// CHECK: comm.sparse_start {{.*}}channel = 1 : i64{{.*}}name = "s"
// CHECK: comm.start %{{.*}} {names = ["b"]}
// CHECK: comm.start %{{.*}} {channel = 1 : i64, names = ["c"]}
func.func @channels(%a: tensor<256xf32>, %s: tensor<1024xf32>, %res: tensor<1024xf32>, %b: tensor<256xf32>, %c: tensor<256xf32>) -> (tensor<256xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<256xf32>, tensor<256xf32>) {
  %ra = comm.allreduce %a {name = "a"} : tensor<256xf32> -> tensor<256xf32>
  %rs, %nr = comm.sparse_allreduce %s, %res {density = 0.5, select = #comm.select<topk>, exchange = #comm.exchange<hash>, name = "s"}
      : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
  %rb = comm.allreduce %b {name = "b"} : tensor<256xf32> -> tensor<256xf32>
  %rc = comm.allreduce %c {name = "c"} : tensor<256xf32> -> tensor<256xf32>
  return %ra, %rs, %nr, %rb, %rc : tensor<256xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<256xf32>, tensor<256xf32>
}

// -----

// Left alone: a sparse allreduce in buffer form, and one already started.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: comm.sparse_allreduce %{{.*}}, %{{.*}} {{.*}} : memref<16xf32>, memref<16xf32>
// CHECK-NEXT: %[[T:.*]] = comm.sparse_start {{.*}}channel = 3 : i64
// CHECK-NEXT: comm.wait %[[T]]
func.func @left_alone(%g: memref<16xf32>, %r: memref<16xf32>, %h: tensor<16xf32>, %s: tensor<16xf32>) -> tensor<16xf32> {
  comm.sparse_allreduce %g, %r {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>}
      : memref<16xf32>, memref<16xf32>
  %t = comm.sparse_start %h, %s {density = 0.25, select = #comm.select<topk>, exchange = #comm.exchange<allgather>, channel = 3}
      : tensor<16xf32>, tensor<16xf32>
  %0:2 = comm.wait %t : tensor<16xf32>, tensor<16xf32>
  return %0#0 : tensor<16xf32>
}
