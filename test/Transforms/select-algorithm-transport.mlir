// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/nccl-with-mpi-4.json" | FileCheck %s --check-prefix=AUTO
// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/nccl-with-mpi-4.json transport=nccl" | FileCheck %s --check-prefix=NCCL
// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/nccl-with-mpi-4.json transport=mpi" | FileCheck %s --check-prefix=MPI
// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/flat-4.json" | FileCheck %s --check-prefix=ONE
// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/nccl-with-mpi-4.json" --comm-estimate="cluster=%S/Inputs/nccl-with-mpi-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=COST
// RUN: commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/nccl-with-mpi-4.json transport=nccl" --comm-estimate="cluster=%S/Inputs/nccl-with-mpi-4.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=COST-NCCL
// RUN: not commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/flat-4.json transport=mpi" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not commopt-opt %s --split-input-file --comm-select-algorithm="cluster=%S/Inputs/bad-cluster-alternate.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// Where the cluster has a second transport (NCCL at 50 us a message and
// 100 GB/s, beside a CUDA-aware MPI at 5 us and 10 GB/s, 4 ranks), each
// collective gets the algorithm and backend of least cost over both. For
// n bytes over 4 ranks, the ring costs 6 a + 1.5 n b and the tree
// 4 a + 2 n b (docs/CostModel.md, 2.1):
//   4000 bytes:     NCCL ring 300.06, tree 200.08; MPI ring 30.6,
//                   tree 20.8 (picked)
//   40000000 bytes: NCCL ring 900 (picked), tree 1000; MPI ring 6030,
//                   tree 8020
//   unknown bytes:  the cluster's own backend and algorithm (NCCL ring)
//   within a process group of 2 ranks, 4000 bytes: MPI ring, 2 a + n b
//   = 10.4 (tree 10.8; NCCL's ring 100.04)

// AUTO-LABEL: func.func @step
// AUTO: comm.allreduce {{.*}}{algorithm = #comm.algorithm<tree>, name = "small", transport = #comm.transport<mpi>}
// AUTO: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "large", transport = #comm.transport<nccl>}
// AUTO: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "dynamic", transport = #comm.transport<nccl>}
// AUTO: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, group = #comm.group<@grid, axes = [1]>, name = "row", transport = #comm.transport<mpi>}

// transport=nccl: every collective on NCCL, the algorithm still chosen.
// NCCL-LABEL: func.func @step
// NCCL: comm.allreduce {{.*}}{algorithm = #comm.algorithm<tree>, name = "small", transport = #comm.transport<nccl>}
// NCCL: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "large", transport = #comm.transport<nccl>}
// NCCL: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "dynamic", transport = #comm.transport<nccl>}

// transport=mpi: the alternate's own algorithm where the size is unknown.
// MPI-LABEL: func.func @step
// MPI: comm.allreduce {{.*}}{algorithm = #comm.algorithm<tree>, name = "small", transport = #comm.transport<mpi>}
// MPI: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "large", transport = #comm.transport<mpi>}
// MPI: comm.allreduce {{.*}}{algorithm = #comm.algorithm<tree>, name = "dynamic", transport = #comm.transport<mpi>}

// A cluster of one transport sets none: the backend in use carries them.
// ONE-LABEL: func.func @step
// ONE-NOT: transport
// ONE-LABEL: func.func @mixed

// The estimate prices each on its own transport: the small one at 20.8 us
// on MPI, 200.08 us with NCCL alone; the step is faster with both.
// COST: step                 1231.200 us
// COST: large          40000000        0          20.800         920.800         900.000
// COST: small              4000        0           0.000          20.800          20.800
// COST: row                4000        0        1220.800        1231.200          10.400
// COST-NCCL: step                 1500.120 us
// COST-NCCL: small              4000        0           0.000         200.080         200.080
// COST-NCCL: row                4000        0        1400.080        1500.120         100.040

// MISSING: error: comm-select-algorithm: transport=mpi, but cluster '{{.*}}flat-4.json' has the 'nccl' backend only: describe the second backend as its `alternate` (docs/Cluster.md), or use transport=auto

// BAD: invalid cluster description: is the cluster's: leave it out of the alternate at cluster.alternate.ranks

shard.grid @grid(shape = 2x2)

func.func @step(%small: tensor<1000xf32>, %large: tensor<10000000xf32>,
                %dynamic: tensor<?xf32>, %row: tensor<1000xf32>)
    -> (tensor<1000xf32>, tensor<10000000xf32>, tensor<?xf32>,
        tensor<1000xf32>) {
  %0 = comm.allreduce %small {name = "small"}
      : tensor<1000xf32> -> tensor<1000xf32>
  %1 = comm.allreduce %large {name = "large"}
      : tensor<10000000xf32> -> tensor<10000000xf32>
  %2 = comm.allreduce %dynamic {name = "dynamic"}
      : tensor<?xf32> -> tensor<?xf32>
  %3 = comm.allreduce %row {group = #comm.group<@grid, axes = [1]>,
                            name = "row"}
      : tensor<1000xf32> -> tensor<1000xf32>
  return %0, %1, %2, %3
      : tensor<1000xf32>, tensor<10000000xf32>, tensor<?xf32>, tensor<1000xf32>
}

// -----

// A mixed-wire bucket runs the ring on the backend in use: its runtime
// call takes no transport.
// AUTO-LABEL: func.func @mixed
// AUTO: comm.fused_allreduce {{.*}}{algorithm = #comm.algorithm<ring>, narrowed = array<i1: true, false>, prescale = 2.500000e-01 : f64, reduce = #comm.reduce<avg>, wire = f16}
// AUTO-NOT: transport
func.func @mixed(%w: tensor<1000xf32>, %b: tensor<10xf32>)
    -> (tensor<1000xf32>, tensor<10xf32>) {
  %r:2 = comm.fused_allreduce %w, %b {narrowed = array<i1: true, false>,
                                      prescale = 2.500000e-01 : f64,
                                      reduce = #comm.reduce<avg>, wire = f16}
      : tensor<1000xf32>, tensor<10xf32> -> tensor<1000xf32>, tensor<10xf32>
  return %r#0, %r#1 : tensor<1000xf32>, tensor<10xf32>
}
