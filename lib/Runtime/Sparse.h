//===- Sparse.h - Sparse allreduce with residual over MPI -------*- C++ -*-===//
//
// The selection and exchange schemes of commrt_sparse_allreduce (see
// commrt.h), on the host over an MPI communicator.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_SPARSE_H
#define COMMRT_SPARSE_H

#include "commrt/commrt.h"

#include <mpi.h>

namespace commrt {

/// The validated arguments of a sparse allreduce: `count` > 0, `density` in
/// (0, 1], `select` and `exchange` a valid pairing, `reduce` SUM or AVG and
/// `chunkElements` > 0 for chunk selection.
struct SparseArguments {
  float *grad;
  float *residual;
  int64_t count;
  double density;
  commrt_select select;
  commrt_exchange exchange;
  commrt_reduce reduce;
  int64_t chunkElements;
};

/// Runs the sparse allreduce `args` over `comm`, collectively. Failures set
/// the last error without naming the entry point.
commrt_status sparseAllreduce(const SparseArguments &args, MPI_Comm comm);

} // namespace commrt

#endif // COMMRT_SPARSE_H
