//===- NcclSupport.h - Helpers shared by the NCCL backend -------*- C++ -*-===//
//
// Shared by the NCCL backend's allreduce plans (NcclBackend.cpp) and its
// sparse allreduce (NcclSparse.cpp): error helpers and the scratch memory
// both keep across calls.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_NCCLSUPPORT_H
#define COMMRT_NCCLSUPPORT_H

#include "Backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>

namespace commrt {

/// Reports a failed CUDA `call` unless `error` is cudaSuccess.
commrt_status checkCuda(const char *call, cudaError_t error);

/// Reports a failed NCCL `call` on `comm` (may be null) unless `result` is
/// ncclSuccess.
commrt_status checkNccl(const char *call, ncclResult_t result, ncclComm_t comm);

/// Makes every rank fail when `localStatus` failed on any rank; returns
/// `localStatus` where it failed and `othersStatus` elsewhere. Collective
/// over `comm`: ranks call it before entering NCCL, so that none waits in a
/// collective for a rank that gave up.
commrt_status agreeOnSuccess(MPI_Comm comm, commrt_status localStatus,
                             commrt_status othersStatus, const char *what);

/// Names where a buffer is, for messages.
inline const char *placeName(bool onDevice) {
  return onDevice ? "device memory" : "host memory";
}

/// Runs `calls` between ncclGroupStart and ncclGroupEnd, ending the group
/// even when a call fails; returns the first failure.
commrt_status grouped(ncclComm_t comm,
                      const std::function<commrt_status()> &calls);

/// Sets `onDevice` to whether `pointer`, the argument `name`, is device (or
/// managed) memory, which NCCL reduces in place; device memory must be
/// `device`'s, the backend's.
commrt_status locateBuffer(const char *name, const void *pointer, int device,
                           bool &onDevice);

/// Makes every rank take the same path for a call's buffers: fails on every
/// rank when `localStatus` (the outcome of locating them) failed on any,
/// or with COMMRT_ERROR_MISMATCH when some ranks found `onDevice` buffers
/// and others host ones. `what` names the buffers ("buffer") in the
/// messages.
/// Collective over `comm`.
commrt_status agreeOnPlacement(MPI_Comm comm, commrt_status localStatus,
                               bool onDevice, const char *what);

/// Orders the backend's streams after the caller's work. A gradient that the
/// caller's kernels are still computing when a collective starts must not be
/// read before they finish: record() marks the work issued so far on the
/// legacy default stream (the stream of kernels launched without one, and
/// PyTorch's default stream, which also waits for the blocking streams), and
/// orderAfter() makes a stream's later work wait for it. Record once per
/// call, on the caller's thread, before enqueueing.
class CallerOrder {
public:
  CallerOrder() = default;
  ~CallerOrder() {
    if (event)
      cudaEventDestroy(event);
  }
  CallerOrder(const CallerOrder &) = delete;
  CallerOrder &operator=(const CallerOrder &) = delete;

  /// Records the caller's work issued so far (the current device's).
  commrt_status record();

  /// Makes the work enqueued on `stream` from now on wait for what the last
  /// record() marked.
  commrt_status orderAfter(cudaStream_t stream);

private:
  cudaEvent_t event = nullptr;
};

/// Device or pinned host memory that grows on demand and is kept across
/// calls.
class Scratch {
public:
  /// Scratch of pinned host memory when `pinned`, device memory otherwise.
  explicit Scratch(bool pinned = false) : pinned(pinned) {}
  ~Scratch() { release(); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;

  /// Grows the memory to at least `bytes` (at least 256: never null), once
  /// the work queued on `stream` is done with the old memory. Its contents
  /// are then lost.
  commrt_status reserve(size_t bytes, cudaStream_t stream);

  /// The memory, as an array of `T`.
  template <typename T> T *as() const { return static_cast<T *>(data); }

private:
  /// Frees the memory.
  void release();

  bool pinned;
  void *data = nullptr;
  size_t capacity = 0;
};

/// Device scratch memory with a pinned host mirror of the same size, through
/// which the host reads it.
struct MirroredScratch {
  Scratch device, pinned{true};

  /// Grows both to at least `bytes` (see Scratch::reserve).
  commrt_status reserve(size_t bytes, cudaStream_t stream) {
    COMMRT_TRY(device.reserve(bytes, stream));
    return pinned.reserve(bytes, stream);
  }
};

} // namespace commrt

#endif // COMMRT_NCCLSUPPORT_H
