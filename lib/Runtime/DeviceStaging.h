//===- DeviceStaging.h - The MPI backend's device buffers -------*- C++ -*-===//
//
// How the MPI backend takes device buffers (the CUDA-aware MPI design). An
// allreduce plan of device buffers is packed into its wire type on a queue
// of device work (StagingQueue, StagedRing.h), reduced, and unpacked there;
// where MPI cannot read device memory (an MPI that is not CUDA-aware, such
// as Debian's OpenMPI), the packed buffer goes through host memory in
// pipelined pieces of the staged ring (stagedRingAllreduce) where the ring
// reduces it, so that the copy of one piece overlaps the transfer of the
// one before, and whole otherwise. Any other collective's device buffers
// are staged through host memory whole (runStaged), and the host path runs
// over the copies. Where MPI is CUDA-aware (MPIX_Query_cuda_support), what
// MPI runs whole (MPI_Allreduce of f32 or f64, broadcasts, allgathers)
// takes the device pointers as they are. MpiBackend.cpp makes these
// choices.
//
// The logic here knows no CUDA: DeviceAccess says where a buffer is and
// gives each lane (a group's blocking calls, or one of its channels) a
// queue, host staging and device scratch. CUDA's lives in
// CudaDeviceAccess.cpp; the tests drive the backend with one whose "device
// memory" is host memory that they mark as device memory.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_DEVICESTAGING_H
#define COMMRT_DEVICESTAGING_H

#include "Backend.h"
#include "StagedRing.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace commrt {

/// Where a lane's collectives run device work: one per group's blocking
/// calls, one per channel. A lane is used by one thread at a time.
class DeviceLane {
public:
  virtual ~DeviceLane() = default;

  /// Marks the caller's device work issued so far, on the caller's thread
  /// when a collective is called or started, and sets `orderLane` to what
  /// makes the device work this lane enqueues next wait for it (to be run
  /// on the lane's thread, before the collective's device work).
  virtual commrt_status
  markCaller(std::function<commrt_status()> &orderLane) = 0;

  /// Sets `queue` to the lane's queue of device work, whose reductions
  /// combine elements of `dtype` by `reduce`.
  virtual commrt_status queue(commrt_dtype dtype, commrt_reduce reduce,
                              std::unique_ptr<StagingQueue> &queue) = 0;

  /// The lane's host staging, kept across calls.
  virtual StagingBuffers &staging() = 0;

  /// What the lane's device scratch holds.
  enum class Slot {
    /// A plan's buffers packed in the type they travel in.
    Wire,
    /// The staged ring's received segment.
    RingSegment,
  };

  /// Sets `scratch` to device memory of at least `bytes` bytes for `slot`,
  /// kept across calls (its contents are lost when it grows).
  virtual commrt_status scratch(Slot slot, size_t bytes, void *&scratch) = 0;
};

/// What an attribute lookup says of an address.
struct PointerInfo {
  /// Whether it is device memory (not managed memory, which the host reads).
  bool onDevice = false;
  /// The device it belongs to, for device memory.
  int device = -1;
  /// The allocation it lies in, for device memory: its first address, its
  /// size and its process-wide unique id, which no later allocation reuses
  /// (CUDA's CU_POINTER_ATTRIBUTE_BUFFER_ID).
  uintptr_t begin = 0;
  size_t bytes = 0;
  uint64_t bufferId = 0;
};

/// Where device allocations lie, cached across calls, so that a call's
/// buffers cost one query of an allocation's id per allocation they lie in,
/// instead of a full attribute lookup per buffer (a fused plan's buffers
/// mostly lie in a few allocations of a framework's caching allocator). A
/// cached allocation is trusted for a call only once the id of the
/// allocation now at its first buffer's address is still its own: memory
/// freed and allocated again, or freed and unmapped, has another id (or
/// none), and is looked up anew. Host memory is not cached.
class PointerCache {
public:
  /// Sets the PointerInfo of an address.
  using Describe = std::function<commrt_status(const void *, PointerInfo &)>;
  /// Sets the id of the allocation an address lies in (0 for none).
  using BufferIdOf = std::function<commrt_status(const void *, uint64_t &)>;

  PointerCache(Describe describe, BufferIdOf bufferIdOf)
      : describe(std::move(describe)), bufferIdOf(std::move(bufferIdOf)) {}

  /// Sets `infos` to what each of `pointers`, one call's buffers, is.
  commrt_status locate(const std::vector<const void *> &pointers,
                       std::vector<PointerInfo> &infos);

  /// The allocations cached.
  size_t size() const { return allocations.size(); }

private:
  Describe describe;
  BufferIdOf bufferIdOf;
  /// Device allocations by first address; they do not overlap.
  std::map<uintptr_t, PointerInfo> allocations;
};

/// The device memory the MPI backend can be handed.
class DeviceAccess {
public:
  virtual ~DeviceAccess() = default;

  /// The name of the argument that holds a call's pointer `i`, made only
  /// for an error's message.
  using NameOf = std::function<std::string(size_t i)>;

  /// Sets `onDevice` to whether each of `pointers`, one call's buffers, is
  /// device memory: a clear error, naming the argument by `nameOf`, where
  /// one is another device's.
  virtual commrt_status locate(const std::vector<const void *> &pointers,
                               const NameOf &nameOf,
                               std::vector<bool> &onDevice) = 0;

  /// Sets `lane` to a new lane.
  virtual commrt_status makeLane(std::unique_ptr<DeviceLane> &lane) = 0;

  /// Whether MPI reads and writes device memory itself (CUDA-aware MPI).
  virtual bool mpiReadsDevice() const = 0;
};

/// CUDA's device access (CudaDeviceAccess.cpp): null where commrt was built
/// without CUDA or no device is visible.
std::unique_ptr<DeviceAccess> makeCudaDeviceAccess();

/// Makes the device access of this process: CUDA's where commrt was built
/// with CUDA and a device is visible, none (null) otherwise; or, once
/// setDeviceAccessFactoryForTesting was called, what its factory makes.
std::unique_ptr<DeviceAccess> makeDeviceAccess();

/// Makes makeDeviceAccess() return what `factory` makes (for the tests; an
/// empty function restores the default). Set before the backend is created.
void setDeviceAccessFactoryForTesting(
    std::function<std::unique_ptr<DeviceAccess>()> factory);

/// Blocks until the caller's device work that `lane` was last ordered after
/// (DeviceLane::markCaller) has finished: before MPI reads device memory
/// itself.
commrt_status waitForCallerWork(DeviceLane &lane);

/// A buffer of a collective as it is staged: `bytes` bytes at `pointer`,
/// copied to the host before the host path runs when `in`, and back to the
/// device after it when `out`. Host buffers (`onDevice` clear) are used in
/// place.
struct StagedBuffer {
  void *pointer;
  size_t bytes;
  bool onDevice;
  bool in;
  bool out;
};

/// Runs `onHost` with a host pointer for each of `buffers`: the buffer
/// itself where it is host memory, else a copy in `lane`'s staging, filled
/// from the device first where the buffer is an input and copied back after
/// `onHost` succeeded where it is an output. Returns once the copies back
/// have finished.
/// With `trace`, the copies in and out are the phases STAGE_IN and STAGE_OUT
/// of that collective among `ranks` ranks.
commrt_status runStaged(
    const std::vector<StagedBuffer> &buffers, DeviceLane &lane,
    const std::function<commrt_status(const std::vector<void *> &hostPointers)>
        &onHost,
    const TraceContext *trace = nullptr, int ranks = 0);

/// The staged buffers of the dense `plan`: its buffers, then a sharded
/// plan's shard, with `onDevice`'s flag for each (one per buffer, then one
/// for the shard). An allreduce reads and writes every buffer; a
/// reduce-scatter reads the buffers and writes the shard; an all-gather
/// reads the shard (shardElements(total, ranks) elements) and writes the
/// buffers.
std::vector<StagedBuffer> stagedBuffersOf(const Plan &plan, int ranks,
                                          const std::vector<bool> &onDevice);

/// `plan` with its buffers (and shard) at `hostPointers`, in the order of
/// stagedBuffersOf.
Plan onHost(const Plan &plan, const std::vector<void *> &hostPointers);

} // namespace commrt

#endif // COMMRT_DEVICESTAGING_H
