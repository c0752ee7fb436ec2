//===- Runtime.cpp - The commrt C ABI: lifetime, validation, dispatch -----===//

#include "Backend.h"
#include "Sparse.h"
#include "Watchdog.h"
#include "WireFormat.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_set>
#include <vector>

using namespace commrt;

namespace {

/// The message of the last failure on this thread.
thread_local std::string lastError;

/// The consistency checks COMMRT_CHECK asks for: "0" none, "1" every call,
/// "first" (the default) the first call of each distinct collective; -1 for
/// another value, which the first collective reports.
int checksFromEnvironment() {
  const char *value = std::getenv("COMMRT_CHECK");
  if (!value || std::strcmp(value, "first") == 0)
    return COMMRT_CHECKS_FIRST_OF_EACH;
  if (std::strcmp(value, "0") == 0)
    return COMMRT_CHECKS_OFF;
  if (std::strcmp(value, "1") == 0)
    return COMMRT_CHECKS_EVERY_CALL;
  return -1;
}

/// A collective started and not waited yet.
struct InFlight {
  std::unique_ptr<Operation> operation;
  /// Its number among the rank's collectives (see Watchdog.h).
  int64_t collective = 0;
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
  /// The number of channels; 0 until the first backend is created.
  int channels = 0;
  /// The MPI backend's allreduce algorithm, read with `channels`.
  AllreduceConfig allreduce;
  /// The collectives in flight, by handle.
  std::map<int64_t, InFlight> operations;
  /// The handle of the next start; 0 is never one.
  int64_t nextHandle = 1;
  /// Which collectives first compare their arguments across ranks: a
  /// commrt_checks, or -1 when COMMRT_CHECK is invalid.
  int checks = checksFromEnvironment();
  /// The collectives checked so far, by digest of their shared arguments
  /// (COMMRT_CHECKS_FIRST_OF_EACH).
  std::unordered_set<uint64_t> checked;
  /// How many consistency checks ran, for the tests.
  int64_t checksRun = 0;
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
  commrt_status status = checkNotFinalized();
  if (status == COMMRT_SUCCESS)
    status = guard.admitted();
  if (status == COMMRT_SUCCESS)
    status = body(guard);
  return inFunction(function, status);
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
    (void)rt.backend.release();
    stopWatchdog();
    return COMMRT_SUCCESS;
  }
  commrt_status status = completeAll(guard);
  rt.backend.reset();
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
  if (commrt_status status = checkNotFinalized())
    return status;
  int flag;
  MPI_Finalized(&flag);
  if (flag)
    return fail(COMMRT_ERROR_NOT_INITIALIZED,
                "MPI was finalised by the program");
  MPI_Initialized(&flag);
  if (flag)
    // The program's MPI: no end notices, which MPI_Finalize could cut off.
    return startWatchdog(/*endNotices=*/false);
  // Channels' threads call MPI while the caller does (see MpiBackend.cpp).
  int provided;
  if (int error =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided))
    return failMpi("MPI_Init_thread", error);
  runtime().ownsMpi = true;
  std::atexit(shutdownAtExit);
  return startWatchdog(/*endNotices=*/provided == MPI_THREAD_MULTIPLE);
}

/// Resolves AUTO through the COMMRT_BACKEND environment variable.
commrt_status backendFromEnvironment(commrt_backend &backend) {
  const char *name = std::getenv("COMMRT_BACKEND");
  if (!name || std::strcmp(name, "auto") == 0)
    return COMMRT_SUCCESS;
  if (std::strcmp(name, "mpi") == 0)
    backend = COMMRT_BACKEND_MPI;
  else if (std::strcmp(name, "nccl") == 0)
    backend = COMMRT_BACKEND_NCCL;
  else
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_BACKEND=", name,
                " is not one of mpi, nccl, auto");
  return COMMRT_SUCCESS;
}

/// Reads the number of channels from COMMRT_CHANNELS.
commrt_status channelsFromEnvironment(int &channels) {
  channels = COMMRT_DEFAULT_CHANNELS;
  const char *text = std::getenv("COMMRT_CHANNELS");
  if (!text)
    return COMMRT_SUCCESS;
  char *end;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > COMMRT_MAX_CHANNELS)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_CHANNELS=", text,
                " is not a number in 1..", COMMRT_MAX_CHANNELS);
  channels = static_cast<int>(value);
  return COMMRT_SUCCESS;
}

/// Reads the MPI backend's allreduce algorithm from COMMRT_ALLREDUCE and
/// COMMRT_RING_MIN_BYTES.
commrt_status allreduceFromEnvironment(AllreduceConfig &config) {
  config = AllreduceConfig();
  if (const char *name = std::getenv("COMMRT_ALLREDUCE")) {
    if (std::strcmp(name, "auto") == 0)
      config.algorithm = AllreduceAlgorithm::Auto;
    else if (std::strcmp(name, "mpi") == 0)
      config.algorithm = AllreduceAlgorithm::Mpi;
    else if (std::strcmp(name, "ring") == 0)
      config.algorithm = AllreduceAlgorithm::Ring;
    else
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_ALLREDUCE=", name,
                  " is not one of auto, mpi, ring");
  }
  if (const char *text = std::getenv("COMMRT_RING_MIN_BYTES")) {
    char *end;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || value < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_RING_MIN_BYTES=", text,
                  " is not a number of bytes (0 or more)");
    config.ringMinBytes = value;
  }
  return COMMRT_SUCCESS;
}

/// Creates the NCCL backend, or says why there is none.
commrt_status createNccl(std::unique_ptr<Backend> &out) {
#if COMMRT_HAVE_NCCL
  return createNcclBackend(runtime().comm, runtime().channels, out);
#else
  (void)out;
  return fail(COMMRT_ERROR_UNAVAILABLE,
              "the NCCL backend was not built (no CUDA compiler or NCCL was "
              "found when commrt was configured)");
#endif
}

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

/// Makes all ranks agree on argument validation: every rank fails with
/// INVALID_ARGUMENT when any rank's `localStatus` is a failure, and with
/// MISMATCH when the ranks' `arguments` differ.
commrt_status agreeAlways(commrt_status localStatus,
                          const std::vector<SharedArgument> &arguments) {
  Runtime &rt = runtime();
  // One MAX-allreduce of [invalid rank or -1, values..., ~values...]: the
  // maximum of ~v is ~min(v), and ~ cannot overflow.
  const int n = static_cast<int>(arguments.size());
  std::vector<int64_t> values(1 + 2 * n);
  int rank;
  MPI_Comm_rank(rt.comm, &rank);
  values[0] = localStatus == COMMRT_SUCCESS ? -1 : rank;
  for (int i = 0; i < n; ++i) {
    values[1 + i] = arguments[i].value;
    values[1 + n + i] = ~arguments[i].value;
  }
  ++rt.checksRun;
  if (int error = MPI_Allreduce(MPI_IN_PLACE, values.data(), 1 + 2 * n,
                                MPI_INT64_T, MPI_MAX, rt.comm))
    return failMpi("MPI_Allreduce (consistency check)", error);
  if (localStatus != COMMRT_SUCCESS)
    return localStatus;
  if (values[0] >= 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "rank ", values[0],
                " passed an invalid argument");
  for (int i = 0; i < n; ++i) {
    int64_t max = values[1 + i], min = ~values[1 + n + i];
    if (min == max)
      continue;
    const char *name = arguments[i].name;
    switch (arguments[i].show) {
    case SharedArgument::Show::Range:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name, " (min ",
                  min, ", max ", max, ")");
    case SharedArgument::Show::FloatValues:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name, " (",
                  floatFromBits(static_cast<uint32_t>(min)), " and ",
                  floatFromBits(static_cast<uint32_t>(max)), ")");
    case SharedArgument::Show::Nothing:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name);
    }
  }
  return COMMRT_SUCCESS;
}

/// The most digests COMMRT_CHECKS_FIRST_OF_EACH remembers; it forgets them
/// all when full, as every rank of a correct program does at the same call.
constexpr size_t kMaxCheckedCollectives = 1 << 16;

/// A digest of the names and values of `arguments` (FNV-1a).
uint64_t digestOf(const std::vector<SharedArgument> &arguments) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&](uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
  for (const SharedArgument &argument : arguments) {
    for (const char *c = argument.name; *c; ++c)
      mix(static_cast<unsigned char>(*c));
    mix(static_cast<uint64_t>(argument.value));
  }
  return hash;
}

/// Runs agreeAlways where the consistency checks ask for it (every call, or
/// the first call of each distinct collective), and otherwise returns
/// `localStatus`. Ranks of a correct program make the same calls, so they
/// decide alike; where they disagree, the first call of the disagreeing
/// collective is checked on every rank unless some rank has seen its
/// arguments before.
commrt_status agree(commrt_status localStatus,
                    const std::vector<SharedArgument> &arguments) {
  Runtime &rt = runtime();
  switch (rt.checks) {
  case COMMRT_CHECKS_EVERY_CALL:
    return agreeAlways(localStatus, arguments);
  case COMMRT_CHECKS_FIRST_OF_EACH: {
    uint64_t digest = digestOf(arguments);
    if (rt.checked.count(digest))
      return localStatus;
    commrt_status status = agreeAlways(localStatus, arguments);
    if (status == COMMRT_SUCCESS) {
      if (rt.checked.size() == kMaxCheckedCollectives)
        rt.checked.clear();
      rt.checked.insert(digest);
    }
    return status;
  }
  default:
    return localStatus;
  }
}

/// Brings the runtime up with the backend `requested`, in the call `guard`.
/// AUTO keeps the backend in use, or picks one as commrt.h describes; another
/// backend replaces the one in use when it can be created.
commrt_status ensureBackend(commrt_backend requested, CallGuard &guard) {
  if (commrt_status status = ensureMpi())
    return status;
  Runtime &rt = runtime();
  if (rt.backend &&
      (requested == COMMRT_BACKEND_AUTO || rt.backend->kind() == requested))
    return COMMRT_SUCCESS;
  // The communicator and the agreement on the settings are every rank's
  // first collective.
  if (rt.comm == MPI_COMM_NULL || rt.channels == 0) {
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
  }
  if (rt.comm == MPI_COMM_NULL) {
    if (int error = MPI_Comm_dup(MPI_COMM_WORLD, &rt.comm))
      return failMpi("MPI_Comm_dup", error);
    MPI_Comm_set_errhandler(rt.comm, MPI_ERRORS_RETURN);
  }
  if (rt.channels == 0) {
    // Ranks that disagree would create different numbers of communicators.
    // Ranks that disagree on the allreduce algorithm would deadlock.
    // Ranks that disagree on the checks would pair a check with a
    // collective.
    int channels;
    AllreduceConfig allreduce;
    commrt_status status = channelsFromEnvironment(channels);
    if (status == COMMRT_SUCCESS)
      status = allreduceFromEnvironment(allreduce);
    if (status == COMMRT_SUCCESS && rt.checks < 0)
      status = fail(COMMRT_ERROR_INVALID_ARGUMENT,
                    "COMMRT_CHECK=", std::getenv("COMMRT_CHECK"),
                    " is not one of 0, 1, first");
    if (commrt_status agreed = agreeAlways(
            status,
            {{"COMMRT_CHANNELS", channels},
             {"COMMRT_ALLREDUCE", static_cast<int64_t>(allreduce.algorithm)},
             {"COMMRT_RING_MIN_BYTES", allreduce.ringMinBytes},
             {"COMMRT_CHECK", rt.checks}}))
      return agreed;
    rt.channels = channels;
    rt.allreduce = allreduce;
  }
  if (requested == COMMRT_BACKEND_AUTO)
    if (commrt_status status = backendFromEnvironment(requested))
      return status;

  std::unique_ptr<Backend> backend;
  if (requested == COMMRT_BACKEND_NCCL) {
    if (commrt_status status = createNccl(backend))
      return status;
  } else if (requested == COMMRT_BACKEND_AUTO) {
    // Fall back to MPI silently: keep the last error as it was.
    std::string previousError = lastError;
    if (createNccl(backend) != COMMRT_SUCCESS)
      lastError = std::move(previousError);
  }
  if (!backend)
    if (commrt_status status =
            createMpiBackend(rt.comm, rt.channels, rt.allreduce, backend))
      return status;
  // The replaced backend completes its collectives in flight as it goes.
  rt.backend = std::move(backend);
  return COMMRT_SUCCESS;
}

/// Fails unless `buffer` and `count` describe a buffer.
commrt_status checkBuffer(const void *buffer, int64_t count) {
  if (count < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count, " is negative");
  if (!buffer && count > 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffer is null but count is ",
                count);
  return COMMRT_SUCCESS;
}

/// Fails unless the argument `name`, `value`, is one of the values
/// `first`..`last` of the enum `type`.
commrt_status checkEnum(const char *name, int32_t value, const char *type,
                        int32_t first, int32_t last) {
  if (value < first || value > last)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, name, " ", value, " is not a ",
                type, " (expected ", first, "..", last, ")");
  return COMMRT_SUCCESS;
}

/// Fails unless `dtype` is a commrt_dtype.
commrt_status checkDtype(int32_t dtype) {
  return checkEnum("dtype", dtype, "commrt_dtype", COMMRT_F32, COMMRT_BF16);
}

/// Fails unless `reduce` is a commrt_reduce.
commrt_status checkReduce(int32_t reduce) {
  return checkEnum("reduce", reduce, "commrt_reduce", COMMRT_SUM, COMMRT_MIN);
}

/// Fails unless `prescale` is a finite nonzero number.
commrt_status checkPrescale(float prescale) {
  if (!std::isfinite(prescale) || prescale == 0.0f)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "prescale ", prescale,
                " is not a finite nonzero number");
  return COMMRT_SUCCESS;
}

/// Fails unless `wire` is COMMRT_WIRE_NONE or a 16-bit commrt_dtype
/// narrower than the (valid) `dtype`.
commrt_status checkWire(int32_t wire, int32_t dtype) {
  static const char *const names[] = {"f32", "f64", "f16", "bf16"};
  if (wire == COMMRT_WIRE_NONE)
    return COMMRT_SUCCESS;
  if (wire != COMMRT_F16 && wire != COMMRT_BF16)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "wire ", wire,
                " is not COMMRT_WIRE_NONE (-1), COMMRT_F16 (2) or "
                "COMMRT_BF16 (3)");
  if (elementSize(static_cast<commrt_dtype>(wire)) >=
      elementSize(static_cast<commrt_dtype>(dtype)))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "wire ", wire, " (", names[wire],
                ") is not narrower than dtype ", dtype, " (", names[dtype],
                "); COMMRT_WIRE_NONE (-1) sends the dtype itself");
  return COMMRT_SUCCESS;
}

/// Fails unless `channel` is one of the runtime's channels.
commrt_status checkChannel(int32_t channel) {
  int channels = runtime().channels;
  if (channel < 0 || channel >= channels)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "channel ", channel,
                " is out of range (expected 0..", channels - 1,
                "; COMMRT_CHANNELS sets the number of channels)");
  return COMMRT_SUCCESS;
}

/// Fails unless `root` is a rank of the runtime's communicator.
commrt_status checkRoot(int32_t root) {
  int size;
  MPI_Comm_size(runtime().comm, &size);
  if (root < 0 || root >= size)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "root ", root,
                " is out of range (expected 0..", size - 1, ")");
  return COMMRT_SUCCESS;
}

/// Fails when `handle`, where a start stores its handle, is null.
commrt_status checkHandlePointer(const int64_t *handle) {
  if (!handle)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "handle is null");
  return COMMRT_SUCCESS;
}

/// The plan of an allreduce of one buffer, whose arguments are valid.
Plan singlePlan(void *buffer, int64_t count, int32_t dtype, int32_t reduce,
                int32_t wire, float prescale) {
  Plan plan;
  if (count > 0) {
    plan.buffers.push_back(buffer);
    plan.counts.push_back(count);
  }
  plan.total = count;
  plan.dtype = static_cast<commrt_dtype>(dtype);
  plan.reduce = static_cast<commrt_reduce>(reduce);
  plan.wire = wire;
  plan.prescale = prescale;
  return plan;
}

/// Validates the arguments of a sparse allreduce (see commrt.h).
commrt_status checkSparse(const float *grad, const float *residual,
                          int64_t count, double density, int32_t select,
                          int32_t exchange, int32_t reduce,
                          int64_t chunkElements) {
  if (count < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count, " is negative");
  if (!grad && count > 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad is null but count is ",
                count);
  if (!residual && count > 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "residual is null but count is ",
                count);
  if (count > 0 && grad < residual + count && residual < grad + count)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad and residual overlap");
  if (!(density > 0.0 && density <= 1.0))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "density ", density,
                " is not in (0, 1]");
  if (commrt_status status = checkEnum("select", select, "commrt_select",
                                       COMMRT_SELECT_TOPK, COMMRT_SELECT_CHUNK))
    return status;
  if (commrt_status status =
          checkEnum("exchange", exchange, "commrt_exchange",
                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_CHUNK))
    return status;
  if (reduce != COMMRT_SUM && reduce != COMMRT_AVG)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "reduce ", reduce,
                " is not COMMRT_SUM (0) or COMMRT_AVG (1)");
  if ((select == COMMRT_SELECT_CHUNK) != (exchange == COMMRT_EXCHANGE_CHUNK))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "select ", select,
                " does not go with exchange ", exchange,
                ": chunk selection (2) goes with the chunk exchange (2) and "
                "only with it");
  if (select == COMMRT_SELECT_CHUNK && chunkElements <= 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "chunk_elements ", chunkElements,
                " is not positive");
  return COMMRT_SUCCESS;
}

/// The most elements a fused allreduce takes: their bytes fit an int64_t.
constexpr int64_t kMaxElements = INT64_MAX / 8;

/// Validates the arguments of a fused allreduce and fills `plan` with its
/// nonempty buffers, and `digest` with a digest of `counts`.
commrt_status makeFusedPlan(void *const *buffers, const int64_t *counts,
                            int32_t nbuffers, int32_t dtype, int32_t reduce,
                            int32_t wire, float prescale, Plan &plan,
                            int64_t &digest) {
  if (nbuffers < 1)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "nbuffers ", nbuffers,
                " is less than 1");
  if (!buffers)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffers is null");
  if (!counts)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts is null");
  // FNV-1a over the counts.
  uint64_t hash = 14695981039346656037ull;
  for (int32_t i = 0; i < nbuffers; ++i) {
    int64_t count = counts[i];
    if (count < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts[", i, "] ", count,
                  " is negative");
    if (!buffers[i] && count > 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffers[", i,
                  "] is null but counts[", i, "] is ", count);
    if (count > kMaxElements - plan.total)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts add up to more than ",
                  kMaxElements, " elements");
    plan.total += count;
    hash = (hash ^ static_cast<uint64_t>(count)) * 1099511628211ull;
    if (count > 0) {
      plan.buffers.push_back(buffers[i]);
      plan.counts.push_back(count);
    }
  }
  digest = static_cast<int64_t>(hash);
  if (commrt_status status = checkDtype(dtype))
    return status;
  if (commrt_status status = checkWire(wire, dtype))
    return status;
  if (commrt_status status = checkReduce(reduce))
    return status;
  if (commrt_status status = checkPrescale(prescale))
    return status;
  plan.dtype = static_cast<commrt_dtype>(dtype);
  plan.reduce = static_cast<commrt_reduce>(reduce);
  plan.wire = wire;
  plan.prescale = prescale;
  return COMMRT_SUCCESS;
}

/// The arguments of a fused allreduce that all ranks must pass alike.
std::vector<SharedArgument> fusedArguments(int32_t nbuffers, const Plan &plan,
                                           int64_t digest, int32_t dtype,
                                           int32_t reduce, int32_t wire,
                                           float prescale) {
  return {{"nbuffers", nbuffers},
          {"total count", plan.total},
          {"counts", digest, SharedArgument::Show::Nothing},
          {"dtype", dtype},
          {"wire", wire},
          {"reduce", reduce},
          {"prescale", floatBits(prescale), SharedArgument::Show::FloatValues}};
}

/// Starts the valid `plan`, the rank's collective number `collective`, on the
/// valid `channel` and stores its handle at `handle`.
commrt_status startPlan(const Plan &plan, int32_t channel, int64_t collective,
                        int64_t *handle) {
  Runtime &rt = runtime();
  std::unique_ptr<Operation> operation;
  if (plan.total == 0)
    operation = std::make_unique<Finished>();
  else if (commrt_status status = rt.backend->start(plan, channel, operation))
    return status;
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

} // namespace

int64_t commrt::consistencyChecksRun() { return runtime().checksRun; }

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
    if (commrt_status status =
            checkEnum("backend", backend, "commrt_backend", COMMRT_BACKEND_AUTO,
                      COMMRT_BACKEND_NCCL))
      return status;
    return ensureBackend(static_cast<commrt_backend>(backend), guard);
  });
}

int32_t commrt_finalize(void) {
  return inCall("commrt_finalize",
                [&](CallGuard &guard) { return shutdown(guard); });
}

int32_t commrt_rank(void) {
  int rank = -1;
  inCall("commrt_rank", [&](CallGuard &) {
    commrt_status status = ensureMpi();
    if (status == COMMRT_SUCCESS)
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return status;
  });
  return rank;
}

int32_t commrt_size(void) {
  int size = -1;
  inCall("commrt_size", [&](CallGuard &) {
    commrt_status status = ensureMpi();
    if (status == COMMRT_SUCCESS)
      MPI_Comm_size(MPI_COMM_WORLD, &size);
    return status;
  });
  return size;
}

int32_t commrt_expect_size(int64_t expected) {
  return inCall("commrt_expect_size", [&](CallGuard &guard) {
    if (commrt_status status = ensureMpi())
      return status;
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
  if (inCall("commrt_backend_in_use", [&](CallGuard &guard) {
        return ensureBackend(COMMRT_BACKEND_AUTO, guard);
      }) != COMMRT_SUCCESS)
    return -1;
  return runtime().backend->kind();
}

int32_t commrt_channels(void) {
  if (inCall("commrt_channels", [&](CallGuard &guard) {
        return ensureBackend(COMMRT_BACKEND_AUTO, guard);
      }) != COMMRT_SUCCESS)
    return -1;
  return runtime().channels;
}

int32_t commrt_allreduce(void *buffer, int64_t count, int32_t dtype,
                         int32_t reduce) {
  return inCall("commrt_allreduce", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status = checkDtype(dtype);
    if (status == COMMRT_SUCCESS)
      status = checkReduce(reduce);
    status =
        agree(status, {{"count", count}, {"dtype", dtype}, {"reduce", reduce}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    return runtime().backend->run(
        singlePlan(buffer, count, dtype, reduce, COMMRT_WIRE_NONE, 1.0f));
  });
}

int32_t commrt_broadcast(void *buffer, int64_t count, int32_t dtype,
                         int32_t root) {
  return inCall("commrt_broadcast", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status = checkDtype(dtype);
    if (status == COMMRT_SUCCESS)
      status = checkRoot(root);
    status =
        agree(status, {{"count", count}, {"dtype", dtype}, {"root", root}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    return runtime().backend->broadcast(buffer, count,
                                        static_cast<commrt_dtype>(dtype), root);
  });
}

int32_t commrt_allreduce_wire(float *buffer, int64_t count, int32_t wire,
                              int32_t reduce, float prescale) {
  return inCall("commrt_allreduce_wire", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status = checkEnum("wire", wire, "16-bit commrt_dtype", COMMRT_F16,
                         COMMRT_BF16);
    if (status == COMMRT_SUCCESS)
      status = checkReduce(reduce);
    if (status == COMMRT_SUCCESS)
      status = checkPrescale(prescale);
    status =
        agree(status, {{"count", count}, {"wire", wire}, {"reduce", reduce}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    return runtime().backend->run(
        singlePlan(buffer, count, COMMRT_F32, reduce, wire, prescale));
  });
}

int32_t commrt_fused_allreduce(void *const *buffers, const int64_t *counts,
                               int32_t nbuffers, int32_t dtype, int32_t reduce,
                               int32_t wire, float prescale) {
  return inCall("commrt_fused_allreduce", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    Plan plan;
    int64_t digest = 0;
    commrt_status status = makeFusedPlan(buffers, counts, nbuffers, dtype,
                                         reduce, wire, prescale, plan, digest);
    status = agree(status, fusedArguments(nbuffers, plan, digest, dtype, reduce,
                                          wire, prescale));
    if (status != COMMRT_SUCCESS || plan.total == 0)
      return status;
    return runtime().backend->run(plan);
  });
}

int32_t commrt_sparse_allreduce(float *grad, float *residual, int64_t count,
                                double density, int32_t select,
                                int32_t exchange, int32_t reduce,
                                int64_t chunk_elements) {
  return inCall("commrt_sparse_allreduce", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    commrt_status status = checkSparse(grad, residual, count, density, select,
                                       exchange, reduce, chunk_elements);
    int64_t densityBits;
    std::memcpy(&densityBits, &density, sizeof densityBits);
    status =
        agree(status, {{"count", count},
                       {"density", densityBits, SharedArgument::Show::Nothing},
                       {"select", select},
                       {"exchange", exchange},
                       {"reduce", reduce},
                       {"chunk_elements", chunk_elements}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    SparseArguments args{grad,
                         residual,
                         count,
                         density,
                         static_cast<commrt_select>(select),
                         static_cast<commrt_exchange>(exchange),
                         static_cast<commrt_reduce>(reduce),
                         chunk_elements};
    return runtime().backend->sparse(args);
  });
}

int32_t commrt_allreduce_start(void *buffer, int64_t count, int32_t dtype,
                               int32_t reduce, int32_t channel,
                               int64_t *handle) {
  if (handle)
    *handle = 0;
  return inCall("commrt_allreduce_start", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status = checkDtype(dtype);
    if (status == COMMRT_SUCCESS)
      status = checkReduce(reduce);
    if (status == COMMRT_SUCCESS)
      status = checkChannel(channel);
    if (status == COMMRT_SUCCESS)
      status = checkHandlePointer(handle);
    status = agree(status, {{"count", count},
                            {"dtype", dtype},
                            {"reduce", reduce},
                            {"channel", channel}});
    if (status != COMMRT_SUCCESS)
      return status;
    return startPlan(
        singlePlan(buffer, count, dtype, reduce, COMMRT_WIRE_NONE, 1.0f),
        channel, collective, handle);
  });
}

int32_t commrt_fused_allreduce_start(void *const *buffers,
                                     const int64_t *counts, int32_t nbuffers,
                                     int32_t dtype, int32_t reduce,
                                     int32_t wire, float prescale,
                                     int32_t channel, int64_t *handle) {
  if (handle)
    *handle = 0;
  return inCall("commrt_fused_allreduce_start", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    Plan plan;
    int64_t digest = 0;
    commrt_status status = makeFusedPlan(buffers, counts, nbuffers, dtype,
                                         reduce, wire, prescale, plan, digest);
    if (status == COMMRT_SUCCESS)
      status = checkChannel(channel);
    if (status == COMMRT_SUCCESS)
      status = checkHandlePointer(handle);
    std::vector<SharedArgument> arguments =
        fusedArguments(nbuffers, plan, digest, dtype, reduce, wire, prescale);
    arguments.push_back({"channel", channel});
    status = agree(status, arguments);
    if (status != COMMRT_SUCCESS)
      return status;
    return startPlan(plan, channel, collective, handle);
  });
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
    if (commrt_status status = inFlight->operation->test(finished))
      return status;
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
  commrt_status status = checkNotFinalized();
  if (status == COMMRT_SUCCESS)
    status = checkEnum("checks", checks, "commrt_checks", COMMRT_CHECKS_OFF,
                       COMMRT_CHECKS_FIRST_OF_EACH);
  if (status == COMMRT_SUCCESS)
    runtime().checks = checks;
  return inFunction("commrt_set_consistency_checks", status);
}

const char *commrt_last_error(void) { return lastError.c_str(); }

void commrt_sleep_us(double microseconds) {
  if (microseconds > 0.0)
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::micro>(microseconds));
}

double commrt_time_us(void) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t commrt_barrier(void) {
  return inCall("commrt_barrier", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    if (int error = MPI_Barrier(runtime().comm))
      return failMpi("MPI_Barrier", error);
    return COMMRT_SUCCESS;
  });
}

int32_t commrt_report_step_us(int64_t step, double microseconds) {
  return inCall("commrt_report_step_us", [&](CallGuard &guard) {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO, guard))
      return status;
    int64_t collective;
    if (commrt_status status = guard.beginCollective(collective))
      return status;
    double slowest = 0.0;
    if (int error = MPI_Allreduce(&microseconds, &slowest, 1, MPI_DOUBLE,
                                  MPI_MAX, runtime().comm))
      return failMpi("MPI_Allreduce", error);
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
