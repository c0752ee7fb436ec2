//===- Backend.h - Runtime backend interface and error helpers --*- C++ -*-===//

#ifndef COMMRT_BACKEND_H
#define COMMRT_BACKEND_H

#include "Sparse.h"
#include "commrt/commrt.h"

#include <mpi.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace commrt {

/// Records `message` as this thread's last error and returns `status`.
commrt_status setLastError(commrt_status status, std::string message);

/// Records the concatenation of `parts` as this thread's last error and
/// returns `status`.
template <typename... Parts>
commrt_status fail(commrt_status status, const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return setLastError(status, os.str());
}

/// Returns the status of `expr` from the enclosing function when it is a
/// failure; the error helpers above have set the last error.
#define COMMRT_TRY(expr)                                                       \
  do {                                                                         \
    if (commrt_status commrtTryStatus = (expr))                                \
      return commrtTryStatus;                                                  \
  } while (false)

/// Reports the MPI error code `error` returned by `call` as a backend error.
commrt_status failMpi(const char *call, int error);

/// How many cross-rank consistency checks this process ran (for the tests).
int64_t consistencyChecksRun();

/// What a plan's collective does with its buffers.
enum class PlanKind {
  /// Reduces them in place (commrt_fused_allreduce).
  Allreduce,
  /// Reduces their concatenation and leaves this rank's shard of it in
  /// `shard` (commrt_reduce_scatter).
  ReduceScatter,
  /// Fills their concatenation with every rank's `shard`
  /// (commrt_all_gather).
  AllGather,
};

/// A validated allreduce: `buffers[i]` holds `counts[i]` (> 0) elements of
/// `dtype`, packed with `prescale` into the wire type `wire` (a 16-bit
/// commrt_dtype narrower than `dtype`, or COMMRT_WIRE_NONE), reduced with one
/// collective and unpacked, as commrt_fused_allreduce describes; or, by its
/// `kind`, a reduce-scatter or all-gather of the buffers' concatenation.
struct Plan {
  PlanKind kind = PlanKind::Allreduce;
  /// A sharded plan's shard: ceil(total / ranks) elements of `dtype`
  /// (RingAllreduce.h, shardOf).
  void *shard = nullptr;
  std::vector<void *> buffers;
  std::vector<int64_t> counts;
  /// The sum of `counts`.
  int64_t total = 0;
  commrt_dtype dtype = COMMRT_F32;
  commrt_reduce reduce = COMMRT_SUM;
  int32_t wire = COMMRT_WIRE_NONE;
  float prescale = 1.0f;
  /// How the plan is reduced; DEFAULT follows the backend's configuration.
  commrt_algorithm algorithm = COMMRT_ALGORITHM_DEFAULT;
  /// The backend that carries it (commrt.h, COMMRT_TRANSPORT_SHIFT); AUTO
  /// is the backend in use.
  commrt_backend transport = COMMRT_BACKEND_AUTO;
  /// A mixed-wire plan (commrt_mixed_allreduce): one flag per buffer, set
  /// where the buffer travels in `wire` (multiplied by `prescale`), clear
  /// where it travels in `dtype` itself. Empty: every buffer travels in
  /// `wire` (which may be COMMRT_WIRE_NONE). A mixed plan has buffers of
  /// both kinds.
  std::vector<uint8_t> narrowed;
  /// What its trace events say of it (set where it is called or started).
  TraceContext trace;

  /// Whether some buffers travel in `wire` and others in `dtype`.
  bool isMixed() const { return !narrowed.empty(); }

  /// Whether the plan reduces its one buffer in place, with nothing to pack.
  bool inPlace() const {
    return kind == PlanKind::Allreduce && buffers.size() == 1 &&
           wire == COMMRT_WIRE_NONE && prescale == 1.0f && !isMixed();
  }

  /// The plan of the buffers whose flag in `narrowed` is `narrow`, with the
  /// reduction of this one: the narrowed ones in `wire` with `prescale`, the
  /// others in `dtype` unscaled. Only for a mixed plan.
  Plan part(bool narrow) const {
    Plan made;
    made.dtype = dtype;
    made.reduce = reduce;
    made.algorithm = algorithm;
    made.trace = trace;
    made.wire = narrow ? wire : COMMRT_WIRE_NONE;
    made.prescale = narrow ? prescale : 1.0f;
    for (size_t i = 0; i < buffers.size(); ++i)
      if (static_cast<bool>(narrowed[i]) == narrow) {
        made.buffers.push_back(buffers[i]);
        made.counts.push_back(counts[i]);
        made.total += counts[i];
      }
    return made;
  }
};

/// A collective started on a channel.
class Operation {
public:
  virtual ~Operation() = default;

  /// Sets `done` to whether the collective has finished, without blocking.
  virtual commrt_status test(bool &done) = 0;

  /// Blocks until the collective has finished and returns its status, with
  /// its message as the last error of the calling thread. May be called
  /// again; it then returns the same status.
  virtual commrt_status wait() = 0;

  /// Blocks until the collective has finished or `seconds` have passed, and
  /// sets `done` as test() does. By default it tests between sleeps that
  /// double up to 1 ms; operations that can be woken block instead.
  virtual commrt_status waitFor(double seconds, bool &done);
};

/// A collective that finished before its start returned, with `status`
/// (and the message of the last error at that time when it failed).
class CompletedOperation final : public Operation {
public:
  CompletedOperation(commrt_status status, std::string message)
      : status(status), message(std::move(message)) {}

  commrt_status test(bool &done) override {
    done = true;
    return COMMRT_SUCCESS;
  }
  commrt_status wait() override {
    if (status != COMMRT_SUCCESS)
      return setLastError(status, message);
    return COMMRT_SUCCESS;
  }

private:
  commrt_status status;
  std::string message;
};

/// A communication backend. Plans reaching it have been validated and have a
/// positive total count; channels are in range. Collectives run among the
/// ranks of a process group: 0 for all ranks (the communicator the backend
/// was created over), or a group added with addGroup. Failures return a
/// status and set the last error without naming the entry point; the caller
/// prefixes it. Its destructor completes the collectives in flight.
class Backend {
public:
  virtual ~Backend() = default;

  /// The commrt_backend this object implements.
  virtual commrt_backend kind() const = 0;

  /// Adds the process group `group` (> 0, not added before): the ranks of
  /// `comm`, which MPI_Comm_split made of the backend's communicator with
  /// this rank's `color` and `key` and whose error handler returns errors.
  /// The backend makes the communicators the group's collectives run on (one
  /// per channel too); `comm` stays the caller's. Collective over all ranks.
  virtual commrt_status addGroup(int group, MPI_Comm comm, int color,
                                 int key) = 0;

  /// Runs `plan` among the ranks of `group` to completion.
  virtual commrt_status run(const Plan &plan, int group) = 0;

  /// Starts `plan` among the ranks of `group` on `channel` and sets
  /// `operation` to it. Each group has channels of its own.
  virtual commrt_status start(const Plan &plan, int group, int channel,
                              std::unique_ptr<Operation> &operation) = 0;

  /// Runs the sparse allreduce `args` (validated, count > 0) among the ranks
  /// of `group` to completion, as commrt_sparse_allreduce describes; blocking
  /// and collective over the group.
  virtual commrt_status sparse(const SparseArguments &args, int group) = 0;

  /// Starts the sparse allreduce `args` (validated, count > 0) among the
  /// ranks of `group` on `channel`, as commrt_sparse_allreduce_start
  /// describes, and sets `operation` to it.
  virtual commrt_status startSparse(const SparseArguments &args, int group,
                                    int channel,
                                    std::unique_ptr<Operation> &operation) = 0;

  /// Runs commrt_rows_allreduce's exchange of `args` (validated) among the
  /// ranks of `group` into `result`; blocking, collective over the group,
  /// host memory.
  virtual commrt_status rows(const RowsArguments &args, int group,
                             ReducedRows &result) = 0;

  /// Broadcasts the `count` (> 0) elements of `dtype` at `buffer` from rank
  /// `root` (in range) to every rank, in place, as commrt_broadcast
  /// describes; blocking and collective.
  virtual commrt_status broadcast(void *buffer, int64_t count,
                                  commrt_dtype dtype, int root) = 0;

  /// Gathers the `counts[r]` elements of `dtype` at each rank r's `send`
  /// into `recv` on every rank, rank after rank, as commrt_allgather
  /// describes (validated, counts adding up to more than 0); blocking and
  /// collective.
  virtual commrt_status allgather(const void *send, void *recv,
                                  const int64_t *counts,
                                  commrt_dtype dtype) = 0;
};

/// The error of a backend asked for a group it does not know (the runtime
/// passes only groups it added).
inline commrt_status failUnknownGroup(int group) {
  return fail(COMMRT_ERROR_INVALID_ARGUMENT, "group ", group,
              " is not a group of the backend in use");
}

/// How the MPI backend reduces, from COMMRT_ALLREDUCE.
enum class AllreduceAlgorithm {
  /// The ring from `ringMinBytes` on with more than two ranks, MPI_Allreduce
  /// below.
  Auto,
  /// Always MPI_Allreduce.
  Mpi,
  /// Always the ring, with more than one rank.
  Ring,
  /// Two levels where the ranks form several nodes of equal size, each with
  /// more than one rank: a reduce-scatter within each node, an allreduce of
  /// each rank's piece among the ranks holding the same piece on the other
  /// nodes, an allgather within each node. MPI_Allreduce otherwise.
  Hierarchical,
};

/// The MPI backend's choice of allreduce algorithm; all ranks share it.
struct AllreduceConfig {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Auto;
  /// The least size in bytes reduced by the ring under Auto
  /// (COMMRT_RING_MIN_BYTES).
  int64_t ringMinBytes = int64_t(1) << 20;
  /// The ranks of a node under Hierarchical: 0 for those sharing memory
  /// (MPI_COMM_TYPE_SHARED), N for N consecutive ranks of the backend's
  /// communicator (COMMRT_RANKS_PER_NODE).
  int64_t ranksPerNode = 0;
};

/// How many allreduces of this process ran the hierarchical algorithm over
/// more than one node (for the tests).
int64_t hierarchicalAllreducesRun();

/// Creates the MPI backend with `channels` channels over `comm`, a
/// communicator whose error handler returns errors, reducing as `config`
/// says. Collective over `comm`.
commrt_status createMpiBackend(MPI_Comm comm, int channels,
                               const AllreduceConfig &config,
                               std::unique_ptr<Backend> &out);

/// Broadcasts the `count` (> 0) elements of `dtype` at the host buffer
/// `buffer` from rank `root` to every rank of `comm`, in place, with MPI_Bcast
/// in pieces of at most INT_MAX elements (MPI counts are ints); 16-bit
/// elements travel as `type16`, a committed 2-byte type. Blocking and
/// collective over `comm`. The MPI backend's broadcast, and the NCCL
/// backend's for host buffers.
commrt_status broadcastOverMpi(void *buffer, int64_t count, commrt_dtype dtype,
                               int root, MPI_Comm comm, MPI_Datatype type16);

/// Gathers the `counts[r]` elements of `dtype` at each rank r's host buffer
/// `send` into the host buffer `recv` on every rank of `comm`, rank after
/// rank, with MPI_Allgatherv (at most INT_MAX elements in all: MPI counts
/// and displacements are ints); 16-bit elements travel as `type16`.
/// Blocking and collective over `comm`. The MPI backend's allgather, and
/// the NCCL backend's for host buffers.
commrt_status allgatherOverMpi(const void *send, void *recv,
                               const int64_t *counts, commrt_dtype dtype,
                               MPI_Comm comm, MPI_Datatype type16);

#if COMMRT_HAVE_NCCL
/// Creates the NCCL backend with `channels` channels, bootstrapped over
/// `comm`, whose default allreduce is the hierarchical one where `config`
/// says so (NCCL's own otherwise). Fails with COMMRT_ERROR_UNAVAILABLE on
/// every rank when any rank sees no CUDA device. Collective over `comm`.
commrt_status createNcclBackend(MPI_Comm comm, int channels,
                                const AllreduceConfig &config,
                                std::unique_ptr<Backend> &out);
#endif

} // namespace commrt

#endif // COMMRT_BACKEND_H
