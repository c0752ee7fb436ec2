// RUN: commopt-opt %s --comm-import-shard --comm-fuse-buckets --comm-schedule-overlap | FileCheck %s
// RUN: commopt-opt %s --comm-import-shard --comm-optimize | FileCheck %s --check-prefix=OPT

// A step partitioned with shard on a 2x4 grid: data parallel along axis 0,
// tensor parallel along axis 1. The gradients of the sharded layers are
// reduced over the data-parallel axis only (each column of the grid), those
// of the replicated layers over all ranks. After the import, fusion keeps
// the two kinds in separate buckets and overlap scheduling starts each
// bucket with its group.
shard.grid @grid(shape = 2x4)

// CHECK-LABEL: func.func @train_step
// CHECK: %[[FC:.*]]:2 = comm.compute() {{.*}} name = "fc"
// CHECK: %[[EMB:.*]]:2 = comm.compute() {{.*}} name = "embedding"
// CHECK-NEXT: %[[T0:.*]] = comm.start %[[FC]]#0, %[[EMB]]#0 {group = #comm.group<@grid, axes = [0]>, priority = 0 : i64} : tensor<256x64xf32>, tensor<512x64xf32>
// CHECK-NEXT: %[[T1:.*]] = comm.start %[[FC]]#1, %[[EMB]]#1 {channel = 1 : i64, priority = 0 : i64} : tensor<64xf32>, tensor<64xf32>
// CHECK-NEXT: %[[R0:.*]]:2 = comm.wait %[[T0]] : tensor<256x64xf32>, tensor<512x64xf32>
// CHECK-NEXT: %[[R1:.*]]:2 = comm.wait %[[T1]] : tensor<64xf32>, tensor<64xf32>
// CHECK-NEXT: return %[[R0]]#0, %[[R1]]#0, %[[R0]]#1, %[[R1]]#1
// CHECK-NOT: shard.all_reduce

// The cost-model pipeline (comm-optimize) keeps the groups apart as well,
// and here fuses nothing: the fc gradients are reduced during the
// embedding's 200 us, which a bucket with the embedding's would wait for.
// Each collective gets its algorithm on the ranks it runs on: the 2-rank
// columns the ring (the tree's latency, half its bandwidth term), the
// 256-byte biases over all 64 ranks the tree (latency-bound).
// OPT-LABEL: func.func @train_step
// OPT: comm.start %{{.*}}#0 {algorithm = #comm.algorithm<ring>, group = #comm.group<@grid, axes = [0]>, priority = 1 : i64} : tensor<256x64xf32>
// OPT-NEXT: comm.start %{{.*}}#1 {algorithm = #comm.algorithm<tree>, channel = 1 : i64, priority = 1 : i64} : tensor<64xf32>
// OPT: comm.start %{{.*}}#0 {algorithm = #comm.algorithm<ring>, channel = 1 : i64, group = #comm.group<@grid, axes = [0]>, priority = 0 : i64} : tensor<512x64xf32>
// OPT-NEXT: comm.start %{{.*}}#1 {algorithm = #comm.algorithm<tree>, priority = 0 : i64} : tensor<64xf32>
// OPT-NOT: shard.all_reduce
func.func @train_step() -> (tensor<256x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64xf32>) {
  %fc:2 = comm.compute () {cost_us = 100.0, layer = 1, name = "fc", phase = #comm.phase<backward>}
      : () -> (tensor<256x64xf32>, tensor<64xf32>)
  %0 = shard.all_reduce %fc#0 on @grid grid_axes = [0] reduction = sum : tensor<256x64xf32> -> tensor<256x64xf32>
  %1 = shard.all_reduce %fc#1 on @grid grid_axes = [0, 1] reduction = sum : tensor<64xf32> -> tensor<64xf32>
  %emb:2 = comm.compute () {cost_us = 200.0, layer = 0, name = "embedding", phase = #comm.phase<backward>}
      : () -> (tensor<512x64xf32>, tensor<64xf32>)
  %2 = shard.all_reduce %emb#0 on @grid grid_axes = [0] reduction = sum : tensor<512x64xf32> -> tensor<512x64xf32>
  %3 = shard.all_reduce %emb#1 on @grid grid_axes = [1, 0] reduction = sum : tensor<64xf32> -> tensor<64xf32>
  return %0, %1, %2, %3 : tensor<256x64xf32>, tensor<64xf32>, tensor<512x64xf32>, tensor<64xf32>
}
