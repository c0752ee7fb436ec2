//===- Validation.h - Checks of the entry points' arguments -----*- C++ -*-===//
//
// The layer between the C ABI (Runtime.cpp) and the algorithms: every check
// of a caller's arguments and settings, each failing with
// COMMRT_ERROR_INVALID_ARGUMENT and a message naming what is wrong, and the
// consistency checks that make every rank agree on a collective's arguments
// before the backend runs it.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_VALIDATION_H
#define COMMRT_VALIDATION_H

#include "Backend.h"

#include <cstdint>
#include <unordered_set>
#include <vector>

namespace commrt {

//===----------------------------------------------------------------------===//
// Settings from the environment
//===----------------------------------------------------------------------===//

/// The consistency checks COMMRT_CHECK asks for: "0" none, "1" every call,
/// "first" (the default) the first call of each distinct collective; -1 for
/// another value, which the first collective reports.
int checksFromEnvironment();

/// Resolves AUTO through the COMMRT_BACKEND environment variable.
commrt_status backendFromEnvironment(commrt_backend &backend);

/// Reads the number of channels from COMMRT_CHANNELS.
commrt_status channelsFromEnvironment(int &channels);

/// Reads the MPI backend's allreduce algorithm from COMMRT_ALLREDUCE,
/// COMMRT_RING_MIN_BYTES and COMMRT_RANKS_PER_NODE.
commrt_status allreduceFromEnvironment(AllreduceConfig &config);

/// Reads the environment variable `name`, when set, as a finite number
/// >= 0 into `value`; fails naming the variable, its text and `expected`
/// (what it should be) otherwise.
commrt_status nonNegativeFromEnvironment(const char *name, double &value,
                                         const char *expected);

/// Reads the number of channels and the allreduce algorithm from the
/// environment (see above); fails as well where COMMRT_CHECK gave `checks`
/// no valid value (-1).
commrt_status settingsFromEnvironment(int checks, int &channels,
                                      AllreduceConfig &allreduce);

//===----------------------------------------------------------------------===//
// A collective's arguments
//===----------------------------------------------------------------------===//

/// Fails unless `buffer` and `count` describe a buffer of the commrt_dtype
/// `dtype`.
commrt_status checkTypedBuffer(const void *buffer, int64_t count,
                               int32_t dtype);

/// Fails unless the argument `name`, `value`, is one of the values
/// `first`..`last` of the enum `type`.
commrt_status checkEnum(const char *name, int32_t value, const char *type,
                        int32_t first, int32_t last);

/// An argument of a collective that every rank must pass alike.
struct SharedArgument {
  /// How a disagreement on an argument is reported.
  enum class Show {
    /// The least and the greatest value.
    Range,
    /// Two of the values; `value` holds the bits of a float.
    FloatValues,
    /// Nothing: `value` is a digest of several values.
    Nothing,
  };

  const char *name;
  int64_t value;
  Show show = Show::Range;
};

/// A collective's arguments as one rank checked them: the outcome, and the
/// arguments every rank must pass alike, which the ranks compare whatever
/// the outcome (see agree).
struct Checked {
  commrt_status status;
  std::vector<SharedArgument> shared;
};

/// Checks the arguments of an allreduce of one buffer (commrt_allreduce).
Checked checkAllreduce(const void *buffer, int64_t count, int32_t dtype,
                       int32_t reduce);

/// Checks the arguments of an allreduce of one f32 buffer through the 16-bit
/// `wire` type (commrt_allreduce_wire).
Checked checkAllreduceWire(const float *buffer, int64_t count, int32_t wire,
                           int32_t reduce, float prescale);

/// Checks the arguments of a broadcast over `comm` (commrt_broadcast).
Checked checkBroadcast(const void *buffer, int64_t count, int32_t dtype,
                       int32_t root, MPI_Comm comm);

/// Checks the arguments of an allgather over `comm` (commrt_allgather) and
/// sets `total` to the elements every rank receives.
Checked checkAllgather(const void *send, const void *recv,
                       const int64_t *counts, int32_t dtype, MPI_Comm comm,
                       int64_t &total);

/// Checks the arguments of a fused allreduce (commrt_fused_allreduce) and
/// fills `plan` with its nonempty buffers.
Checked checkFusedAllreduce(void *const *buffers, const int64_t *counts,
                            int32_t nbuffers, int32_t dtype, int32_t reduce,
                            int32_t wire, float prescale, Plan &plan);

/// Checks the arguments of a reduce-scatter or all-gather (`kind`) of the
/// concatenation of `buffers` with this rank's `shard` of `shardCount`
/// elements on `ranks` ranks (commrt_reduce_scatter, commrt_all_gather) and
/// fills `plan`.
Checked checkShardedCollective(PlanKind kind, void *const *buffers,
                               const int64_t *counts, int32_t nbuffers,
                               const void *shard, int64_t shardCount, int ranks,
                               int32_t dtype, int32_t reduce, int32_t wire,
                               float prescale, Plan &plan);

/// Checks the arguments of a mixed-wire allreduce (commrt_mixed_allreduce)
/// and fills `plan` with its nonempty buffers; a plan whose nonempty buffers
/// all travel alike comes out uniform (Plan::narrowed empty).
Checked checkMixedAllreduce(void *const *buffers, const int64_t *counts,
                            const int32_t *narrowed, int32_t nbuffers,
                            int32_t dtype, int32_t reduce, int32_t wire,
                            float prescale, Plan &plan);

/// Checks the arguments of commrt_rows_allreduce, its indices included.
Checked checkRowsAllreduce(const int64_t *indices, const float *values,
                           int64_t count, int64_t rows, int64_t rowElements,
                           int32_t exchange, int32_t reduce,
                           const commrt_rows *result);

/// Checks the arguments of a sparse allreduce (commrt_sparse_allreduce).
Checked checkSparseAllreduce(const float *grad, const float *residual,
                             int64_t count, double density, int32_t select,
                             int32_t exchange, int32_t reduce,
                             int64_t chunkElements);

/// Adds to the `checked` arguments of a collective those of its start: the
/// `channel` it runs on (one of `channels`) and `handle`, where the start
/// stores its handle.
Checked checkStart(Checked checked, int32_t channel, int channels,
                   const int64_t *handle);

/// Checks the arguments of a process group split (commrt_group_split) that
/// is not cached: `color` must be >= 0 and `group`, where the handle goes,
/// not null. Every rank must pass the same `id`.
Checked checkGroupSplit(int64_t id, int32_t color, const int32_t *group);

/// Adds to the `checked` arguments of a collective among the ranks of the
/// process group `group` (> 0) the group itself: its ranks agree on it, and
/// a collective of one group is not that of another (nor of all ranks) for
/// COMMRT_CHECKS_FIRST_OF_EACH.
Checked inGroup(Checked checked, int32_t group);

/// Adds to the `checked` arguments of a fused allreduce its `algorithm`,
/// which must be a commrt_algorithm, and sets it in `plan`.
Checked withAlgorithm(Checked checked, int32_t algorithm, Plan &plan);

/// The plan of an allreduce of one buffer, whose arguments are valid.
Plan singlePlan(void *buffer, int64_t count, int32_t dtype, int32_t reduce,
                int32_t wire, float prescale);

//===----------------------------------------------------------------------===//
// Agreement across ranks
//===----------------------------------------------------------------------===//

/// The state of the consistency checks, which compare the arguments of
/// collectives across ranks.
struct ConsistencyChecks {
  /// Which collectives first compare their arguments across ranks: a
  /// commrt_checks, or -1 when COMMRT_CHECK is invalid.
  int mode = checksFromEnvironment();
  /// The collectives checked so far, by digest of their shared arguments
  /// (COMMRT_CHECKS_FIRST_OF_EACH).
  std::unordered_set<uint64_t> checked;
  /// How many consistency checks ran, for the tests.
  int64_t run = 0;
};

/// Makes all ranks of `comm` agree on argument validation: every rank fails
/// with INVALID_ARGUMENT when any rank's `localStatus` is a failure, and with
/// MISMATCH when the ranks' `arguments` differ. Collective over `comm`.
commrt_status agreeAlways(MPI_Comm comm, ConsistencyChecks &checks,
                          commrt_status localStatus,
                          const std::vector<SharedArgument> &arguments);

/// Runs agreeAlways where `checks` ask for it (every call, or the first call
/// of each distinct collective), and otherwise returns `localStatus`. Ranks
/// of a correct program make the same calls, so they decide alike; where
/// they disagree, the first call of the disagreeing collective is checked on
/// every rank unless some rank has seen its arguments before.
commrt_status agree(MPI_Comm comm, ConsistencyChecks &checks,
                    commrt_status localStatus,
                    const std::vector<SharedArgument> &arguments);

} // namespace commrt

#endif // COMMRT_VALIDATION_H
