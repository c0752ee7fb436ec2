//===- CudaStagingQueue.cpp - The staged ring's queue on a CUDA stream ----===//

#include "CudaStagingQueue.h"
#include "NcclSupport.h"
#include "cuda/WireKernels.h"

using namespace commrt;

CudaStagingQueue::~CudaStagingQueue() {
  for (auto &[marker, event] : marked)
    cudaEventDestroy(event);
  for (cudaEvent_t event : spare)
    cudaEventDestroy(event);
}

commrt_status CudaStagingQueue::copyToHost(void *to, const void *from,
                                           size_t bytes) {
  return checkCuda(
      "cudaMemcpyAsync (device to host staging)",
      cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream));
}

commrt_status CudaStagingQueue::copyToDevice(void *to, const void *from,
                                             size_t bytes) {
  return checkCuda(
      "cudaMemcpyAsync (host staging to device)",
      cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream));
}

commrt_status CudaStagingQueue::reduce(const void *from, void *into,
                                       int64_t count) {
  return checkCuda(
      "reduceInto (staged ring)",
      cuda::reduceInto(from, into, count, type, reduceKind, stream));
}

commrt_status
CudaStagingQueue::convert(const std::vector<Conversion> &conversions,
                          commrt_dtype from, commrt_dtype to, double scale) {
  std::vector<cuda::ConvertSegment> segments;
  segments.reserve(conversions.size());
  for (const Conversion &conversion : conversions)
    segments.push_back({conversion.input, conversion.output, conversion.count});
  return checkCuda("convertSegments (MPI backend's device plan)",
                   cuda::convertSegments(segments.data(), segments.size(), from,
                                         to, scale, stream));
}

commrt_status CudaStagingQueue::mark(int64_t &marker) {
  cudaEvent_t event;
  if (!spare.empty()) {
    event = spare.back();
    spare.pop_back();
  } else {
    // Blocking sync: a thread that waits for the event sleeps instead of
    // holding a core.
    COMMRT_TRY(
        checkCuda("cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&event, cudaEventDisableTiming |
                                                       cudaEventBlockingSync)));
  }
  if (commrt_status status =
          checkCuda("cudaEventRecord", cudaEventRecord(event, stream))) {
    spare.push_back(event);
    return status;
  }
  marker = ++lastMarker;
  marked.emplace_back(marker, event);
  return COMMRT_SUCCESS;
}

commrt_status CudaStagingQueue::eventOf(int64_t marker,
                                        cudaEvent_t &event) const {
  for (const auto &[mark, recorded] : marked)
    if (mark == marker) {
      event = recorded;
      return COMMRT_SUCCESS;
    }
  return fail(COMMRT_ERROR_BACKEND, "staged ring: no event for mark ", marker);
}

void CudaStagingQueue::release(int64_t marker) {
  while (!marked.empty() && marked.front().first <= marker) {
    spare.push_back(marked.front().second);
    marked.pop_front();
  }
}

commrt_status CudaStagingQueue::reached(int64_t marker, bool &done) {
  // A mark released earlier was reached; the stream runs in order.
  if (marked.empty() || marker < marked.front().first) {
    done = marker <= lastMarker;
    return COMMRT_SUCCESS;
  }
  cudaEvent_t event;
  COMMRT_TRY(eventOf(marker, event));
  cudaError_t error = cudaEventQuery(event);
  if (error == cudaErrorNotReady) {
    done = false;
    return COMMRT_SUCCESS;
  }
  COMMRT_TRY(checkCuda("cudaEventQuery", error));
  done = true;
  release(marker);
  return COMMRT_SUCCESS;
}

commrt_status CudaStagingQueue::waitFor(int64_t marker) {
  if (marked.empty() || marker < marked.front().first)
    return COMMRT_SUCCESS;
  cudaEvent_t event;
  COMMRT_TRY(eventOf(marker, event));
  COMMRT_TRY(checkCuda("cudaEventSynchronize", cudaEventSynchronize(event)));
  release(marker);
  return COMMRT_SUCCESS;
}

std::unique_ptr<StagingBuffers> commrt::makePinnedStaging() {
  return std::make_unique<StagingBuffers>(
      [](size_t bytes) -> void * {
        void *buffer = nullptr;
        return cudaMallocHost(&buffer, bytes) == cudaSuccess ? buffer : nullptr;
      },
      [](void *buffer) {
        if (buffer)
          cudaFreeHost(buffer);
      });
}
