//===- Sparse.h - Sparse allreduce with residual over MPI -------*- C++ -*-===//
//
// The selection and exchange schemes of commrt_sparse_allreduce (see
// commrt.h), on the host over an MPI communicator. The selections, chunk
// norms, chunk choice and hash bucketing are exposed as the reference of
// the NCCL backend's device path, which shares the last two.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_SPARSE_H
#define COMMRT_SPARSE_H

#include "Trace.h"
#include "commrt/commrt.h"

#include <mpi.h>

#include <vector>

namespace commrt {

/// The validated arguments of a sparse allreduce: `count` > 0, `density` in
/// (0, 1], `select` and `exchange` a valid pairing, `reduce` SUM or AVG and
/// `chunkElements` > 0 for chunk selection; for rows selection,
/// `chunkElements` is the row length (dividing `count`) and `residual` is
/// not used (it may be null).
struct SparseArguments {
  float *grad;
  float *residual;
  int64_t count;
  double density;
  commrt_select select;
  commrt_exchange exchange;
  commrt_reduce reduce;
  int64_t chunkElements;
  /// What its trace events say of it.
  TraceContext trace = {};
};

/// The k entries of `acc` (`count` of them, k in 1..count) of largest
/// magnitude, the lower index first among equal magnitudes, in index order.
std::vector<int64_t> selectTopk(const float *acc, int64_t count, int64_t k);

/// The entries of `acc` whose magnitude reaches the threshold of the `k`
/// largest that RadixSearch finds (see Selection.h), in index order.
std::vector<int64_t> selectThreshold(const float *acc, int64_t count,
                                     int64_t k);

/// The squared norms, in double and in index order, of the chunks of
/// `chunkElements` consecutive entries of `acc` (the last one possibly
/// shorter).
std::vector<double> chunkNorms(const float *acc, int64_t count,
                               int64_t chunkElements);

/// The `picked` (1..norms.size()) chunks of largest `norms`, the lower index
/// first among equal norms, in index order: rank 0's choice. A NaN norm
/// counts as the largest (see the definition).
std::vector<int64_t> pickChunks(const std::vector<double> &norms,
                                int64_t picked);

/// Buckets the `count` pairs (`indices`, `values`, `width` values per index)
/// by their owner among `size` ranks (hashOwner), in rank order and index
/// order within a bucket, into `outIndices` and `outValues` (`count` and
/// `count * width` entries); returns the size of each bucket.
std::vector<int64_t> bucketByOwner(const int64_t *indices, const float *values,
                                   int64_t count, int64_t width, int size,
                                   int64_t *outIndices, float *outValues);

/// The rows, in order, of the `rows` x `rowElements` row-major `grad` that
/// hold an entry other than zero (NaN included): what the lossless rows
/// exchange sends.
std::vector<int64_t> nonzeroRows(const float *grad, int64_t rows,
                                 int64_t rowElements);

/// The validated arguments of commrt_rows_allreduce: `count` >= 0 indices
/// in [0, `rows`), `rowElements` > 0, `exchange` ALLGATHER or HASH,
/// `reduce` SUM or AVG.
struct RowsArguments {
  const int64_t *indices;
  const float *values;
  int64_t count;
  int64_t rows;
  int64_t rowElements;
  commrt_exchange exchange;
  commrt_reduce reduce;
  TraceContext trace = {};
};

/// Reduced rows, in ascending index order: what commrt_rows_allreduce
/// hands over.
struct ReducedRows {
  std::vector<int64_t> indices;
  std::vector<float> values;
};

/// Runs commrt_rows_allreduce's exchange of `args` over `comm` into
/// `result`, collectively. Failures set the last error without naming the
/// entry point.
commrt_status rowsAllreduce(const RowsArguments &args, MPI_Comm comm,
                            ReducedRows &result);

/// Runs the sparse allreduce `args` over `comm`, collectively. Failures set
/// the last error without naming the entry point.
commrt_status sparseAllreduce(const SparseArguments &args, MPI_Comm comm);

} // namespace commrt

#endif // COMMRT_SPARSE_H
