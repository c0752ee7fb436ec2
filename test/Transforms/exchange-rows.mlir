// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/flat-16.json" | FileCheck %s --check-prefix=R16
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/flat-4.json" | FileCheck %s --check-prefix=R4
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/cluster-3-ranks.json" | FileCheck %s --check-prefix=R3
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/single-rank.json" | FileCheck %s --check-prefix=ONE
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/flat-16.json exchange=hash" | FileCheck %s --check-prefix=HASH
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/flat-16.json exchange=allgather" | FileCheck %s --check-prefix=ALLGATHER
// RUN: commopt-opt %s -split-input-file --comm-exchange-rows="cluster=%S/Inputs/flat-16.json exchange=dense" | FileCheck %s --check-prefix=DENSE

// Three gradients that are sparse by nature, as their profile measured
// them: a Zipf-like embedding whose popular rows every rank touches (16
// ranks touch 8% of the rows together, where independent ranks would touch
// 14.9%), one whose ranks touch rows independently, and a small one that
// every step touches mostly.
//
// On 16 ranks, Zen's hash exchange gathers the 8% that the ranks touch
// together, less than the allgather's 16 x 1%: it wins for the Zipf
// gradient; for the independent one the union is as large as the
// allgather's volume, and the allgather, without the all-to-all, wins.
// The busy one stays dense.
// R16-LABEL: func.func @step
// R16: comm.sparse_allreduce %arg0 {comm.rows_touched = array<f64: 1.000000e-02, 1.800000e-02, 3.100000e-02, 5.000000e-02, 8.000000e-02>, density = 1.000000e-02 : f64, exchange = #comm.exchange<hash>, name = "zipf", reduce = #comm.reduce<avg>, select = #comm.select<rows>, union_density = 8.000000e-02 : f64} : tensor<100000x64xf32> -> tensor<100000x64xf32>
// R16: comm.sparse_allreduce %arg0 {{.*}}exchange = #comm.exchange<allgather>, name = "uniform"{{.*}}union_density = 1.486000e-01 : f64}
// R16: comm.allreduce %arg1 {comm.rows_touched = array<f64: 6.000000e-01>, name = "busy", reduce = #comm.reduce<avg>}
//
// On 4 ranks the union is the third measurement; the busy gradient's,
// past the one measured rank, 1 - 0.4^4 = 0.9744, and its hash exchange
// (a reduce-scatter of 60% of the rows and an allgather) is cheaper than
// the dense ring by the model.
// R4-LABEL: func.func @step
// R4: comm.sparse_allreduce %arg0 {{.*}}exchange = #comm.exchange<allgather>, name = "zipf"{{.*}}union_density = 3.100000e-02 : f64}
// R4: comm.sparse_allreduce %arg0 {{.*}}exchange = #comm.exchange<allgather>, name = "uniform"{{.*}}union_density = 3.940000e-02 : f64}
// R4: comm.sparse_allreduce %arg1 {{.*}}density = 6.000000e-01 : f64, exchange = #comm.exchange<hash>, name = "busy"{{.*}}union_density = 9.744000e-01 : f64}
//
// On 3 ranks, between the measured 2 and 4: 0.018 + (log2 3 - 1) x 0.013.
// R3-LABEL: func.func @step
// R3: comm.sparse_allreduce %arg0 {{.*}}name = "zipf"{{.*}}union_density = 0.025604512509375028 : f64}
//
// One rank sends nothing: dense costs nothing and wins the tie.
// ONE-LABEL: func.func @step
// ONE-NOT: comm.sparse_allreduce
// ONE-COUNT-3: comm.allreduce
//
// HASH-LABEL: func.func @step
// HASH-COUNT-3: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<hash>
// ALLGATHER-LABEL: func.func @step
// ALLGATHER-COUNT-3: comm.sparse_allreduce {{.*}}exchange = #comm.exchange<allgather>
// DENSE-LABEL: func.func @step
// DENSE-NOT: comm.sparse_allreduce
// DENSE-COUNT-3: comm.allreduce
func.func @step(%g: tensor<100000x64xf32>, %s: tensor<4096x64xf32>)
    -> (tensor<100000x64xf32>, tensor<100000x64xf32>, tensor<4096x64xf32>) {
  %zipf = comm.allreduce %g {comm.rows_touched = array<f64: 0.01, 0.018, 0.031, 0.05, 0.08>, name = "zipf", reduce = #comm.reduce<avg>}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  %uniform = comm.allreduce %g {comm.rows_touched = array<f64: 0.01, 0.0199, 0.0394, 0.0773, 0.1486>, name = "uniform", reduce = #comm.reduce<avg>}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  %busy = comm.allreduce %s {comm.rows_touched = array<f64: 0.6>, name = "busy", reduce = #comm.reduce<avg>}
      : tensor<4096x64xf32> -> tensor<4096x64xf32>
  return %zipf, %uniform, %busy
      : tensor<100000x64xf32>, tensor<100000x64xf32>, tensor<4096x64xf32>
}

// -----

// Left alone: no profile figures, a wire type, a max reduction, buffers.
// R16-LABEL: func.func @left_alone
// R16-NOT: comm.sparse_allreduce
// HASH-LABEL: func.func @left_alone
// HASH-NOT: comm.sparse_allreduce
func.func @left_alone(%g: tensor<100000x64xf32>, %b: memref<100000x64xf32>)
    -> (tensor<100000x64xf32>, tensor<100000x64xf32>, tensor<100000x64xf32>) {
  %plain = comm.allreduce %g {name = "plain"}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  %narrow = comm.allreduce %g {comm.rows_touched = array<f64: 0.01>, name = "narrow", wire = f16}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  %max = comm.allreduce %g {comm.rows_touched = array<f64: 0.01>, name = "max", reduce = #comm.reduce<max>}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  comm.allreduce %b {comm.rows_touched = array<f64: 0.01>, name = "buffer"}
      : memref<100000x64xf32>
  return %plain, %narrow, %max
      : tensor<100000x64xf32>, tensor<100000x64xf32>, tensor<100000x64xf32>
}

// -----

// Over a process group the union is read at the group's rank count: the 4
// ranks of a row of the 4x4 grid touch 3.1% together, where all 16 would
// touch 8%; the op keeps its group.
// R16-LABEL: func.func @grouped
// HASH-LABEL: func.func @grouped
// R16: comm.sparse_allreduce %arg0 {{.*}}group = #comm.group<@grid, axes = [1]>, name = "zipf"{{.*}}select = #comm.select<rows>, union_density = 3.100000e-02 : f64}
shard.grid @grid(shape = 4x4)
func.func @grouped(%g: tensor<100000x64xf32>) -> tensor<100000x64xf32> {
  %0 = comm.allreduce %g {comm.rows_touched = array<f64: 0.01, 0.018, 0.031, 0.05, 0.08>, group = #comm.group<@grid, axes = [1]>, name = "zipf", reduce = #comm.reduce<avg>}
      : tensor<100000x64xf32> -> tensor<100000x64xf32>
  return %0 : tensor<100000x64xf32>
}
