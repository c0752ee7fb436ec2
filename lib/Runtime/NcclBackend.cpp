//===- NcclBackend.cpp - Allreduce over NCCL, bootstrapped over MPI -------===//

#include "Backend.h"
#include "WireFormat.h"
#include "cuda/WireKernels.h"

#include <cuda_runtime.h>
#include <nccl.h>

using namespace commrt;

namespace {

/// Reports a failed CUDA `call` unless `error` is cudaSuccess.
commrt_status checkCuda(const char *call, cudaError_t error) {
  if (error == cudaSuccess)
    return COMMRT_SUCCESS;
  return fail(COMMRT_ERROR_BACKEND, call, " returned ", cudaGetErrorName(error),
              " (", cudaGetErrorString(error), ")");
}

/// Reports a failed NCCL `call` on `comm` (may be null) unless `result` is
/// ncclSuccess.
commrt_status checkNccl(const char *call, ncclResult_t result,
                        ncclComm_t comm) {
  if (result == ncclSuccess)
    return COMMRT_SUCCESS;
  return fail(COMMRT_ERROR_BACKEND, call, " returned ",
              ncclGetErrorString(result), ": ", ncclGetLastError(comm));
}

ncclDataType_t ncclType(commrt_dtype dtype) {
  switch (dtype) {
  case COMMRT_F32:
    return ncclFloat32;
  case COMMRT_F64:
    return ncclFloat64;
  case COMMRT_F16:
    return ncclFloat16;
  case COMMRT_BF16:
    return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(commrt_reduce reduce) {
  switch (reduce) {
  case COMMRT_SUM:
    return ncclSum;
  case COMMRT_AVG:
    return ncclAvg;
  case COMMRT_MAX:
    return ncclMax;
  case COMMRT_MIN:
    return ncclMin;
  }
  return ncclSum;
}

class NcclBackend final : public Backend {
public:
  NcclBackend(ncclComm_t comm, int size, int device, cudaStream_t stream)
      : comm(comm), size(size), device(device), stream(stream) {}

  ~NcclBackend() override {
    ncclCommDestroy(comm);
    cudaStreamDestroy(stream);
    cudaFree(scratch);
  }

  commrt_backend kind() const override { return COMMRT_BACKEND_NCCL; }

  commrt_status allreduce(void *buffer, int64_t count, commrt_dtype dtype,
                          commrt_reduce reduce) override {
    size_t bytes = count * elementSize(dtype);
    bool onDevice;
    void *data = buffer;
    if (commrt_status status = locate(buffer, onDevice))
      return status;
    if (!onDevice) {
      if (commrt_status status = reserveScratch(bytes))
        return status;
      data = scratch;
      if (commrt_status status = copy(data, buffer, bytes))
        return status;
    }
    if (commrt_status status =
            checkNccl("ncclAllReduce",
                      ncclAllReduce(data, data, count, ncclType(dtype),
                                    ncclOp(reduce), comm, stream),
                      comm))
      return status;
    if (!onDevice)
      if (commrt_status status = copy(buffer, data, bytes))
        return status;
    return synchronize();
  }

  commrt_status allreduceWire(float *buffer, int64_t count, commrt_dtype wire,
                              commrt_reduce reduce, float prescale) override {
    size_t floatBytes = count * sizeof(float);
    bool onDevice;
    if (commrt_status status = locate(buffer, onDevice))
      return status;
    // Scratch holds the f32 staging copy of a host buffer, then the wire
    // values.
    size_t stagingBytes = onDevice ? 0 : floatBytes;
    if (commrt_status status = reserveScratch(stagingBytes + count * 2))
      return status;
    float *data = onDevice ? buffer : static_cast<float *>(scratch);
    auto *packed = reinterpret_cast<uint16_t *>(static_cast<char *>(scratch) +
                                                stagingBytes);
    if (!onDevice)
      if (commrt_status status = copy(data, buffer, floatBytes))
        return status;
    if (commrt_status status =
            checkCuda("packWire", cuda::packWire(data, packed, count, wire,
                                                 prescale, stream)))
      return status;
    if (commrt_status status =
            checkNccl("ncclAllReduce",
                      ncclAllReduce(packed, packed, count, ncclType(wire),
                                    ncclOp(wireReduce(reduce)), comm, stream),
                      comm))
      return status;
    if (commrt_status status = checkCuda(
            "unpackWire",
            cuda::unpackWire(packed, data, count, wire,
                             wireUnpackScale(reduce, prescale, size), stream)))
      return status;
    if (!onDevice)
      if (commrt_status status = copy(buffer, data, floatBytes))
        return status;
    return synchronize();
  }

private:
  /// Makes the backend's device current on the calling thread and sets
  /// `onDevice` to whether `pointer` is device (or managed) memory, which
  /// NCCL can reduce in place; host memory is staged.
  commrt_status locate(const void *pointer, bool &onDevice) {
    if (commrt_status status =
            checkCuda("cudaSetDevice", cudaSetDevice(device)))
      return status;
    cudaPointerAttributes attributes;
    if (commrt_status status =
            checkCuda("cudaPointerGetAttributes",
                      cudaPointerGetAttributes(&attributes, pointer)))
      return status;
    onDevice = attributes.type == cudaMemoryTypeDevice ||
               attributes.type == cudaMemoryTypeManaged;
    return COMMRT_SUCCESS;
  }

  /// Grows the device scratch buffer to at least `bytes`.
  commrt_status reserveScratch(size_t bytes) {
    if (bytes <= scratchBytes)
      return COMMRT_SUCCESS;
    cudaFree(scratch);
    scratch = nullptr;
    scratchBytes = 0;
    if (commrt_status status =
            checkCuda("cudaMalloc", cudaMalloc(&scratch, bytes)))
      return status;
    scratchBytes = bytes;
    return COMMRT_SUCCESS;
  }

  /// Enqueues a copy of `bytes` between host and device on the stream.
  commrt_status copy(void *to, const void *from, size_t bytes) {
    return checkCuda(
        "cudaMemcpyAsync",
        cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream));
  }

  /// Waits for the work enqueued on the stream.
  commrt_status synchronize() {
    return checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  }

  ncclComm_t comm;
  int size;
  int device;
  /// The dedicated stream all work of the backend runs on.
  cudaStream_t stream;
  /// Device memory for staging host buffers and wire values.
  void *scratch = nullptr;
  size_t scratchBytes = 0;
};

/// Picks this rank's device: its rank among the ranks of its node, modulo
/// the devices it sees. Fails with UNAVAILABLE when it sees none.
/// Collective over `comm` whatever the outcome.
commrt_status pickDevice(MPI_Comm comm, int &device) {
  MPI_Comm node;
  if (int mpiError = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0,
                                         MPI_INFO_NULL, &node))
    return failMpi("MPI_Comm_split_type", mpiError);
  int localRank;
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_free(&node);
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess)
    return fail(COMMRT_ERROR_UNAVAILABLE,
                "no CUDA device visible: cudaGetDeviceCount returned ",
                cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
  if (devices == 0)
    return fail(COMMRT_ERROR_UNAVAILABLE,
                "no CUDA device visible: cudaGetDeviceCount returned 0 "
                "devices");
  device = localRank % devices;
  return checkCuda("cudaSetDevice", cudaSetDevice(device));
}

/// Makes every rank fail when `localStatus` failed on any rank; returns
/// `localStatus` where it failed and `othersStatus` elsewhere.
commrt_status agreeOnSuccess(MPI_Comm comm, commrt_status localStatus,
                             commrt_status othersStatus, const char *what) {
  int ok = localStatus == COMMRT_SUCCESS;
  if (int error = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm))
    return failMpi("MPI_Allreduce", error);
  if (localStatus != COMMRT_SUCCESS || ok)
    return localStatus;
  return fail(othersStatus, what, " failed on another rank");
}

} // namespace

commrt_status commrt::createNcclBackend(MPI_Comm comm,
                                        std::unique_ptr<Backend> &out) {
  int rank, size, device;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Agree before any rank enters NCCL, so that none waits for one that
  // gave up.
  if (commrt_status status =
          agreeOnSuccess(comm, pickDevice(comm, device),
                         COMMRT_ERROR_UNAVAILABLE, "CUDA device selection"))
    return status;

  struct {
    int ok;
    ncclUniqueId id;
  } bootstrap = {};
  commrt_status status = COMMRT_SUCCESS;
  if (rank == 0) {
    status =
        checkNccl("ncclGetUniqueId", ncclGetUniqueId(&bootstrap.id), nullptr);
    bootstrap.ok = status == COMMRT_SUCCESS;
  }
  if (int error = MPI_Bcast(&bootstrap, sizeof bootstrap, MPI_BYTE, 0, comm))
    return failMpi("MPI_Bcast", error);
  if (!bootstrap.ok)
    return rank == 0
               ? status
               : fail(COMMRT_ERROR_BACKEND, "ncclGetUniqueId failed on rank 0");

  ncclComm_t nccl = nullptr;
  status =
      checkNccl("ncclCommInitRank",
                ncclCommInitRank(&nccl, size, bootstrap.id, rank), nullptr);
  cudaStream_t stream = nullptr;
  if (status == COMMRT_SUCCESS)
    status =
        checkCuda("cudaStreamCreateWithFlags",
                  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  status =
      agreeOnSuccess(comm, status, COMMRT_ERROR_BACKEND, "NCCL initialisation");
  if (status != COMMRT_SUCCESS) {
    if (nccl)
      ncclCommAbort(nccl);
    if (stream)
      cudaStreamDestroy(stream);
    return status;
  }
  out = std::make_unique<NcclBackend>(nccl, size, device, stream);
  return COMMRT_SUCCESS;
}
