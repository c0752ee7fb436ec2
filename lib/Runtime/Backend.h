//===- Backend.h - Runtime backend interface and error helpers --*- C++ -*-===//

#ifndef COMMRT_BACKEND_H
#define COMMRT_BACKEND_H

#include "commrt/commrt.h"

#include <mpi.h>

#include <memory>
#include <sstream>
#include <string>

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

/// Reports the MPI error code `error` returned by `call` as a backend error.
commrt_status failMpi(const char *call, int error);

/// A communication backend. Arguments reaching it have been validated: counts
/// are positive, enums in range, buffers non-null. Failures return a status
/// and set the last error without naming the entry point; the caller prefixes
/// it.
class Backend {
public:
  virtual ~Backend() = default;

  /// The commrt_backend this object implements.
  virtual commrt_backend kind() const = 0;

  /// In-place allreduce of `count` elements of `dtype` at `buffer`.
  virtual commrt_status allreduce(void *buffer, int64_t count,
                                  commrt_dtype dtype, commrt_reduce reduce) = 0;

  /// In-place allreduce of `count` f32 elements at `buffer` sent as the
  /// 16-bit `wire` type after scaling by `prescale` (see
  /// commrt_allreduce_wire).
  virtual commrt_status allreduceWire(float *buffer, int64_t count,
                                      commrt_dtype wire, commrt_reduce reduce,
                                      float prescale) = 0;
};

/// Creates the MPI backend over `comm`, a communicator whose error handler
/// returns errors.
std::unique_ptr<Backend> createMpiBackend(MPI_Comm comm);

#if COMMRT_HAVE_NCCL
/// Creates the NCCL backend, bootstrapped over `comm`. Fails with
/// COMMRT_ERROR_UNAVAILABLE on every rank when any rank sees no CUDA device.
/// Collective over `comm`.
commrt_status createNcclBackend(MPI_Comm comm, std::unique_ptr<Backend> &out);
#endif

} // namespace commrt

#endif // COMMRT_BACKEND_H
