// RUN: commopt-opt %s -split-input-file --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/slow-device.json report=none" | FileCheck %s
// RUN: commopt-opt %s -split-input-file --comm-estimate="cluster=%S/Inputs/flat-4-mpi.json device=%S/Inputs/slow-device.json report=none" | FileCheck %s --check-prefix=MPI
// RUN: not commopt-opt %s -split-input-file -o /dev/null --comm-estimate="cluster=%S/Inputs/bad-cluster-backend.json" 2>&1 | FileCheck %s --check-prefix=BAD

// The rows exchange's local work, at the 6144 B/us of slow-device.json,
// for 1000 rows of 16 f32 (64,000 B), a rank touching 10 rows and the 4
// ranks 40 (union_density), by the hash exchange:
//  - the gradient as a dense buffer: the scan for touched rows and the
//    zeroed result (2 x 64,000 B), the 10 rows copied (1,280 B), the 40
//    received added in (7,680 B): 136,960 B;
//  - given by its rows (comm.coo_gradient, commrt_rows_allreduce): the
//    runtime's passes over rows of 64 B: the rank's t = 10 rows added up,
//    bucketed by owner, packed and unpacked by their owners (2 t each) and
//    added up there (3 t); the owners' sums packed (2 x 40 / 4), all 40
//    unpacked, added into pairs and copied out (2 x 40 each): 370 rows,
//    23,680 B; and 16 B of the index table for each row a pass adds (the
//    10 twice, the 40 sums): 960 B: 24,640 B.
// The exchange's messages are the same on flat-4 (1 us, 1e-3 us/B): the
// total count (a ring allreduce of 8 B: 6 us + 0.012), the owners' counts
// (16 B, 3 + 0.012), the 10 rows as records of an 8-byte index and 64 B by
// all-to-all (720 B, 3 + 0.54), and the 40 reduced rows gathered (counts,
// then 2,880 B of records: 6 + 0.024 + 2.16): 20.748 us. So 20.748 + 22.292 and 20.748 + 4.010.
//
// On MPI's own collectives (flat-4-mpi.json, "backend": "mpi"), the count
// is reduced on a binomial tree (2 lg 4 = 4 messages: 4 us + 0.032) and
// every all-to-all and allgather posts its messages at once, paying the
// latency once: 4.032 + (1 + 0.012) + (1 + 0.54) + (2 + 0.024 + 2.16) =
// 10.768 us. So 10.768 + 22.292 and 10.768 + 4.010.
// MPI-LABEL: func.func @dense_buffer
// MPI: comm.sparse_allreduce {{.*}}comm.end_us = 33.05966{{[0-9]*}} : f64
// MPI-LABEL: func.func @coo
// MPI: comm.sparse_allreduce {{.*}}comm.end_us = 14.77841{{[0-9]*}} : f64
//
// BAD: error: comm-estimate: option 'cluster': {{.*}}bad-cluster-backend.json: invalid cluster description: expected "nccl" or "mpi" at cluster.backend

// CHECK-LABEL: func.func @dense_buffer
// CHECK: comm.sparse_allreduce {{.*}}comm.end_us = 43.03966{{[0-9]*}} : f64
func.func @dense_buffer(%g: tensor<1000x16xf32>) -> tensor<1000x16xf32> {
  %0 = comm.sparse_allreduce %g {density = 0.01, select = #comm.select<rows>,
      exchange = #comm.exchange<hash>, union_density = 0.04}
      : tensor<1000x16xf32> -> tensor<1000x16xf32>
  return %0 : tensor<1000x16xf32>
}

// -----

// CHECK-LABEL: func.func @coo
// CHECK: comm.sparse_allreduce {{.*}}comm.end_us = 24.75841{{[0-9]*}} : f64
func.func @coo(%g: tensor<1000x16xf32>) -> tensor<1000x16xf32> {
  %0 = comm.sparse_allreduce %g {comm.coo_gradient, density = 0.01,
      select = #comm.select<rows>, exchange = #comm.exchange<hash>,
      union_density = 0.04}
      : tensor<1000x16xf32> -> tensor<1000x16xf32>
  return %0 : tensor<1000x16xf32>
}
