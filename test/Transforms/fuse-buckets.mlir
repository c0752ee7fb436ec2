// RUN: commopt-opt %s --comm-fuse-buckets -split-input-file | FileCheck %s --check-prefix=DDP
// RUN: commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=2 first-bucket-mb=0 overflow=false" -split-input-file | FileCheck %s --check-prefix=CAP2
// RUN: commopt-opt %s --comm-fuse-buckets="bucket-cap-mb=1000" -split-input-file | FileCheck %s --check-prefix=ALL

// Sizes: 1 MiB = 262144 f32. DDP's default (25 MiB cap, 1 MiB first bucket,
// a bucket closes once it reaches the cap): `a` fills the first bucket alone.

// DDP-LABEL: func.func @ready_order
// DDP: %[[A:.*]] = comm.allreduce %{{.*}} {name = "a", reduce = #comm.reduce<avg>}
// DDP: %[[F:.*]]:3 = comm.fused_allreduce %{{.*}}, %{{.*}}, %{{.*}} {names = ["b", "c", "d"], reduce = #comm.reduce<avg>} : tensor<262144xf32>, tensor<1024xf32>, tensor<8xf32>
// DDP-NEXT: return %[[A]], %[[F]]#0, %[[F]]#1, %[[F]]#2

// A 2 MiB cap that is never exceeded: a + b make exactly 2 MiB.
// CAP2-LABEL: func.func @ready_order
// CAP2: %[[AB:.*]]:2 = comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["a", "b"], reduce = #comm.reduce<avg>}
// CAP2: %[[CD:.*]]:2 = comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["c", "d"], reduce = #comm.reduce<avg>}
// CAP2-NEXT: return %[[AB]]#0, %[[AB]]#1, %[[CD]]#0, %[[CD]]#1

// ALL-LABEL: func.func @ready_order
// ALL: comm.allreduce {{.*}} {name = "a"
// ALL-NEXT: comm.fused_allreduce {{.*}} {names = ["b", "c", "d"]
func.func @ready_order(%a: tensor<262144xf32>, %b: tensor<262144xf32>,
                       %c: tensor<1024xf32>, %d: tensor<8xf32>)
    -> (tensor<262144xf32>, tensor<262144xf32>, tensor<1024xf32>, tensor<8xf32>) {
  %0 = comm.allreduce %a {name = "a", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %1 = comm.allreduce %b {name = "b", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  %2 = comm.allreduce %c {name = "c", reduce = #comm.reduce<avg>} : tensor<1024xf32> -> tensor<1024xf32>
  %3 = comm.allreduce %d {name = "d", reduce = #comm.reduce<avg>} : tensor<8xf32> -> tensor<8xf32>
  return %0, %1, %2, %3 : tensor<262144xf32>, tensor<262144xf32>, tensor<1024xf32>, tensor<8xf32>
}

// -----

// A bucket is placed where its last gradient is ready: after the compute
// step that produces it, never before.
// ALL-LABEL: func.func @after_producers
// ALL: %[[G1:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, name = "l1"}
// ALL: %[[G2:.*]] = comm.compute() {cost_us = 1.000000e+01 : f64, name = "l2"}
// ALL-NEXT: %[[F:.*]]:2 = comm.fused_allreduce %[[G1]], %[[G2]]
// ALL-NEXT: return %[[F]]#0, %[[F]]#1
func.func @after_producers() -> (tensor<4xf32>, tensor<4xf32>) {
  %g1 = comm.compute () {cost_us = 10.0, name = "l1"} : () -> tensor<4xf32>
  %r1 = comm.allreduce %g1 : tensor<4xf32> -> tensor<4xf32>
  %g2 = comm.compute () {cost_us = 10.0, name = "l2"} : () -> tensor<4xf32>
  %r2 = comm.allreduce %g2 : tensor<4xf32> -> tensor<4xf32>
  return %r1, %r2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A reduced gradient used before the next one is ready closes its bucket:
// fusing across that use would move the use before its collective.
// ALL-LABEL: func.func @data_dependence
// ALL: %[[R1:.*]] = comm.allreduce %{{.*}} {name = "w1"}
// ALL-NEXT: %[[X:.*]] = comm.compute(%[[R1]])
// ALL: comm.fused_allreduce %{{.*}}, %{{.*}} {names = ["w2", "w3"]}
func.func @data_dependence(%w1: tensor<4xf32>, %w2: tensor<4xf32>, %w3: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r1 = comm.allreduce %w1 {name = "w1"} : tensor<4xf32> -> tensor<4xf32>
  %x = comm.compute (%r1) {cost_us = 1.0} : (tensor<4xf32>) -> tensor<4xf32>
  %r2 = comm.allreduce %w2 {name = "w2"} : tensor<4xf32> -> tensor<4xf32>
  %r3 = comm.allreduce %w3 {name = "w3"} : tensor<4xf32> -> tensor<4xf32>
  return %x, %r2, %r3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Different reductions, element types and wire settings never share a
// bucket; each kind gets its own.
// ALL-LABEL: func.func @mixed_kinds
// ALL-DAG: comm.fused_allreduce {{.*}} {names = ["f32a", "f32b"], reduce = #comm.reduce<avg>} : tensor<4xf32>, tensor<4xf32>
// ALL-DAG: comm.fused_allreduce {{.*}} {names = ["f16a", "f16b"], reduce = #comm.reduce<avg>} : tensor<4xf16>, tensor<4xf16>
// ALL-DAG: comm.allreduce {{.*}} {name = "max", reduce = #comm.reduce<max>}
// ALL-DAG: comm.allreduce {{.*}} {name = "wire", reduce = #comm.reduce<avg>, wire = bf16}
func.func @mixed_kinds(%a: tensor<4xf32>, %b: tensor<4xf16>, %c: tensor<4xf32>,
                       %d: tensor<4xf16>, %e: tensor<4xf32>, %f: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {name = "f32a", reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  %1 = comm.allreduce %b {name = "f16a", reduce = #comm.reduce<avg>} : tensor<4xf16> -> tensor<4xf16>
  %2 = comm.allreduce %c {name = "max", reduce = #comm.reduce<max>} : tensor<4xf32> -> tensor<4xf32>
  %3 = comm.allreduce %d {name = "f16b", reduce = #comm.reduce<avg>} : tensor<4xf16> -> tensor<4xf16>
  %4 = comm.allreduce %e {name = "wire", reduce = #comm.reduce<avg>, wire = bf16} : tensor<4xf32> -> tensor<4xf32>
  %5 = comm.allreduce %f {name = "f32b", reduce = #comm.reduce<avg>} : tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Gradients reduced within different process groups, or within a group and
// among all ranks, never share a bucket: each group gets its own, which
// keeps the group.
shard.grid @grid(shape = 2x4)

// ALL-LABEL: func.func @groups
// ALL-DAG: comm.fused_allreduce {{.*}} {group = #comm.group<@grid, axes = [1]>, names = ["rows_a", "rows_b"]} : tensor<4xf32>, tensor<4xf32>
// ALL-DAG: comm.fused_allreduce {{.*}} {group = #comm.group<@grid, axes = [0]>, names = ["columns_a", "columns_b"]} : tensor<4xf32>, tensor<4xf32>
// ALL-DAG: comm.fused_allreduce {{.*}} {names = ["all_a", "all_b"]} : tensor<4xf32>, tensor<4xf32>
// ALL-NOT: comm.allreduce
func.func @groups(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>,
                  %d: tensor<4xf32>, %e: tensor<4xf32>, %f: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {name = "rows_a", group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  %1 = comm.allreduce %b {name = "columns_a", group = #comm.group<@grid, axes = [0]>} : tensor<4xf32> -> tensor<4xf32>
  %2 = comm.allreduce %c {name = "all_a"} : tensor<4xf32> -> tensor<4xf32>
  %3 = comm.allreduce %d {name = "rows_b", group = #comm.group<@grid, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  %4 = comm.allreduce %e {name = "all_b"} : tensor<4xf32> -> tensor<4xf32>
  %5 = comm.allreduce %f {name = "columns_b", group = #comm.group<@grid, axes = [0]>} : tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Gradients on different transports never share a bucket either; the
// bucket keeps its transport.
// ALL-LABEL: func.func @transports
// ALL-DAG: comm.fused_allreduce {{.*}} {names = ["mpi_a", "mpi_b"], transport = #comm.transport<mpi>} : tensor<4xf32>, tensor<4xf32>
// ALL-DAG: comm.fused_allreduce {{.*}} {names = ["nccl_a", "nccl_b"], transport = #comm.transport<nccl>} : tensor<4xf32>, tensor<4xf32>
// ALL-NOT: comm.allreduce
func.func @transports(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>,
                      %d: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = comm.allreduce %a {name = "mpi_a", transport = #comm.transport<mpi>} : tensor<4xf32> -> tensor<4xf32>
  %1 = comm.allreduce %b {name = "nccl_a", transport = #comm.transport<nccl>} : tensor<4xf32> -> tensor<4xf32>
  %2 = comm.allreduce %c {name = "mpi_b", transport = #comm.transport<mpi>} : tensor<4xf32> -> tensor<4xf32>
  %3 = comm.allreduce %d {name = "nccl_b", transport = #comm.transport<nccl>} : tensor<4xf32> -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Left alone: existing buckets, buffer-form ops, dynamic shapes, and a
// lone gradient.
// ALL-LABEL: func.func @left_alone
// ALL: comm.fused_allreduce %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// ALL-NEXT: comm.allreduce %{{.*}} : memref<4xf32>
// ALL-NEXT: comm.allreduce %{{.*}} : tensor<?xf32> -> tensor<?xf32>
// ALL-NEXT: comm.allreduce %{{.*}} : tensor<4xf64> -> tensor<4xf64>
// ALL-NEXT: return
func.func @left_alone(%a: tensor<4xf32>, %b: tensor<4xf32>, %m: memref<4xf32>,
                      %dyn: tensor<?xf32>, %one: tensor<4xf64>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<?xf32>, tensor<4xf64>) {
  %0:2 = comm.fused_allreduce %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  comm.allreduce %m : memref<4xf32>
  %1 = comm.allreduce %dyn : tensor<?xf32> -> tensor<?xf32>
  %2 = comm.allreduce %one : tensor<4xf64> -> tensor<4xf64>
  return %0#0, %0#1, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<?xf32>, tensor<4xf64>
}

// -----

// Nested regions: a use inside a nested op counts as a use by that op.
// ALL-LABEL: func.func @nested_use
// ALL: %[[R:.*]] = comm.allreduce %{{.*}} {name = "x"}
// ALL-NEXT: scf.execute_region
func.func @nested_use(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = comm.allreduce %x {name = "x"} : tensor<4xf32> -> tensor<4xf32>
  %u = scf.execute_region -> tensor<4xf32> {
    scf.yield %r : tensor<4xf32>
  }
  %s = comm.allreduce %y {name = "y"} : tensor<4xf32> -> tensor<4xf32>
  return %u, %s : tensor<4xf32>, tensor<4xf32>
}
