// comm-optimize forwards its sparse options to comm-sparsify: the selection,
// the exchange, the chunk size and the size below which gradients stay
// dense. On the 16-rank 10 GbE preset a 4 MiB gradient at density 0.001 is
// cheaper sparse; the 64 KiB one stays dense (below sparse-min-bytes, and
// its dense allreduce is cheaper than the three allgathers of its sparse
// exchange anyway).
// comm-schedule-overlap starts the sparse allreduces as it does the dense
// ones (comm.sparse_start, on a channel, with the layer's priority).

// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.001 sparse-select=topk sparse-exchange=allgather" | FileCheck %s --check-prefix=TOPK
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.01 sparse-exchange=chunk sparse-chunk-elements=1024" | FileCheck %s --check-prefix=CHUNK
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.001 sparse-select=topk sparse-exchange=allgather sparse-min-bytes=8388608 search=false" | FileCheck %s --check-prefix=ABOVE
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 sparse=true density=0.001 sparse-select=topk sparse-exchange=allgather sparse-overlap=false search=false" | FileCheck %s --check-prefix=BLOCKING
// RUN: commopt-opt %s --comm-optimize="cluster=ethernet10-16 density=0.001 sparse-select=topk" | FileCheck %s --check-prefix=DENSE
// RUN: not commopt-opt %s --comm-optimize="sparse=true sparse-select=bogus" 2>&1 | FileCheck %s --check-prefix=BADSELECT

// TOPK-LABEL: func.func @step
// TOPK: %[[BIG:.*]] = comm.sparse_start {{.*}}exchange = #comm.exchange<allgather>, name = "big", priority = 1 : i64, reduce = #comm.reduce<avg>, select = #comm.select<topk>
// TOPK: comm.start {{.*}}names = ["small"]
// TOPK: %[[RESULTS:.*]]:2 = comm.wait %[[BIG]]
// TOPK-NEXT: ml_program.global_store @big_residual = %[[RESULTS]]#1

// CHUNK-LABEL: func.func @step
// CHUNK: comm.sparse_start {{.*}}chunk_elements = 1024 : i64, density = 1.000000e-02 : f64, exchange = #comm.exchange<chunk>, name = "big", priority = 1 : i64, reduce = #comm.reduce<avg>, select = #comm.select<chunk>

// Both gradients are below sparse-min-bytes=8 MiB: both stay dense.
// ABOVE-LABEL: func.func @step
// ABOVE-NOT: comm.sparse_

// sparse-overlap=false keeps the sparse allreduce blocking.
// BLOCKING-LABEL: func.func @step
// BLOCKING: comm.sparse_allreduce {{.*}}name = "big"
// BLOCKING-NOT: comm.sparse_start

// DENSE-LABEL: func.func @step
// DENSE-NOT: comm.sparse_

// BADSELECT: comm-optimize: option 'sparse-select': unknown value 'bogus'; expected one of threshold, topk

func.func @step() -> (tensor<1048576xf32>, tensor<16384xf32>) {
  %a = comm.compute () {cost_us = 100.0, layer = 1, phase = #comm.phase<backward>} : () -> tensor<1048576xf32>
  %ra = comm.allreduce %a {name = "big", reduce = #comm.reduce<avg>} : tensor<1048576xf32> -> tensor<1048576xf32>
  %b = comm.compute () {cost_us = 100.0, layer = 0, phase = #comm.phase<backward>} : () -> tensor<16384xf32>
  %rb = comm.allreduce %b {name = "small", reduce = #comm.reduce<avg>} : tensor<16384xf32> -> tensor<16384xf32>
  return %ra, %rb : tensor<1048576xf32>, tensor<16384xf32>
}
