//===- NcclSupport.h - Error helpers of the NCCL backend --------*- C++ -*-===//
//
// Shared by the NCCL backend's allreduce plans (NcclBackend.cpp) and its
// sparse allreduce (NcclSparse.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_NCCLSUPPORT_H
#define COMMRT_NCCLSUPPORT_H

#include "Backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

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

} // namespace commrt

#endif // COMMRT_NCCLSUPPORT_H
