//===- CudaStagingQueue.h - The staged ring on a CUDA stream ---*- C++ -*-===//
//
// StagingQueue (StagedRing.h) on a CUDA stream: copies with cudaMemcpyAsync,
// the reduction with cuda::reduceInto (the host's reduceElements, bit for
// bit), conversions with cuda::convertSegments (the host's convert()), marks
// with events that block the waiting thread instead of spinning. Host staging
// for it is pinned (cudaMallocHost), so that the copies run asynchronously to
// the thread that drives MPI.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_CUDASTAGINGQUEUE_H
#define COMMRT_CUDASTAGINGQUEUE_H

#include "StagedRing.h"

#include <cuda_runtime.h>

#include <deque>
#include <memory>
#include <utility>
#include <vector>

namespace commrt {

class CudaStagingQueue final : public StagingQueue {
public:
  /// A queue on `stream` (the caller's, which outlives the queue) whose
  /// reductions combine elements of `type` by `reduce`.
  CudaStagingQueue(cudaStream_t stream, commrt_dtype type, commrt_reduce reduce)
      : stream(stream), type(type), reduceKind(reduce) {}
  ~CudaStagingQueue() override;

  commrt_status copyToHost(void *to, const void *from, size_t bytes) override;
  commrt_status copyToDevice(void *to, const void *from, size_t bytes) override;
  commrt_status reduce(const void *from, void *into, int64_t count) override;
  commrt_status convert(const std::vector<Conversion> &conversions,
                        commrt_dtype from, commrt_dtype to,
                        double scale) override;
  commrt_status mark(int64_t &marker) override;
  commrt_status reached(int64_t marker, bool &done) override;
  commrt_status waitFor(int64_t marker) override;

private:
  /// The event recorded at `marker`, which must have been marked and not
  /// yet found reached.
  commrt_status eventOf(int64_t marker, cudaEvent_t &event) const;
  /// Returns the events of `marker` and the marks before it to the spares.
  void release(int64_t marker);

  cudaStream_t stream;
  commrt_dtype type;
  commrt_reduce reduceKind;
  int64_t lastMarker = 0;
  /// Events recorded and not yet found reached, by increasing mark.
  std::deque<std::pair<int64_t, cudaEvent_t>> marked;
  std::vector<cudaEvent_t> spare;
};

/// Host staging for a CudaStagingQueue: pinned memory.
std::unique_ptr<StagingBuffers> makePinnedStaging();

} // namespace commrt

#endif // COMMRT_CUDASTAGINGQUEUE_H
