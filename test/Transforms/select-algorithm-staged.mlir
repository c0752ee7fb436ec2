// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/latency-bound-4-mpi.json" | FileCheck %s --check-prefix=HOST
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/latency-bound-4-mpi-staged.json" | FileCheck %s --check-prefix=STAGED
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/latency-bound-4-mpi-staged.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RING
// RUN: commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/latency-bound-4-mpi.json" --comm-estimate="cluster=%S/Inputs/latency-bound-4-mpi-staged.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TREE
// RUN: not commopt-opt %s --comm-select-algorithm="cluster=%S/Inputs/bad-cluster-staging.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// Device buffers staged through host memory by the MPI backend change
// which algorithm is fastest. A 2 MB allreduce over 4 ranks at 100 us a
// message and 10 GB/s (1e-4 us/B):
//   host buffers:  ring 6 a + 2 * 3/4 n b = 600 + 300 = 900
//                  tree 4 a + 2 n b       = 400 + 400 = 800   (picked)
// Staged at 10 GB/s, 5 us a copy or kernel (docs/CostModel.md, 2.8): the
// tree copies the buffer out and back whole, 2 * (5 + 200) = 410, 1210 in
// all; the staged ring's queue (copies out of n and in of 2 * 3/4 n, 500
// us, and 4 + 6 + 3 = 13 copies and reductions of one piece each, 65 us)
// hides behind its link's 900 us but for the first copy out and the last
// copy in of a 500000-byte piece, 2 * (5 + 50) = 110: 1010 (picked).

// HOST: comm.allreduce {{.*}}{algorithm = #comm.algorithm<tree>, name = "grads"}
// STAGED: comm.allreduce {{.*}}{algorithm = #comm.algorithm<ring>, name = "grads"}
// RING: grads         2000000        0           0.000        1010.000
// TREE: grads         2000000        0           0.000        1210.000

// Staging with the NCCL backend, which reads device memory itself, is a
// mistake the description's reader names.
// BAD: error: comm-select-algorithm: cluster '{{.*}}bad-cluster-staging.json': {{.*}}: invalid cluster description: device buffers are staged by the MPI backend only: set "backend": "mpi" at cluster.staging
func.func @bucket(%g: tensor<500000xf32>) -> tensor<500000xf32> {
  %0 = comm.allreduce %g {name = "grads"}
      : tensor<500000xf32> -> tensor<500000xf32>
  return %0 : tensor<500000xf32>
}
