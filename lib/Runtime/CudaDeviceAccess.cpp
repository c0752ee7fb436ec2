//===- CudaDeviceAccess.cpp - The MPI backend's CUDA device buffers -------===//
//
// DeviceAccess (DeviceStaging.h) for CUDA: buffers located with
// cuPointerGetAttributes through a PointerCache, each lane a non-blocking
// stream of the device that was current when the backend was made, with a
// CudaStagingQueue on it, pinned host staging and device scratch. Managed
// memory counts as host memory here: the host reads it, and MPI with it.
//
//===----------------------------------------------------------------------===//

#include "CudaStagingQueue.h"
#include "DeviceStaging.h"
#include "NcclSupport.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

using namespace commrt;

namespace {

/// Whether the MPI library in use reads device memory: Open MPI says so at
/// run time, as the library may have been built otherwise than its headers.
bool mpiIsCudaAware() {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

class CudaLane final : public DeviceLane {
public:
  CudaLane(int device, cudaStream_t stream)
      : device(device), stream(stream), pinned(makePinnedStaging()) {}
  ~CudaLane() override {
    // The scratch is freed after this, once the stream is done with it.
    cudaSetDevice(device);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }

  commrt_status markCaller(std::function<commrt_status()> &orderLane) override {
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    auto callerWork = std::make_shared<CallerOrder>();
    COMMRT_TRY(callerWork->record());
    orderLane = [this, callerWork] {
      COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
      return callerWork->orderAfter(stream);
    };
    return COMMRT_SUCCESS;
  }

  commrt_status queue(commrt_dtype dtype, commrt_reduce reduce,
                      std::unique_ptr<StagingQueue> &made) override {
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    made = std::make_unique<CudaStagingQueue>(stream, dtype, reduce);
    return COMMRT_SUCCESS;
  }

  StagingBuffers &staging() override { return *pinned; }

  commrt_status scratch(Slot slot, size_t bytes, void *&memory) override {
    Scratch &held = deviceScratch[static_cast<int>(slot)];
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    COMMRT_TRY(held.reserve(bytes, stream));
    memory = held.as<void>();
    return COMMRT_SUCCESS;
  }

private:
  int device;
  cudaStream_t stream;
  std::unique_ptr<StagingBuffers> pinned;
  /// By Slot.
  Scratch deviceScratch[2];
};

/// cuPointerGetAttributes, reached through the runtime (commrt links the
/// CUDA runtime, not the driver library).
using PointerAttributesFunction = CUresult (*)(unsigned, CUpointer_attribute *,
                                               void **, CUdeviceptr);

class CudaDeviceAccess final : public DeviceAccess {
public:
  CudaDeviceAccess(int device, PointerAttributesFunction attributesOf)
      : device(device), cudaAware(mpiIsCudaAware()),
        cache(
            [attributesOf](const void *pointer, PointerInfo &info) {
              return describe(attributesOf, pointer, info);
            },
            [attributesOf](const void *pointer, uint64_t &id) {
              CUpointer_attribute asked[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID};
              unsigned long long bufferId = 0;
              void *answers[] = {&bufferId};
              COMMRT_TRY(checkDriver(attributesOf(
                  1, asked, answers, reinterpret_cast<CUdeviceptr>(pointer))));
              id = bufferId;
              return COMMRT_SUCCESS;
            }) {}

  commrt_status locate(const std::vector<const void *> &pointers,
                       const NameOf &nameOf,
                       std::vector<bool> &onDevice) override {
    // The driver's queries need the device's context current on this
    // thread, which the runtime makes current with the device.
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    std::vector<PointerInfo> infos;
    COMMRT_TRY(cache.locate(pointers, infos));
    onDevice.clear();
    for (size_t i = 0; i < infos.size(); ++i) {
      if (infos[i].onDevice && infos[i].device != device)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, nameOf(i),
                    " is memory of CUDA device ", infos[i].device,
                    ", but this rank's MPI backend stages device memory of "
                    "device ",
                    device, " (the device current when it was made)");
      onDevice.push_back(infos[i].onDevice);
    }
    return COMMRT_SUCCESS;
  }

  commrt_status makeLane(std::unique_ptr<DeviceLane> &lane) override {
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    cudaStream_t stream = nullptr;
    COMMRT_TRY(
        checkCuda("cudaStreamCreateWithFlags",
                  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
    lane = std::make_unique<CudaLane>(device, stream);
    return COMMRT_SUCCESS;
  }

  bool mpiReadsDevice() const override { return cudaAware; }

private:
  static commrt_status checkDriver(CUresult result) {
    if (result == CUDA_SUCCESS)
      return COMMRT_SUCCESS;
    return fail(COMMRT_ERROR_BACKEND,
                "cuPointerGetAttributes failed (CUresult ",
                static_cast<int>(result), ")");
  }

  /// Everything PointerInfo holds of `pointer`. An address CUDA does not
  /// know is host memory (the call then succeeds with empty attributes).
  static commrt_status describe(PointerAttributesFunction attributesOf,
                                const void *pointer, PointerInfo &info) {
    unsigned memoryType = 0;
    int ordinal = -1;
    unsigned managed = 0;
    CUdeviceptr begin = 0;
    size_t bytes = 0;
    unsigned long long bufferId = 0;
    CUpointer_attribute asked[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,  CU_POINTER_ATTRIBUTE_BUFFER_ID};
    void *answers[] = {&memoryType, &ordinal, &managed,
                       &begin,      &bytes,   &bufferId};
    COMMRT_TRY(checkDriver(attributesOf(
        6, asked, answers, reinterpret_cast<CUdeviceptr>(pointer))));
    info = PointerInfo();
    info.onDevice = memoryType == CU_MEMORYTYPE_DEVICE && !managed;
    if (!info.onDevice)
      return COMMRT_SUCCESS;
    info.device = ordinal;
    info.begin = static_cast<uintptr_t>(begin);
    info.bytes = bytes;
    info.bufferId = bufferId;
    return COMMRT_SUCCESS;
  }

  int device;
  bool cudaAware;
  PointerCache cache;
};

} // namespace

std::unique_ptr<DeviceAccess> commrt::makeCudaDeviceAccess() {
  int devices = 0, device = 0;
  void *entry = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 ||
      cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &entry,
                                       /*cudaVersion=*/12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !entry ||
      // Creates the device's context, which the driver's queries need.
      cudaFree(nullptr) != cudaSuccess) {
    // Leave no sticky "no device" error for the caller's next CUDA call.
    cudaGetLastError();
    return nullptr;
  }
  return std::make_unique<CudaDeviceAccess>(
      device, reinterpret_cast<PointerAttributesFunction>(entry));
}
