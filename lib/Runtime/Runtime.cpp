//===- Runtime.cpp - The commrt C ABI: lifetime and dispatch --------------===//
//
// The top layer of commrt: every entry point of commrt.h runs as a call the
// watchdog knows, has its arguments checked (Validation.h) and agreed on by
// every rank, and dispatches to the backend in use (Backend.h). The runtime's
// lifetime (MPI, the backend, the collectives in flight) lives here too.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "ComputeEmulation.h"
#include "MpiWait.h"
#include "RingAllreduce.h"
#include "Sparse.h"
#include "Trace.h"
#include "Validation.h"
#include "Watchdog.h"
#include "WireFormat.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

using namespace commrt;

commrt_status commrt::Operation::waitFor(double seconds, bool &done) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(seconds));
  std::chrono::microseconds pause(10);
  while (true) {
    COMMRT_TRY(test(done));
    if (done || Clock::now() >= deadline)
      return COMMRT_SUCCESS;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(pause, deadline - Clock::now()));
    pause = std::min(2 * pause, std::chrono::microseconds(1000));
  }
}

namespace {

/// The message of the last failure on this thread.
thread_local std::string lastError;

/// A collective started and not waited yet.
struct InFlight {
  std::unique_ptr<Operation> operation;
  /// Its number among the rank's collectives (see Watchdog.h).
  int64_t collective = 0;
};

/// A process group made by commrt_group_split.
struct Group {
  /// The split's id, and this rank's color and key in it.
  int64_t id = 0;
  int32_t color = 0;
  int32_t key = 0;
  /// The split of the runtime's communicator; it returns errors.
  MPI_Comm comm = MPI_COMM_NULL;
  /// This rank's rank in the group, and the group's size.
  int rank = 0;
  int size = 0;
};

/// The process-wide runtime state.
struct Runtime {
  /// Set by commrt_finalize: MPI cannot be initialised a second time. The
  /// exit-time shutdown may set it while another thread calls in.
  std::atomic<bool> finalized{false};
  /// Whether the runtime called MPI_Init, and so owes MPI_Finalize.
  bool ownsMpi = false;
  /// The runtime's duplicate of MPI_COMM_WORLD; it returns errors.
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<Backend> backend;
  /// The other backend, created beside `backend` for the collectives whose
  /// transport names it (commrt.h, COMMRT_TRANSPORT_SHIFT); null until then.
  std::unique_ptr<Backend> beside;
  /// The number of channels; 0 until the first backend is created.
  int channels = 0;
  /// This rank's rank among the ranks of its node, and their number; set
  /// with `comm`.
  int localRank = -1;
  int localSize = 0;
  /// The MPI backend's allreduce algorithm, read with `channels`.
  AllreduceConfig allreduce;
  /// The collectives in flight, by handle.
  std::map<int64_t, InFlight> operations;
  /// The handle of the next start; 0 is never one.
  int64_t nextHandle = 1;
  /// The consistency checks of collectives' arguments across ranks.
  ConsistencyChecks checks;
  /// The process groups, by handle, and their handles by split id.
  std::map<int32_t, Group> groups;
  std::map<int64_t, int32_t> groupsById;
  /// The handle of the next group; 0 is all ranks. Every rank makes the same
  /// splits in the same order, so handles are the same on every rank.
  int32_t nextGroup = 1;
};

/// A collective with nothing to do, finished when started.
class Finished final : public Operation {
public:
  commrt_status test(bool &done) override {
    done = true;
    return COMMRT_SUCCESS;
  }
  commrt_status wait() override { return COMMRT_SUCCESS; }
};

/// The runtime state. Never destroyed: a program that initialised MPI itself
/// may have finalised it before static destructors run.
Runtime &runtime() {
  static Runtime &state = *new Runtime;
  return state;
}

/// Prefixes the last error with the entry point `function` when `status`
/// is a failure, and returns `status`.
commrt_status inFunction(const char *function, commrt_status status) {
  if (status != COMMRT_SUCCESS)
    lastError = std::string(function) + ": " + lastError;
  return status;
}

/// Fails once commrt_finalize has run.
commrt_status checkNotFinalized() {
  if (runtime().finalized)
    return fail(COMMRT_ERROR_NOT_INITIALIZED,
                "the runtime was finalised (commrt_finalize) and MPI "
                "cannot be re-initialised");
  return COMMRT_SUCCESS;
}

/// Runs `body`, the entry point `function`, as a call the watchdog knows
/// (Watchdog.h): `body` takes the call's CallGuard and returns its status,
/// which this prefixes with `function` on failure.
template <typename Body>
commrt_status inCall(const char *function, Body &&body) {
  CallGuard guard(function);
  auto run = [&]() -> commrt_status {
    COMMRT_TRY(checkNotFinalized());
    COMMRT_TRY(guard.admitted());
    return body(guard);
  };
  return inFunction(function, run());
}

/// Completes every collective in flight, as if waited, and forgets their
/// handles. Returns the first failure, naming its handle.
commrt_status completeAll(CallGuard &guard) {
  Runtime &rt = runtime();
  if (!rt.operations.empty())
    guard.waitOn(std::max_element(rt.operations.begin(), rt.operations.end(),
                                  [](const auto &a, const auto &b) {
                                    return a.second.collective <
                                           b.second.collective;
                                  })
                     ->second.collective);
  commrt_status first = COMMRT_SUCCESS;
  std::string message;
  for (auto &[handle, inFlight] : rt.operations) {
    commrt_status status = inFlight.operation->wait();
    if (status != COMMRT_SUCCESS && first == COMMRT_SUCCESS) {
      first = status;
      message = "the collective of handle " + std::to_string(handle) +
                " failed: " + lastError;
    }
  }
  rt.operations.clear();
  if (first != COMMRT_SUCCESS)
    return setLastError(first, std::move(message));
  return COMMRT_SUCCESS;
}

/// Completes the collectives in flight, releases the backend and the
/// communicator, exchanges end notices with the other ranks (Watchdog.h) and
/// finalises MPI if the runtime initialised it. Later calls fail with
/// NOT_INITIALIZED. `guard` is the shutdown's own call.
commrt_status shutdown(CallGuard &guard) {
  // A call still running on another thread cannot complete: abort.
  beginShutdown();
  Runtime &rt = runtime();
  rt.finalized = true;
  int mpiFinalized;
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized) {
    // The program finalised MPI itself; the handles died with it.
    rt.operations.clear();
    rt.groups.clear();
    rt.groupsById.clear();
    (void)rt.beside.release();
    (void)rt.backend.release();
    stopWatchdog();
    return COMMRT_SUCCESS;
  }
  commrt_status status = completeAll(guard);
  rt.beside.reset();
  rt.backend.reset();
  // The backend's communicators of groups were made from these.
  for (auto &[handle, group] : rt.groups)
    MPI_Comm_free(&group.comm);
  rt.groups.clear();
  rt.groupsById.clear();
  commrt_status ended = exchangeEndNotices(guard);
  if (status == COMMRT_SUCCESS)
    status = ended;
  if (rt.comm != MPI_COMM_NULL)
    MPI_Comm_free(&rt.comm);
  if (rt.ownsMpi)
    if (int error = MPI_Finalize())
      return failMpi("MPI_Finalize", error);
  return status;
}

/// Finalises a runtime that is still up when the process exits.
void shutdownAtExit() {
  if (runtime().finalized)
    return;
  CallGuard guard("the exit-time shutdown (exit() or the end of main)");
  shutdown(guard);
}

/// Initialises MPI unless the program or an earlier call did.
commrt_status ensureMpi() {
  COMMRT_TRY(checkNotFinalized());
  int flag;
  MPI_Finalized(&flag);
  if (flag)
    return fail(COMMRT_ERROR_NOT_INITIALIZED,
                "MPI was finalised by the program");
  MPI_Initialized(&flag);
  if (flag)
    // The program's MPI: no end notices, which MPI_Finalize could cut off.
    return startWatchdog(/*endNotices=*/false);
  preferEagerRingPieces();
  // Channels' threads call MPI while the caller does (see MpiBackend.cpp).
  int provided;
  if (int error =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided))
    return failMpi("MPI_Init_thread", error);
  runtime().ownsMpi = true;
  std::atexit(shutdownAtExit);
  return startWatchdog(/*endNotices=*/provided == MPI_THREAD_MULTIPLE);
}

/// Creates the NCCL backend, or says why there is none.
commrt_status createNccl(std::unique_ptr<Backend> &out) {
#if COMMRT_HAVE_NCCL
  return createNcclBackend(runtime().comm, runtime().channels,
                           runtime().allreduce, out);
#else
  (void)out;
  return fail(COMMRT_ERROR_UNAVAILABLE,
              "the NCCL backend was not built (no CUDA compiler or NCCL was "
              "found when commrt was configured)");
#endif
}

/// Creates the backend `kind` over the runtime's communicator, whose
/// settings are agreed, in a collective call of all ranks; AUTO is NCCL
/// where it can be created, MPI otherwise. It takes over the process
/// groups, in the order they were split. `out` is set only on success.
commrt_status createBackend(commrt_backend kind,
                            std::unique_ptr<Backend> &out) {
  Runtime &rt = runtime();
  std::unique_ptr<Backend> backend;
  if (kind == COMMRT_BACKEND_NCCL) {
    COMMRT_TRY(createNccl(backend));
  } else if (kind == COMMRT_BACKEND_AUTO) {
    // Fall back to MPI silently: keep the last error as it was.
    std::string previousError = lastError;
    if (createNccl(backend) != COMMRT_SUCCESS)
      lastError = std::move(previousError);
  }
  if (!backend)
    COMMRT_TRY(createMpiBackend(rt.comm, rt.channels, rt.allreduce, backend));
  for (auto &[handle, group] : rt.groups)
    COMMRT_TRY(backend->addGroup(handle, group.comm, group.color, group.key));
  out = std::move(backend);
  return COMMRT_SUCCESS;
}

/// Brings the runtime up with the backend `requested`, in the call `guard`.
/// AUTO keeps the backend in use, or picks one as commrt.h describes; another
/// backend replaces the one in use when it can be created.
commrt_status ensureBackend(commrt_backend requested, CallGuard &guard) {
  COMMRT_TRY(ensureMpi());
  Runtime &rt = runtime();
  if (rt.backend &&
      (requested == COMMRT_BACKEND_AUTO || rt.backend->kind() == requested))
    return COMMRT_SUCCESS;
  // The communicator and the agreement on the settings are every rank's
  // first collective.
  if (rt.comm == MPI_COMM_NULL || rt.channels == 0) {
    int64_t collective;
    COMMRT_TRY(guard.beginCollective(collective));
  }
  if (rt.comm == MPI_COMM_NULL) {
    if (int error = MPI_Comm_dup(MPI_COMM_WORLD, &rt.comm))
      return failMpi("MPI_Comm_dup", error);
    MPI_Comm_set_errhandler(rt.comm, MPI_ERRORS_RETURN);
    // Its dups (the channels') inherit how waits on it wait.
    COMMRT_TRY(recordTransport(rt.comm));
    COMMRT_TRY(findNodeRanks(rt.comm, rt.localRank, rt.localSize));
  }
  if (rt.channels == 0) {
    // Ranks that disagree would create different numbers of communicators.
    // Ranks that disagree on the allreduce algorithm would deadlock.
    // Ranks that disagree on the checks would pair a check with a
    // collective.
    int channels;
    AllreduceConfig allreduce;
    commrt_status status =
        settingsFromEnvironment(rt.checks.mode, channels, allreduce);
    COMMRT_TRY(agreeAlways(
        rt.comm, rt.checks, status,
        {{"COMMRT_CHANNELS", channels},
         {"COMMRT_ALLREDUCE", static_cast<int64_t>(allreduce.algorithm)},
         {"COMMRT_RING_MIN_BYTES", allreduce.ringMinBytes},
         {"COMMRT_RANKS_PER_NODE", allreduce.ranksPerNode},
         {"COMMRT_CHECK", rt.checks.mode}}));
    rt.channels = channels;
    rt.allreduce = allreduce;
  }
  if (requested == COMMRT_BACKEND_AUTO)
    COMMRT_TRY(backendFromEnvironment(requested));
  // The backend beside the one in use takes its place; the replaced one
  // stays beside it.
  if (rt.backend && rt.beside && rt.beside->kind() == requested) {
    std::swap(rt.backend, rt.beside);
    return COMMRT_SUCCESS;
  }

  std::unique_ptr<Backend> backend;
  COMMRT_TRY(createBackend(requested, backend));
  // The replaced backend completes its collectives in flight as it goes.
  rt.backend = std::move(backend);
  return COMMRT_SUCCESS;
}

/// Sets `out` to the backend that carries `plan` among the ranks of
/// `group`, once the runtime is up: the one in use, or the one beside it,
/// created where the collective is among all ranks.
commrt_status backendFor(const Plan &plan, int32_t group, Backend *&out) {
  Runtime &rt = runtime();
  out = rt.backend.get();
  if (plan.transport == COMMRT_BACKEND_AUTO ||
      plan.transport == rt.backend->kind())
    return COMMRT_SUCCESS;
  if (!rt.beside) {
    if (group != 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "the collective of group ",
                  group, " runs on transport ",
                  plan.transport == COMMRT_BACKEND_NCCL ? "NCCL" : "MPI",
                  ", which is not in use; create it among all ranks first "
                  "(commrt_use_transport)");
    COMMRT_TRY(createBackend(plan.transport, rt.beside));
  }
  out = rt.beside.get();
  return COMMRT_SUCCESS;
}

/// Runs the valid `plan` among the ranks of `group` to completion; a plan
/// with nothing to reduce is done at once.
commrt_status runPlan(Plan plan, int32_t group) {
  if (plan.total == 0)
    return COMMRT_SUCCESS;
  Backend *backend;
  COMMRT_TRY(backendFor(plan, group, backend));
  plan.trace = makeTraceContext(plan.total, plan.wire, /*channel=*/-1);
  return backend->run(plan, group);
}

/// Starts the valid `plan` among the ranks of `group`, the rank's collective
/// number `collective` (0 for a group's), on the valid `channel` and stores
/// its handle at `handle`.
commrt_status startPlan(Plan plan, int32_t group, int32_t channel,
                        int64_t collective, int64_t *handle) {
  Runtime &rt = runtime();
  std::unique_ptr<Operation> operation;
  plan.trace = makeTraceContext(plan.total, plan.wire, channel);
  if (plan.total == 0) {
    operation = std::make_unique<Finished>();
  } else {
    Backend *backend;
    COMMRT_TRY(backendFor(plan, group, backend));
    COMMRT_TRY(backend->start(plan, group, channel, operation));
  }
  *handle = rt.nextHandle++;
  rt.operations.emplace(*handle, InFlight{std::move(operation), collective});
  return COMMRT_SUCCESS;
}

/// The collective in flight with the handle `handle`, or null with the last
/// error set.
InFlight *findOperation(int64_t handle) {
  auto found = runtime().operations.find(handle);
  if (found != runtime().operations.end())
    return &found->second;
  fail(COMMRT_ERROR_INVALID_ARGUMENT, "handle ", handle,
       " is not in flight (it was never returned by a start, or was "
       "already waited)");
  return nullptr;
}

/// Runs `run`, the collective entry point `function`, as inCall does, once
/// the runtime is up and the call counted among the rank's collectives:
/// `run` takes the collective's number (Watchdog.h).
template <typename Run>
commrt_status inCollective(const char *function, Run &&run) {
  return inCall(function, [&](CallGuard &guard) {
    COMMRT_TRY(ensureBackend(COMMRT_BACKEND_AUTO, guard));
    int64_t collective;
    COMMRT_TRY(guard.beginCollective(collective));
    return run(collective);
  });
}

/// inCollective with checked arguments: `check` returns the Checked
/// arguments, on which every rank agrees (see agree) before `run` runs.
template <typename Check, typename Run>
commrt_status inCheckedCollective(const char *function, Check &&check,
                                  Run &&run) {
  return inCollective(function, [&](int64_t collective) {
    Checked checked = check();
    Runtime &rt = runtime();
    COMMRT_TRY(agree(rt.comm, rt.checks, checked.status, checked.shared));
    return run(collective);
  });
}

/// Sets `found` to the process group `group` (> 0), or fails naming it.
commrt_status findGroup(int32_t group, const Group *&found) {
  auto it = runtime().groups.find(group);
  if (it == runtime().groups.end())
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "group ", group,
                " is not a process group (0, all ranks, or a handle "
                "commrt_group_split returned)");
  found = &it->second;
  return COMMRT_SUCCESS;
}

/// inCheckedCollective among the ranks of the process group `group`: 0 runs
/// exactly inCheckedCollective. Another group's ranks agree on the
/// arguments and on the group over the group's communicator, and its
/// collectives are not numbered among the rank's (Watchdog.h counts the
/// collectives of all ranks; ranks of different groups run different
/// ones): `run` takes 0. An unknown group fails at once, without
/// communicating.
template <typename Check, typename Run>
commrt_status inGroupCollective(const char *function, int32_t group,
                                Check &&check, Run &&run) {
  if (group == 0)
    return inCheckedCollective(function, check, run);
  return inCall(function, [&](CallGuard &guard) {
    const Group *found;
    COMMRT_TRY(findGroup(group, found));
    COMMRT_TRY(ensureBackend(COMMRT_BACKEND_AUTO, guard));
    Checked checked = inGroup(check(), group);
    Runtime &rt = runtime();
    COMMRT_TRY(agree(found->comm, rt.checks, checked.status, checked.shared));
    return run(int64_t(0));
  });
}

/// Returns what `value` reads of the process group `group` (> 0) in the entry
/// point `function`; -1 for an unknown group.
template <typename Value>
int32_t queryGroup(const char *function, int32_t group, Value &&value) {
  int32_t result = -1;
  inCall(function, [&](CallGuard &) {
    const Group *found;
    COMMRT_TRY(findGroup(group, found));
    result = value(*found);
    return COMMRT_SUCCESS;
  });
  return result;
}

/// A fused allreduce among the ranks of `group`, as the entry point
/// `function`: `check` checks its arguments and fills the plan it is given.
template <typename Check>
commrt_status fusedAllreduce(const char *function, int32_t group,
                             int32_t algorithm, Check &&check) {
  Plan plan;
  return inGroupCollective(
      function, group,
      [&] { return withAlgorithm(check(plan), algorithm, plan); },
      [&](int64_t) { return runPlan(plan, group); });
}

/// The start of a fused allreduce among the ranks of `group` on `channel`,
/// as the entry point `function`: `check` checks its arguments and fills the
/// plan it is given.
template <typename Check>
commrt_status fusedAllreduceStart(const char *function, int32_t group,
                                  int32_t algorithm, int32_t channel,
                                  int64_t *handle, Check &&check) {
  if (handle)
    *handle = 0;
  Plan plan;
  return inGroupCollective(
      function, group,
      [&] {
        return checkStart(withAlgorithm(check(plan), algorithm, plan), channel,
                          runtime().channels, handle);
      },
      [&](int64_t collective) {
        return startPlan(plan, group, channel, collective, handle);
      });
}

/// The check of commrt_fused_allreduce's arguments, for fusedAllreduce.
auto fusedCheck(void *const *buffers, const int64_t *counts, int32_t nbuffers,
                int32_t dtype, int32_t reduce, int32_t wire, float prescale) {
  return [=](Plan &plan) {
    return checkFusedAllreduce(buffers, counts, nbuffers, dtype, reduce, wire,
                               prescale, plan);
  };
}

/// The check of commrt_mixed_allreduce's arguments, for fusedAllreduce.
auto mixedCheck(void *const *buffers, const int64_t *counts,
                const int32_t *narrowed, int32_t nbuffers, int32_t dtype,
                int32_t reduce, int32_t wire, float prescale) {
  return [=](Plan &plan) {
    return checkMixedAllreduce(buffers, counts, narrowed, nbuffers, dtype,
                               reduce, wire, prescale, plan);
  };
}

/// The check of a reduce-scatter's or all-gather's arguments (`kind`), for
/// fusedAllreduce, among the ranks of `group` (which exists when it runs).
auto shardedCheck(PlanKind kind, int32_t group, void *const *buffers,
                  const int64_t *counts, int32_t nbuffers, const void *shard,
                  int64_t shardCount, int32_t dtype, int32_t reduce,
                  int32_t wire, float prescale) {
  return [=](Plan &plan) {
    int ranks = 1;
    if (group == 0)
      MPI_Comm_size(runtime().comm, &ranks);
    else
      ranks = runtime().groups.at(group).size;
    return checkShardedCollective(kind, buffers, counts, nbuffers, shard,
                                  shardCount, ranks, dtype, reduce, wire,
                                  prescale, plan);
  };
}

/// commrt_sparse_allreduce among the ranks of `group`, as the entry point
/// `function`; with `handle`, its start on `channel` (the handle is stored
/// there).
commrt_status runSparseAllreduce(const char *function, int32_t group,
                                 float *grad, float *residual, int64_t count,
                                 double density, int32_t select,
                                 int32_t exchange, int32_t reduce,
                                 int64_t chunkElements,
                                 std::optional<int32_t> channel = std::nullopt,
                                 int64_t *handle = nullptr) {
  if (handle)
    *handle = 0;
  return inGroupCollective(
      function, group,
      [&] {
        Checked checked =
            checkSparseAllreduce(grad, residual, count, density, select,
                                 exchange, reduce, chunkElements);
        if (!channel)
          return checked;
        return checkStart(std::move(checked), *channel, runtime().channels,
                          handle);
      },
      [&](int64_t collective) -> commrt_status {
        SparseArguments args{grad,
                             residual,
                             count,
                             density,
                             static_cast<commrt_select>(select),
                             static_cast<commrt_exchange>(exchange),
                             static_cast<commrt_reduce>(reduce),
                             chunkElements,
                             makeTraceContext(count,
                                              COMMRT_TRACE_SPARSE + select,
                                              channel.value_or(-1))};
        Runtime &rt = runtime();
        if (!channel)
          return count == 0 ? COMMRT_SUCCESS : rt.backend->sparse(args, group);
        std::unique_ptr<Operation> operation;
        if (count == 0)
          operation = std::make_unique<Finished>();
        else
          COMMRT_TRY(rt.backend->startSparse(args, group, *channel, operation));
        *handle = rt.nextHandle++;
        rt.operations.emplace(*handle,
                              InFlight{std::move(operation), collective});
        return COMMRT_SUCCESS;
      });
}

/// Runs `query` (MPI_Comm_rank or MPI_Comm_size) on MPI_COMM_WORLD in the
/// entry point `function`, initialising MPI first; -1 on failure.
int32_t queryWorld(const char *function, int (*query)(MPI_Comm, int *)) {
  int value = -1;
  inCall(function, [&](CallGuard &) {
    COMMRT_TRY(ensureMpi());
    query(MPI_COMM_WORLD, &value);
    return COMMRT_SUCCESS;
  });
  return value;
}

/// Brings the runtime up in the entry point `function` and returns what
/// `value` reads of it; -1 on failure.
template <typename Value>
int32_t queryRuntime(const char *function, Value &&value) {
  if (inCall(function, [&](CallGuard &guard) {
        return ensureBackend(COMMRT_BACKEND_AUTO, guard);
      }) != COMMRT_SUCCESS)
    return -1;
  return value(runtime());
}
} // namespace

int64_t commrt::consistencyChecksRun() { return runtime().checks.run; }

commrt_status commrt::setLastError(commrt_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

commrt_status commrt::failMpi(const char *call, int error) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(error, text, &length);
  return fail(COMMRT_ERROR_BACKEND, call,
              " failed: ", std::string(text, length));
}

extern "C" {

int32_t commrt_init(void) {
  return inCall("commrt_init", [&](CallGuard &guard) {
    return ensureBackend(COMMRT_BACKEND_AUTO, guard);
  });
}

int32_t commrt_init_backend(int32_t backend) {
  return inCall("commrt_init_backend", [&](CallGuard &guard) {
    COMMRT_TRY(checkEnum("backend", backend, "commrt_backend",
                         COMMRT_BACKEND_AUTO, COMMRT_BACKEND_NCCL));
    return ensureBackend(static_cast<commrt_backend>(backend), guard);
  });
}

int32_t commrt_finalize(void) {
  return inCall("commrt_finalize",
                [&](CallGuard &guard) { return shutdown(guard); });
}

int32_t commrt_rank(void) { return queryWorld("commrt_rank", MPI_Comm_rank); }

int32_t commrt_size(void) { return queryWorld("commrt_size", MPI_Comm_size); }

int32_t commrt_expect_size(int64_t expected) {
  return inCall("commrt_expect_size", [&](CallGuard &) {
    COMMRT_TRY(ensureMpi());
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (expected == size)
      return COMMRT_SUCCESS;
    return fail(COMMRT_ERROR_MISMATCH,
                "the program was planned for " + std::to_string(expected) +
                    " ranks (its shard.grid), but the job has " +
                    std::to_string(size) + "; start it with mpirun -np " +
                    std::to_string(expected));
  });
}

int32_t commrt_backend_in_use(void) {
  return queryRuntime("commrt_backend_in_use",
                      [](Runtime &rt) { return rt.backend->kind(); });
}

int32_t commrt_use_transport(int32_t backend) {
  return inCall("commrt_use_transport", [&](CallGuard &guard) {
    COMMRT_TRY(checkEnum("backend", backend, "commrt_backend",
                         COMMRT_BACKEND_MPI, COMMRT_BACKEND_NCCL));
    COMMRT_TRY(ensureBackend(COMMRT_BACKEND_AUTO, guard));
    Runtime &rt = runtime();
    if (rt.backend->kind() == backend ||
        (rt.beside && rt.beside->kind() == backend))
      return COMMRT_SUCCESS;
    int64_t collective;
    COMMRT_TRY(guard.beginCollective(collective));
    return createBackend(static_cast<commrt_backend>(backend), rt.beside);
  });
}

int32_t commrt_local_rank(void) {
  return queryRuntime("commrt_local_rank",
                      [](Runtime &rt) { return rt.localRank; });
}

int32_t commrt_local_size(void) {
  return queryRuntime("commrt_local_size",
                      [](Runtime &rt) { return rt.localSize; });
}

int32_t commrt_channels(void) {
  return queryRuntime("commrt_channels",
                      [](Runtime &rt) { return rt.channels; });
}

int32_t commrt_allreduce(void *buffer, int64_t count, int32_t dtype,
                         int32_t reduce) {
  return inCheckedCollective(
      "commrt_allreduce",
      [&] { return checkAllreduce(buffer, count, dtype, reduce); },
      [&](int64_t) {
        return runPlan(
            singlePlan(buffer, count, dtype, reduce, COMMRT_WIRE_NONE, 1.0f),
            /*group=*/0);
      });
}

int32_t commrt_broadcast(void *buffer, int64_t count, int32_t dtype,
                         int32_t root) {
  return inCheckedCollective(
      "commrt_broadcast",
      [&] {
        return checkBroadcast(buffer, count, dtype, root, runtime().comm);
      },
      [&](int64_t) {
        if (count == 0)
          return COMMRT_SUCCESS;
        return runtime().backend->broadcast(
            buffer, count, static_cast<commrt_dtype>(dtype), root);
      });
}

int32_t commrt_allgather(const void *send, void *recv, const int64_t *counts,
                         int32_t dtype) {
  int64_t total = 0;
  return inCheckedCollective(
      "commrt_allgather",
      [&] {
        return checkAllgather(send, recv, counts, dtype, runtime().comm, total);
      },
      [&](int64_t) {
        if (total == 0)
          return COMMRT_SUCCESS;
        return runtime().backend->allgather(send, recv, counts,
                                            static_cast<commrt_dtype>(dtype));
      });
}

int32_t commrt_allreduce_wire(float *buffer, int64_t count, int32_t wire,
                              int32_t reduce, float prescale) {
  return inCheckedCollective(
      "commrt_allreduce_wire",
      [&] { return checkAllreduceWire(buffer, count, wire, reduce, prescale); },
      [&](int64_t) {
        return runPlan(
            singlePlan(buffer, count, COMMRT_F32, reduce, wire, prescale),
            /*group=*/0);
      });
}

int32_t commrt_fused_allreduce(void *const *buffers, const int64_t *counts,
                               int32_t nbuffers, int32_t dtype, int32_t reduce,
                               int32_t wire, float prescale) {
  return fusedAllreduce(
      "commrt_fused_allreduce", /*group=*/0, COMMRT_ALGORITHM_DEFAULT,
      fusedCheck(buffers, counts, nbuffers, dtype, reduce, wire, prescale));
}

int32_t commrt_sparse_allreduce(float *grad, float *residual, int64_t count,
                                double density, int32_t select,
                                int32_t exchange, int32_t reduce,
                                int64_t chunk_elements) {
  return runSparseAllreduce("commrt_sparse_allreduce", /*group=*/0, grad,
                            residual, count, density, select, exchange, reduce,
                            chunk_elements);
}

int32_t commrt_allreduce_start(void *buffer, int64_t count, int32_t dtype,
                               int32_t reduce, int32_t channel,
                               int64_t *handle) {
  if (handle)
    *handle = 0;
  return inCheckedCollective(
      "commrt_allreduce_start",
      [&] {
        return checkStart(checkAllreduce(buffer, count, dtype, reduce), channel,
                          runtime().channels, handle);
      },
      [&](int64_t collective) {
        return startPlan(
            singlePlan(buffer, count, dtype, reduce, COMMRT_WIRE_NONE, 1.0f),
            /*group=*/0, channel, collective, handle);
      });
}

int32_t commrt_fused_allreduce_start(void *const *buffers,
                                     const int64_t *counts, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t channel, int64_t *handle) {
  return fusedAllreduceStart(
      "commrt_fused_allreduce_start", /*group=*/0, COMMRT_ALGORITHM_DEFAULT,
      channel, handle,
      fusedCheck(buffers, counts, nbuffers, dtype, reduce, wire, prescale));
}

int32_t commrt_group_split(int64_t id, int32_t color, int32_t key,
                           int32_t *group) {
  if (group)
    *group = 0;
  return inCall("commrt_group_split", [&](CallGuard &guard) {
    Runtime &rt = runtime();
    auto cached = rt.groupsById.find(id);
    if (cached != rt.groupsById.end()) {
      const Group &made = rt.groups.at(cached->second);
      if (made.color != color || made.key != key)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "split id ", id,
                    " made group ", cached->second, " with color ", made.color,
                    " and key ", made.key, ", but this call passes color ",
                    color, " and key ", key);
      if (!group)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "group is null");
      *group = cached->second;
      return COMMRT_SUCCESS;
    }
    COMMRT_TRY(ensureBackend(COMMRT_BACKEND_AUTO, guard));
    int64_t collective;
    COMMRT_TRY(guard.beginCollective(collective));
    // Ranks that split different ids would pair different splits, or a
    // split with another collective: checked whenever checks are on.
    Checked checked = checkGroupSplit(id, color, group);
    if (rt.checks.mode == COMMRT_CHECKS_OFF)
      COMMRT_TRY(checked.status);
    else
      COMMRT_TRY(
          agreeAlways(rt.comm, rt.checks, checked.status, checked.shared));
    Group made;
    made.id = id;
    made.color = color;
    made.key = key;
    if (int error = MPI_Comm_split(rt.comm, color, key, &made.comm))
      return failMpi("MPI_Comm_split", error);
    MPI_Comm_set_errhandler(made.comm, MPI_ERRORS_RETURN);
    COMMRT_TRY(recordTransport(made.comm));
    MPI_Comm_rank(made.comm, &made.rank);
    MPI_Comm_size(made.comm, &made.size);
    int32_t handle = rt.nextGroup;
    for (Backend *backend : {rt.backend.get(), rt.beside.get()})
      if (commrt_status status =
              backend ? backend->addGroup(handle, made.comm, color, key)
                      : COMMRT_SUCCESS) {
        MPI_Comm_free(&made.comm);
        return status;
      }
    ++rt.nextGroup;
    rt.groups.emplace(handle, made);
    rt.groupsById.emplace(id, handle);
    *group = handle;
    return COMMRT_SUCCESS;
  });
}

int32_t commrt_group_rank(int32_t group) {
  if (group == 0)
    return commrt_rank();
  return queryGroup("commrt_group_rank", group,
                    [](const Group &found) { return found.rank; });
}

int32_t commrt_group_size(int32_t group) {
  if (group == 0)
    return commrt_size();
  return queryGroup("commrt_group_size", group,
                    [](const Group &found) { return found.size; });
}

int32_t commrt_group_fused_allreduce(int32_t group, void *const *buffers,
                                     const int64_t *counts, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t algorithm) {
  return fusedAllreduce(
      "commrt_group_fused_allreduce", group, algorithm,
      fusedCheck(buffers, counts, nbuffers, dtype, reduce, wire, prescale));
}

int32_t commrt_group_fused_allreduce_start(int32_t group, void *const *buffers,
                                           const int64_t *counts,
                                           int32_t nbuffers, int32_t dtype,
                                           int32_t reduce, int32_t wire,
                                           float prescale, int32_t algorithm,
                                           int32_t channel, int64_t *handle) {
  return fusedAllreduceStart(
      "commrt_group_fused_allreduce_start", group, algorithm, channel, handle,
      fusedCheck(buffers, counts, nbuffers, dtype, reduce, wire, prescale));
}

int32_t commrt_mixed_allreduce(int32_t group, void *const *buffers,
                               const int64_t *counts, const int32_t *narrowed,
                               int32_t nbuffers, int32_t dtype, int32_t reduce,
                               int32_t wire, float prescale) {
  return fusedAllreduce("commrt_mixed_allreduce", group,
                        COMMRT_ALGORITHM_DEFAULT,
                        mixedCheck(buffers, counts, narrowed, nbuffers, dtype,
                                   reduce, wire, prescale));
}

int32_t commrt_mixed_allreduce_start(int32_t group, void *const *buffers,
                                     const int64_t *counts,
                                     const int32_t *narrowed, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t channel, int64_t *handle) {
  return fusedAllreduceStart("commrt_mixed_allreduce_start", group,
                             COMMRT_ALGORITHM_DEFAULT, channel, handle,
                             mixedCheck(buffers, counts, narrowed, nbuffers,
                                        dtype, reduce, wire, prescale));
}

int32_t commrt_reduce_scatter(int32_t group, void *const *buffers,
                              const int64_t *counts, int32_t nbuffers,
                              void *shard, int64_t shard_count, int32_t dtype,
                              int32_t reduce, int32_t wire, float prescale) {
  return fusedAllreduce(
      "commrt_reduce_scatter", group, COMMRT_ALGORITHM_DEFAULT,
      shardedCheck(PlanKind::ReduceScatter, group, buffers, counts, nbuffers,
                   shard, shard_count, dtype, reduce, wire, prescale));
}

int32_t commrt_reduce_scatter_start(int32_t group, void *const *buffers,
                                    const int64_t *counts, int32_t nbuffers,
                                    void *shard, int64_t shard_count,
                                    int32_t dtype, int32_t reduce, int32_t wire,
                                    float prescale, int32_t channel,
                                    int64_t *handle) {
  return fusedAllreduceStart(
      "commrt_reduce_scatter_start", group, COMMRT_ALGORITHM_DEFAULT, channel,
      handle,
      shardedCheck(PlanKind::ReduceScatter, group, buffers, counts, nbuffers,
                   shard, shard_count, dtype, reduce, wire, prescale));
}

int32_t commrt_all_gather(int32_t group, const void *shard, int64_t shard_count,
                          void *const *buffers, const int64_t *counts,
                          int32_t nbuffers, int32_t dtype, int32_t wire,
                          float prescale) {
  return fusedAllreduce("commrt_all_gather", group, COMMRT_ALGORITHM_DEFAULT,
                        shardedCheck(PlanKind::AllGather, group, buffers,
                                     counts, nbuffers, shard, shard_count,
                                     dtype, COMMRT_SUM, wire, prescale));
}

int32_t commrt_all_gather_start(int32_t group, const void *shard,
                                int64_t shard_count, void *const *buffers,
                                const int64_t *counts, int32_t nbuffers,
                                int32_t dtype, int32_t wire, float prescale,
                                int32_t channel, int64_t *handle) {
  return fusedAllreduceStart("commrt_all_gather_start", group,
                             COMMRT_ALGORITHM_DEFAULT, channel, handle,
                             shardedCheck(PlanKind::AllGather, group, buffers,
                                          counts, nbuffers, shard, shard_count,
                                          dtype, COMMRT_SUM, wire, prescale));
}

int32_t commrt_sparse_allreduce_start(float *grad, float *residual,
                                      int64_t count, double density,
                                      int32_t select, int32_t exchange,
                                      int32_t reduce, int64_t chunk_elements,
                                      int32_t channel, int64_t *handle) {
  return runSparseAllreduce("commrt_sparse_allreduce_start", /*group=*/0, grad,
                            residual, count, density, select, exchange, reduce,
                            chunk_elements, channel, handle);
}

int32_t commrt_group_sparse_allreduce_start(int32_t group, float *grad,
                                            float *residual, int64_t count,
                                            double density, int32_t select,
                                            int32_t exchange, int32_t reduce,
                                            int64_t chunk_elements,
                                            int32_t channel, int64_t *handle) {
  return runSparseAllreduce("commrt_group_sparse_allreduce_start", group, grad,
                            residual, count, density, select, exchange, reduce,
                            chunk_elements, channel, handle);
}

int32_t commrt_group_sparse_allreduce(int32_t group, float *grad,
                                      float *residual, int64_t count,
                                      double density, int32_t select,
                                      int32_t exchange, int32_t reduce,
                                      int64_t chunk_elements) {
  return runSparseAllreduce("commrt_group_sparse_allreduce", group, grad,
                            residual, count, density, select, exchange, reduce,
                            chunk_elements);
}

int32_t commrt_rows_allreduce(int32_t group, const int64_t *indices,
                              const float *values, int64_t count, int64_t rows,
                              int64_t row_elements, int32_t exchange,
                              int32_t reduce, commrt_rows *result) {
  if (result)
    *result = commrt_rows{nullptr, nullptr, 0, row_elements};
  return inGroupCollective(
      "commrt_rows_allreduce", group,
      [&] {
        return checkRowsAllreduce(indices, values, count, rows, row_elements,
                                  exchange, reduce, result);
      },
      [&](int64_t) -> commrt_status {
        RowsArguments args{
            indices,
            values,
            count,
            rows,
            row_elements,
            static_cast<commrt_exchange>(exchange),
            static_cast<commrt_reduce>(reduce),
            makeTraceContext(count * row_elements,
                             COMMRT_TRACE_SPARSE + COMMRT_SELECT_ROWS,
                             /*channel=*/-1)};
        ReducedRows reduced;
        COMMRT_TRY(runtime().backend->rows(args, group, reduced));
        // Handed over in arrays the caller frees with commrt_rows_free.
        auto total = static_cast<int64_t>(reduced.indices.size());
        if (total == 0)
          return COMMRT_SUCCESS;
        auto *outIndices = static_cast<int64_t *>(
            std::malloc(sizeof(int64_t) * reduced.indices.size()));
        auto *outValues = static_cast<float *>(
            std::malloc(sizeof(float) * reduced.values.size()));
        if (!outIndices || !outValues) {
          std::free(outIndices);
          std::free(outValues);
          return fail(COMMRT_ERROR_BACKEND, "out of memory for ", total,
                      " reduced rows");
        }
        std::copy(reduced.indices.begin(), reduced.indices.end(), outIndices);
        std::copy(reduced.values.begin(), reduced.values.end(), outValues);
        *result = commrt_rows{outIndices, outValues, total, row_elements};
        return COMMRT_SUCCESS;
      });
}

void commrt_rows_free(commrt_rows *result) {
  if (!result)
    return;
  std::free(result->indices);
  std::free(result->values);
  result->indices = nullptr;
  result->values = nullptr;
  result->count = 0;
}

int32_t commrt_test(int64_t handle, int32_t *done) {
  if (done)
    *done = 0;
  return inCall("commrt_test", [&](CallGuard &) {
    if (!done)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "done is null");
    InFlight *inFlight = findOperation(handle);
    if (!inFlight)
      return COMMRT_ERROR_INVALID_ARGUMENT;
    bool finished;
    COMMRT_TRY(inFlight->operation->test(finished));
    *done = finished;
    return COMMRT_SUCCESS;
  });
}

int32_t commrt_wait_for(int64_t handle, double timeout_s, int32_t *done) {
  if (done)
    *done = 0;
  return inCall("commrt_wait_for", [&](CallGuard &guard) {
    if (!done)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "done is null");
    if (!(timeout_s >= 0))
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "timeout_s is ", timeout_s,
                  ", expected a number of seconds (0 or more)");
    InFlight *inFlight = findOperation(handle);
    if (!inFlight)
      return COMMRT_ERROR_INVALID_ARGUMENT;
    guard.waitOn(inFlight->collective);
    bool finished;
    COMMRT_TRY(inFlight->operation->waitFor(timeout_s, finished));
    *done = finished;
    return COMMRT_SUCCESS;
  });
}

int32_t commrt_wait(int64_t handle) {
  return inCall("commrt_wait", [&](CallGuard &guard) {
    InFlight *inFlight = findOperation(handle);
    if (!inFlight)
      return COMMRT_ERROR_INVALID_ARGUMENT;
    guard.waitOn(inFlight->collective);
    commrt_status status = inFlight->operation->wait();
    runtime().operations.erase(handle);
    return status;
  });
}

int32_t commrt_set_consistency_checks(int32_t checks) {
  auto set = [&]() -> commrt_status {
    COMMRT_TRY(checkNotFinalized());
    COMMRT_TRY(checkEnum("checks", checks, "commrt_checks", COMMRT_CHECKS_OFF,
                         COMMRT_CHECKS_FIRST_OF_EACH));
    runtime().checks.mode = checks;
    return COMMRT_SUCCESS;
  };
  return inFunction("commrt_set_consistency_checks", set());
}

const char *commrt_last_error(void) { return lastError.c_str(); }

int32_t commrt_fill_gradient(void *buffer, int64_t count, int32_t dtype) {
  COMMRT_TRY(inFunction("commrt_fill_gradient",
                        checkTypedBuffer(buffer, count, dtype)));
  // Per thread, made at its first fill; every call starts elsewhere in the
  // table (deterministic per run).
  thread_local std::unique_ptr<SyntheticGradients> values =
      std::make_unique<SyntheticGradients>();
  thread_local uint32_t calls = 0;
  uint32_t start = calls++ * 40503u;
  auto fill = [&](auto *out, auto convert) {
    values->fill(out, count, start, convert);
  };
  switch (static_cast<commrt_dtype>(dtype)) {
  case COMMRT_F32:
    fill(static_cast<float *>(buffer), [](float x) { return x; });
    break;
  case COMMRT_F64:
    fill(static_cast<double *>(buffer), [](float x) { return double(x); });
    break;
  case COMMRT_F16:
    fill(static_cast<uint16_t *>(buffer), floatToHalf);
    break;
  case COMMRT_BF16:
    fill(static_cast<uint16_t *>(buffer), floatToBFloat16);
    break;
  }
  return COMMRT_SUCCESS;
}

void commrt_sleep_since_us(double microseconds, double since_us) {
  if (!(microseconds > 0.0))
    return;
  // Per thread: each host thread of a skeleton stands for its own stream.
  thread_local ComputePacer pacer;
  double spentUs = std::max(0.0, commrt_time_us() - since_us);
  double sleepUs = pacer.sleepUs(microseconds, spentUs);
  if (sleepUs > 0.0)
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::micro>(sleepUs));
  pacer.record(microseconds, commrt_time_us() - since_us);
}

void commrt_sleep_us(double microseconds) {
  commrt_sleep_since_us(microseconds, commrt_time_us());
}

double commrt_time_us(void) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t commrt_barrier(void) {
  return inCollective("commrt_barrier", [&](int64_t) {
    MPI_Request request;
    if (int error = MPI_Ibarrier(runtime().comm, &request))
      return failMpi("MPI_Ibarrier", error);
    return waitFor(runtime().comm, request, "MPI_Ibarrier");
  });
}

int32_t commrt_report_step_us(int64_t step, double microseconds) {
  return inCollective("commrt_report_step_us", [&](int64_t) {
    double slowest = 0.0;
    MPI_Request request;
    if (int error = MPI_Iallreduce(&microseconds, &slowest, 1, MPI_DOUBLE,
                                   MPI_MAX, runtime().comm, &request))
      return failMpi("MPI_Iallreduce", error);
    COMMRT_TRY(waitFor(runtime().comm, request, "MPI_Iallreduce"));
    int rank = 0;
    MPI_Comm_rank(runtime().comm, &rank);
    if (rank == 0) {
      std::printf("commrt: step %lld: %.1f us\n", static_cast<long long>(step),
                  slowest);
      std::fflush(stdout);
    }
    return COMMRT_SUCCESS;
  });
}

void commrt_abort_on_error(int32_t status) {
  if (status == COMMRT_SUCCESS)
    return;
  int rank = -1;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  bool mpiRunning = initialized && !finalized;
  if (mpiRunning)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "commrt: rank %d: %s: %s\n", rank,
               commrt_status_string(status), lastError.c_str());
  std::fflush(stderr);
  if (mpiRunning)
    MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

const char *commrt_status_string(int32_t status) {
  switch (status) {
  case COMMRT_SUCCESS:
    return "COMMRT_SUCCESS";
  case COMMRT_ERROR_INVALID_ARGUMENT:
    return "COMMRT_ERROR_INVALID_ARGUMENT";
  case COMMRT_ERROR_MISMATCH:
    return "COMMRT_ERROR_MISMATCH";
  case COMMRT_ERROR_BACKEND:
    return "COMMRT_ERROR_BACKEND";
  case COMMRT_ERROR_NOT_INITIALIZED:
    return "COMMRT_ERROR_NOT_INITIALIZED";
  case COMMRT_ERROR_UNAVAILABLE:
    return "COMMRT_ERROR_UNAVAILABLE";
  case COMMRT_ERROR_PEER_ENDED:
    return "COMMRT_ERROR_PEER_ENDED";
  case COMMRT_ERROR_TIMED_OUT:
    return "COMMRT_ERROR_TIMED_OUT";
  }
  return "COMMRT_UNKNOWN_STATUS";
}

} // extern "C"
