//===- Runtime.cpp - The commrt C ABI: lifetime, validation, dispatch -----===//

#include "Backend.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

using namespace commrt;

namespace {

/// The message of the last failure on this thread.
thread_local std::string lastError;

/// Whether the environment variable `name` is set to "1".
bool environmentFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && std::strcmp(value, "1") == 0;
}

/// The process-wide runtime state.
struct Runtime {
  /// Set by commrt_finalize: MPI cannot be initialised a second time.
  bool finalized = false;
  /// Whether the runtime called MPI_Init, and so owes MPI_Finalize.
  bool ownsMpi = false;
  /// The runtime's duplicate of MPI_COMM_WORLD; it returns errors.
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<Backend> backend;
  /// Whether collectives first compare their arguments across ranks.
  bool checks = environmentFlag("COMMRT_CHECK");
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

/// Releases the backend and the communicator, and finalises MPI if the
/// runtime initialised it. Later calls fail with NOT_INITIALIZED.
commrt_status shutdown() {
  Runtime &rt = runtime();
  rt.finalized = true;
  int mpiFinalized;
  MPI_Finalized(&mpiFinalized);
  if (mpiFinalized) {
    // The program finalised MPI itself; the handles died with it.
    (void)rt.backend.release();
    return COMMRT_SUCCESS;
  }
  rt.backend.reset();
  if (rt.comm != MPI_COMM_NULL)
    MPI_Comm_free(&rt.comm);
  if (rt.ownsMpi)
    if (int error = MPI_Finalize())
      return failMpi("MPI_Finalize", error);
  return COMMRT_SUCCESS;
}

/// Finalises a runtime that is still up when the process exits.
void shutdownAtExit() {
  if (!runtime().finalized)
    shutdown();
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
    return COMMRT_SUCCESS;
  if (int error = MPI_Init(nullptr, nullptr))
    return failMpi("MPI_Init", error);
  runtime().ownsMpi = true;
  std::atexit(shutdownAtExit);
  return COMMRT_SUCCESS;
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

/// Creates the NCCL backend, or says why there is none.
commrt_status createNccl(std::unique_ptr<Backend> &out) {
#if COMMRT_HAVE_NCCL
  return createNcclBackend(runtime().comm, out);
#else
  (void)out;
  return fail(COMMRT_ERROR_UNAVAILABLE,
              "the NCCL backend was not built (no CUDA compiler or NCCL was "
              "found when commrt was configured)");
#endif
}

/// Brings the runtime up with the backend `requested`. AUTO keeps the
/// backend in use, or picks one as commrt.h describes; another backend
/// replaces the one in use when it can be created.
commrt_status ensureBackend(commrt_backend requested) {
  if (commrt_status status = ensureMpi())
    return status;
  Runtime &rt = runtime();
  if (rt.backend &&
      (requested == COMMRT_BACKEND_AUTO || rt.backend->kind() == requested))
    return COMMRT_SUCCESS;
  if (rt.comm == MPI_COMM_NULL) {
    if (int error = MPI_Comm_dup(MPI_COMM_WORLD, &rt.comm))
      return failMpi("MPI_Comm_dup", error);
    MPI_Comm_set_errhandler(rt.comm, MPI_ERRORS_RETURN);
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
  rt.backend = backend ? std::move(backend) : createMpiBackend(rt.comm);
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

/// An argument of a collective that every rank must pass alike.
struct SharedArgument {
  const char *name;
  int64_t value;
};

/// With consistency checks on, makes all ranks agree on argument validation:
/// every rank fails with INVALID_ARGUMENT when any rank's `localStatus` is a
/// failure, and with MISMATCH when the ranks' `arguments` differ. With checks
/// off, returns `localStatus`.
commrt_status agree(commrt_status localStatus,
                    std::initializer_list<SharedArgument> arguments) {
  Runtime &rt = runtime();
  if (!rt.checks)
    return localStatus;
  // One MAX-allreduce of [invalid rank or -1, values..., ~values...]: the
  // maximum of ~v is ~min(v), and ~ cannot overflow.
  const SharedArgument *shared = arguments.begin();
  const int n = static_cast<int>(arguments.size());
  std::vector<int64_t> values(1 + 2 * n);
  int rank;
  MPI_Comm_rank(rt.comm, &rank);
  values[0] = localStatus == COMMRT_SUCCESS ? -1 : rank;
  for (int i = 0; i < n; ++i) {
    values[1 + i] = shared[i].value;
    values[1 + n + i] = ~shared[i].value;
  }
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
    if (min != max)
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", shared[i].name,
                  " (min ", min, ", max ", max, ")");
  }
  return COMMRT_SUCCESS;
}

/// Fails unless `reduce` is a commrt_reduce.
commrt_status checkReduce(int32_t reduce) {
  return checkEnum("reduce", reduce, "commrt_reduce", COMMRT_SUM, COMMRT_MIN);
}

} // namespace

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
  return inFunction("commrt_init", ensureBackend(COMMRT_BACKEND_AUTO));
}

int32_t commrt_init_backend(int32_t backend) {
  commrt_status status = checkEnum("backend", backend, "commrt_backend",
                                   COMMRT_BACKEND_AUTO, COMMRT_BACKEND_NCCL);
  if (status == COMMRT_SUCCESS)
    status = ensureBackend(static_cast<commrt_backend>(backend));
  return inFunction("commrt_init_backend", status);
}

int32_t commrt_finalize(void) {
  commrt_status status = checkNotFinalized();
  if (status == COMMRT_SUCCESS)
    status = shutdown();
  return inFunction("commrt_finalize", status);
}

int32_t commrt_rank(void) {
  int rank = -1;
  if (inFunction("commrt_rank", ensureMpi()) == COMMRT_SUCCESS)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int32_t commrt_size(void) {
  int size = -1;
  if (inFunction("commrt_size", ensureMpi()) == COMMRT_SUCCESS)
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int32_t commrt_backend_in_use(void) {
  if (inFunction("commrt_backend_in_use", ensureBackend(COMMRT_BACKEND_AUTO)) !=
      COMMRT_SUCCESS)
    return -1;
  return runtime().backend->kind();
}

int32_t commrt_allreduce(void *buffer, int64_t count, int32_t dtype,
                         int32_t reduce) {
  return inFunction("commrt_allreduce", [&] {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status =
          checkEnum("dtype", dtype, "commrt_dtype", COMMRT_F32, COMMRT_BF16);
    if (status == COMMRT_SUCCESS)
      status = checkReduce(reduce);
    status =
        agree(status, {{"count", count}, {"dtype", dtype}, {"reduce", reduce}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    return runtime().backend->allreduce(buffer, count,
                                        static_cast<commrt_dtype>(dtype),
                                        static_cast<commrt_reduce>(reduce));
  }());
}

int32_t commrt_allreduce_wire(float *buffer, int64_t count, int32_t wire,
                              int32_t reduce, float prescale) {
  return inFunction("commrt_allreduce_wire", [&] {
    if (commrt_status status = ensureBackend(COMMRT_BACKEND_AUTO))
      return status;
    commrt_status status = checkBuffer(buffer, count);
    if (status == COMMRT_SUCCESS)
      status = checkEnum("wire", wire, "16-bit commrt_dtype", COMMRT_F16,
                         COMMRT_BF16);
    if (status == COMMRT_SUCCESS)
      status = checkReduce(reduce);
    if (status == COMMRT_SUCCESS &&
        (!std::isfinite(prescale) || prescale == 0.0f))
      status = fail(COMMRT_ERROR_INVALID_ARGUMENT, "prescale ", prescale,
                    " is not a finite nonzero number");
    status =
        agree(status, {{"count", count}, {"wire", wire}, {"reduce", reduce}});
    if (status != COMMRT_SUCCESS || count == 0)
      return status;
    return runtime().backend->allreduceWire(
        buffer, count, static_cast<commrt_dtype>(wire),
        static_cast<commrt_reduce>(reduce), prescale);
  }());
}

int32_t commrt_set_consistency_checks(int32_t enabled) {
  commrt_status status = checkNotFinalized();
  if (status == COMMRT_SUCCESS && enabled != 0 && enabled != 1)
    status = fail(COMMRT_ERROR_INVALID_ARGUMENT, "enabled ", enabled,
                  " is not 0 or 1");
  if (status == COMMRT_SUCCESS)
    runtime().checks = enabled;
  return inFunction("commrt_set_consistency_checks", status);
}

const char *commrt_last_error(void) { return lastError.c_str(); }

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
  }
  return "COMMRT_UNKNOWN_STATUS";
}

} // extern "C"
