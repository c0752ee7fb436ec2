//===- NcclBackend.cpp - Allreduce over NCCL, bootstrapped over MPI -------===//
//
// All work runs on CUDA streams: blocking collectives on the backend's main
// stream, which they synchronise; asynchronous ones on their channel's
// stream, each channel with an NCCL communicator of its own, and an event
// that commrt_test queries and commrt_wait synchronises. Host buffers are
// staged through device memory on the way in and through pinned host memory
// on the way out, from which a host function on the stream copies them to
// the caller's buffers, so that no step blocks the caller. Blocking sparse
// allreduces (NcclSparse.cpp) run on the main stream too, and so do
// broadcasts of device buffers; host buffers are broadcast over MPI. Every
// call's work first waits for the caller's work on the legacy default
// stream (CallerOrder).
//
// A started sparse allreduce waits for the host between its steps (counts
// and thresholds decide the next launch), so it runs on a thread of its
// channel's (ChannelThread.h), on the channel's stream and communicator,
// agreeing over a duplicate of the group's MPI communicator. From then on
// the channel's dense starts go through that thread too, so that each
// channel's NCCL calls are issued in the order they were started.
//
// A process group (commrt_group_split) has all of that of its own: an NCCL
// communicator that ncclCommSplit makes of the backend's when the group is
// split, with a main stream, and channels whose communicators are split from
// the group's by their first collective, over the group's MPI communicator
// (which bootstraps nothing, but agrees on failures and carries host
// buffers' sparse allreduces).
//
// A plan that asks for the hierarchical allreduce (its `algorithm`, or
// COMMRT_ALLREDUCE=hierarchical for the default one) reduces in two levels
// where the stream's ranks form several nodes of equal size (Hierarchy.h;
// as Horovod's hierarchical allreduce over NCCL): ncclReduceScatter within
// the node leaves each of its q ranks 1/q of the buffer reduced over the
// node, ncclAllReduce among the ranks with the same place on every node
// reduces that piece over all nodes, and ncclAllGather within the node
// gives every rank the whole; the last count % q elements take the flat
// ncclAllReduce. All in place, on the plan's stream, whose node and peers
// communicators are split from its own by the first such plan. Other
// algorithms are NCCL's own choice (NCCL_ALGO).
//
//===----------------------------------------------------------------------===//

#include "ChannelThread.h"
#include "Hierarchy.h"
#include "NcclSparse.h"
#include "NcclSupport.h"
#include "RingAllreduce.h"
#include "WireFormat.h"
#include "cuda/WireKernels.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>

using namespace commrt;

commrt_status commrt::checkCuda(const char *call, cudaError_t error) {
  if (error == cudaSuccess)
    return COMMRT_SUCCESS;
  return fail(COMMRT_ERROR_BACKEND, call, " returned ", cudaGetErrorName(error),
              " (", cudaGetErrorString(error), ")");
}

commrt_status commrt::checkNccl(const char *call, ncclResult_t result,
                                ncclComm_t comm) {
  if (result == ncclSuccess)
    return COMMRT_SUCCESS;
  return fail(COMMRT_ERROR_BACKEND, call, " returned ",
              ncclGetErrorString(result), ": ", ncclGetLastError(comm));
}

commrt_status CallerOrder::record() {
  if (!event)
    COMMRT_TRY(
        checkCuda("cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&event, cudaEventDisableTiming)));
  return checkCuda("cudaEventRecord", cudaEventRecord(event, cudaStreamLegacy));
}

commrt_status CallerOrder::orderAfter(cudaStream_t stream) {
  return checkCuda("cudaStreamWaitEvent",
                   cudaStreamWaitEvent(stream, event, 0));
}

commrt_status Scratch::reserve(size_t bytes, cudaStream_t stream) {
  bytes = std::max<size_t>(bytes, 256);
  if (bytes <= capacity)
    return COMMRT_SUCCESS;
  COMMRT_TRY(checkCuda("cudaStreamSynchronize", cudaStreamSynchronize(stream)));
  release();
  commrt_status status =
      pinned ? checkCuda("cudaMallocHost", cudaMallocHost(&data, bytes))
             : checkCuda("cudaMalloc", cudaMalloc(&data, bytes));
  if (status != COMMRT_SUCCESS) {
    data = nullptr;
    return status;
  }
  capacity = bytes;
  return COMMRT_SUCCESS;
}

void Scratch::release() {
  if (pinned)
    cudaFreeHost(data);
  else
    cudaFree(data);
  data = nullptr;
  capacity = 0;
}

commrt_status commrt::grouped(ncclComm_t comm,
                              const std::function<commrt_status()> &calls) {
  COMMRT_TRY(checkNccl("ncclGroupStart", ncclGroupStart(), comm));
  commrt_status status = calls();
  commrt_status ended = checkNccl("ncclGroupEnd", ncclGroupEnd(), comm);
  return status != COMMRT_SUCCESS ? status : ended;
}

commrt_status commrt::agreeOnSuccess(MPI_Comm comm, commrt_status localStatus,
                                     commrt_status othersStatus,
                                     const char *what) {
  int ok = localStatus == COMMRT_SUCCESS;
  if (int error = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm))
    return failMpi("MPI_Allreduce", error);
  if (localStatus != COMMRT_SUCCESS || ok)
    return localStatus;
  return fail(othersStatus, what, " failed on another rank");
}

namespace {

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

/// A copy from pinned staging memory to a caller's host buffer.
struct HostCopy {
  void *to;
  const void *from;
  size_t bytes;
};

/// The host function that finishes a plan with host buffers: `copies` is a
/// heap-allocated std::vector<HostCopy>, which it deletes.
void CUDART_CB copyToHost(void *copies) {
  auto *list = static_cast<std::vector<HostCopy> *>(copies);
  for (const HostCopy &copy : *list)
    std::memcpy(copy.to, copy.from, copy.bytes);
  delete list;
}

/// A stream with its NCCL communicator and the scratch memory of the plans
/// that run on it, kept and grown across plans.
struct Stream {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  /// Device memory for the fusion buffer and the staging of host buffers.
  Scratch device;
  /// Pinned host memory that results for host buffers pass through.
  Scratch pinned{true};
  /// The hierarchical allreduce's levels, split from `comm` by the first
  /// plan that asks for it (`levelsSplit`): the ranks of this rank's node,
  /// its place there and their number, and its peers on the other nodes.
  /// Null where the ranks do not form several nodes of more than one rank.
  ncclComm_t node = nullptr, peers = nullptr;
  int nodeRank = 0, nodeSize = 1;
  bool levelsSplit = false;
  /// A channel's stream that has run a sparse allreduce: from then on, all
  /// of the channel's work is issued by `thread`, in the order it was
  /// started, since the sparse allreduce's steps wait for the host. With
  /// it, a duplicate of the group's MPI communicator, over which the
  /// thread's collectives agree (and reduce host buffers), and the sparse
  /// allreduce's scratch memory.
  std::unique_ptr<ChannelThread> thread;
  MPI_Comm agreements = MPI_COMM_NULL;
  std::unique_ptr<NcclSparse> sparse;

  /// Completes the work on the stream, then frees everything.
  ~Stream() {
    if (thread)
      thread->stop();
    sparse.reset();
    if (agreements != MPI_COMM_NULL)
      MPI_Comm_free(&agreements);
    if (stream)
      cudaStreamSynchronize(stream);
    if (peers)
      ncclCommDestroy(peers);
    if (node)
      ncclCommDestroy(node);
    if (comm)
      ncclCommDestroy(comm);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

/// A collective enqueued on a channel's stream, complete when its event is.
class NcclOperation final : public Operation {
public:
  explicit NcclOperation(cudaEvent_t event) : event(event) {}
  ~NcclOperation() override { cudaEventDestroy(event); }

  commrt_status test(bool &done) override {
    cudaError_t error = cudaEventQuery(event);
    done = error != cudaErrorNotReady;
    if (error == cudaErrorNotReady)
      return COMMRT_SUCCESS;
    return checkCuda("cudaEventQuery", error);
  }

  commrt_status wait() override {
    return checkCuda("cudaEventSynchronize", cudaEventSynchronize(event));
  }

private:
  cudaEvent_t event;
};

/// A collective issued by a channel's thread: the caller's work it waits
/// for, and once issued, its outcome and the event recorded after its GPU
/// work (none where the work was done before the outcome was set).
struct ChannelTask {
  ~ChannelTask() {
    if (event)
      cudaEventDestroy(event);
  }
  CallerOrder callerWork;
  cudaEvent_t event = nullptr;
  TaskOutcome outcome;
};

/// A collective queued on a channel's thread, complete once issued and, if
/// it recorded an event, once the event is.
class ChannelTaskOperation final : public Operation {
public:
  explicit ChannelTaskOperation(std::shared_ptr<ChannelTask> task)
      : task(std::move(task)) {}

  commrt_status test(bool &done) override {
    done = false;
    if (!task->outcome.isDone())
      return COMMRT_SUCCESS;
    done = true;
    if (!task->event)
      return COMMRT_SUCCESS;
    cudaError_t error = cudaEventQuery(task->event);
    done = error != cudaErrorNotReady;
    if (error == cudaErrorNotReady)
      return COMMRT_SUCCESS;
    return checkCuda("cudaEventQuery", error);
  }

  commrt_status wait() override {
    COMMRT_TRY(task->outcome.wait());
    if (!task->event)
      return COMMRT_SUCCESS;
    return checkCuda("cudaEventSynchronize", cudaEventSynchronize(task->event));
  }

  commrt_status waitFor(double seconds, bool &done) override {
    using Clock = std::chrono::steady_clock;
    Clock::time_point start = Clock::now();
    done = false;
    if (!task->outcome.waitFor(seconds))
      return COMMRT_SUCCESS;
    // The GPU work after the channel's issue: tested as any operation.
    std::chrono::duration<double> waited = Clock::now() - start;
    return Operation::waitFor(std::max(0.0, seconds - waited.count()), done);
  }

private:
  std::shared_ptr<ChannelTask> task;
};

/// Rounds `bytes` up to a multiple of 256, the alignment of cudaMalloc.
size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The ranks of a process group (0: all ranks), as the NCCL backend runs
/// their collectives.
struct Group {
  /// The group's MPI communicator (the caller's): the backend's bootstrap
  /// communicator for group 0.
  MPI_Comm bootstrap = MPI_COMM_NULL;
  /// This rank's rank in the group, and the group's size.
  int rank = 0;
  int size = 0;
  /// The stream of blocking collectives.
  Stream main;
  /// The channels' streams, created by their first collective. Declared
  /// after `main`, whose communicator they were split from, so that they
  /// are destroyed first.
  std::vector<std::unique_ptr<Stream>> channels;
  /// The scratch memory of sparse allreduces, created by the first one.
  std::unique_ptr<NcclSparse> sparseState;
};

class NcclBackend final : public Backend {
public:
  NcclBackend(MPI_Comm bootstrap, ncclComm_t comm, int rank, int size,
              int device, cudaStream_t stream, int channels,
              const AllreduceConfig &config)
      : device(device), channelCount(channels), config(config) {
    MPI_Query_thread(&threadLevel);
    world.bootstrap = bootstrap;
    world.rank = rank;
    world.size = size;
    world.main.comm = comm;
    world.main.stream = stream;
    world.channels.resize(channels);
    // Fails only when MPI is out of memory, as the MPI backend's does.
    MPI_Type_contiguous(2, MPI_BYTE, &type16);
    MPI_Type_commit(&type16);
  }

  ~NcclBackend() override {
    // The groups' communicators were split from the world's.
    groups.clear();
    MPI_Type_free(&type16);
  }

  NcclBackend(const NcclBackend &) = delete;
  NcclBackend &operator=(const NcclBackend &) = delete;

  commrt_backend kind() const override { return COMMRT_BACKEND_NCCL; }

  commrt_status addGroup(int group, MPI_Comm comm, int color,
                         int key) override {
    auto added = std::make_unique<Group>();
    added->bootstrap = comm;
    MPI_Comm_rank(comm, &added->rank);
    MPI_Comm_size(comm, &added->size);
    added->channels.resize(channelCount);
    commrt_status status = checkCuda("cudaSetDevice", cudaSetDevice(device));
    if (status == COMMRT_SUCCESS)
      status = checkCuda("cudaStreamCreateWithFlags",
                         cudaStreamCreateWithFlags(&added->main.stream,
                                                   cudaStreamNonBlocking));
    // Agree before any rank enters NCCL, so that none waits for one that
    // gave up. ncclCommSplit ranks the group's members by key, then by rank
    // in the world's communicator, as MPI_Comm_split did `comm`'s.
    COMMRT_TRY(agreeOnSuccess(world.bootstrap, status, COMMRT_ERROR_BACKEND,
                              "group creation"));
    status = checkNccl(
        "ncclCommSplit",
        ncclCommSplit(world.main.comm, color, key, &added->main.comm, nullptr),
        world.main.comm);
    COMMRT_TRY(agreeOnSuccess(world.bootstrap, status, COMMRT_ERROR_BACKEND,
                              "ncclCommSplit"));
    groups[group] = std::move(added);
    return COMMRT_SUCCESS;
  }

  commrt_status run(const Plan &plan, int group) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    COMMRT_TRY(orderAfterCaller(found->main.stream));
    COMMRT_TRY(enqueue(plan, *found, found->main));
    return checkCuda("cudaStreamSynchronize",
                     cudaStreamSynchronize(found->main.stream));
  }

  commrt_status start(const Plan &plan, int group, int channel,
                      std::unique_ptr<Operation> &operation) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    if (!found->channels[channel])
      COMMRT_TRY(createChannel(*found, channel));
    Stream &stream = *found->channels[channel];
    if (stream.thread)
      return startOnThread(
          stream, operation,
          [this, found, &stream, plan](ChannelTask &task) -> commrt_status {
            COMMRT_TRY(enqueue(plan, *found, stream));
            COMMRT_TRY(checkCuda(
                "cudaEventCreateWithFlags",
                cudaEventCreateWithFlags(&task.event, cudaEventDisableTiming)));
            return checkCuda("cudaEventRecord",
                             cudaEventRecord(task.event, stream.stream));
          });
    COMMRT_TRY(orderAfterCaller(stream.stream));
    COMMRT_TRY(enqueue(plan, *found, stream));
    cudaEvent_t event;
    COMMRT_TRY(
        checkCuda("cudaEventCreateWithFlags",
                  cudaEventCreateWithFlags(&event, cudaEventDisableTiming)));
    if (commrt_status status = checkCuda(
            "cudaEventRecord", cudaEventRecord(event, stream.stream))) {
      cudaEventDestroy(event);
      return status;
    }
    operation = std::make_unique<NcclOperation>(event);
    return COMMRT_SUCCESS;
  }

  commrt_status sparse(const SparseArguments &args, int group) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    if (!found->sparseState)
      found->sparseState = std::make_unique<NcclSparse>(
          found->bootstrap, found->main.comm, found->main.stream, found->rank,
          found->size, device);
    COMMRT_TRY(orderAfterCaller(found->main.stream));
    return found->sparseState->run(args);
  }

  /// Host rows, reduced on the host over the group's bootstrap
  /// communicator.
  commrt_status rows(const RowsArguments &args, int group,
                     ReducedRows &result) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    return rowsAllreduce(args, found->bootstrap, result);
  }

  /// The sparse allreduce's selection and exchange wait for the host between
  /// their steps, so they run on a thread of the channel's, which from then
  /// on issues all of the channel's work. Where MPI allows no such thread
  /// (less than MPI_THREAD_MULTIPLE), the start runs the allreduce to the end
  /// on the group's main stream and returns a completed operation.
  commrt_status startSparse(const SparseArguments &args, int group, int channel,
                            std::unique_ptr<Operation> &operation) override {
    if (threadLevel != MPI_THREAD_MULTIPLE) {
      commrt_status status = sparse(args, group);
      operation = std::make_unique<CompletedOperation>(
          status, status == COMMRT_SUCCESS ? "" : commrt_last_error());
      return COMMRT_SUCCESS;
    }
    Group *found;
    COMMRT_TRY(find(group, found));
    if (!found->channels[channel])
      COMMRT_TRY(createChannel(*found, channel));
    Stream &stream = *found->channels[channel];
    if (!stream.thread)
      COMMRT_TRY(createChannelThread(*found, stream));
    return startOnThread(stream, operation,
                         [&stream, args](ChannelTask &) -> commrt_status {
                           return stream.sparse->run(args);
                         });
  }

  commrt_status broadcast(void *buffer, int64_t count, commrt_dtype dtype,
                          int root) override {
    bool onDevice = false;
    COMMRT_TRY(placeBroadcast(buffer, onDevice));
    // NCCL reaches device memory only: host buffers are broadcast on the
    // host, over the communicator NCCL was bootstrapped over.
    if (!onDevice)
      return broadcastOverMpi(buffer, count, dtype, root, world.bootstrap,
                              type16);
    COMMRT_TRY(orderAfterCaller(world.main.stream));
    COMMRT_TRY(
        checkNccl("ncclBroadcast",
                  ncclBroadcast(buffer, buffer, count, ncclType(dtype), root,
                                world.main.comm, world.main.stream),
                  world.main.comm));
    return checkCuda("cudaStreamSynchronize",
                     cudaStreamSynchronize(world.main.stream));
  }

  commrt_status allgather(const void *send, void *recv, const int64_t *counts,
                          commrt_dtype dtype) override {
    bool onDevice = false;
    COMMRT_TRY(placeAllgather(send, counts[world.rank], recv, onDevice));
    if (!onDevice)
      return allgatherOverMpi(send, recv, counts, dtype, world.bootstrap,
                              type16);
    COMMRT_TRY(orderAfterCaller(world.main.stream));
    // ncclAllGather takes equal counts: each rank broadcasts its own into
    // its place instead, in one group.
    const size_t width = elementSize(dtype);
    COMMRT_TRY(grouped(world.main.comm, [&] {
      int64_t offset = 0;
      for (int root = 0; root < world.size; ++root) {
        const int64_t count = counts[root];
        char *at = static_cast<char *>(recv) + offset * width;
        offset += count;
        if (count == 0)
          continue;
        const void *from = root == world.rank ? send : at;
        COMMRT_TRY(
            checkNccl("ncclBroadcast",
                      ncclBroadcast(from, at, count, ncclType(dtype), root,
                                    world.main.comm, world.main.stream),
                      world.main.comm));
      }
      return COMMRT_SUCCESS;
    }));
    return checkCuda("cudaStreamSynchronize",
                     cudaStreamSynchronize(world.main.stream));
  }

private:
  /// Sets `onDevice` to whether the allgather's buffers are device (or
  /// managed) memory: `recv`, and `send` where it sends (`sendCount` > 0),
  /// both in the same kind, on every rank. Collective over the bootstrap
  /// communicator.
  commrt_status placeAllgather(const void *send, int64_t sendCount,
                               const void *recv, bool &onDevice) {
    auto locate = [&]() -> commrt_status {
      COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
      COMMRT_TRY(locateBuffer("recv", recv, device, onDevice));
      if (sendCount == 0)
        return COMMRT_SUCCESS;
      bool sendOnDevice = false;
      COMMRT_TRY(locateBuffer("send", send, device, sendOnDevice));
      if (sendOnDevice != onDevice)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "send is in ",
                    placeName(sendOnDevice), " but recv in ",
                    placeName(onDevice),
                    ": an allgather's buffers must be in the same kind");
      return COMMRT_SUCCESS;
    };
    commrt_status status = locate();
    return agreeOnPlacement(world.bootstrap, status, onDevice, "send and recv");
  }

  /// Makes the work enqueued on `stream` from now on wait for the caller's
  /// work issued so far on the backend's device.
  commrt_status orderAfterCaller(cudaStream_t stream) {
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    COMMRT_TRY(callerOrder.record());
    return callerOrder.orderAfter(stream);
  }

  /// Queues `work` on the thread of `stream`, a channel's, after the
  /// caller's work issued so far, and sets `operation` to it. The thread
  /// makes the backend's device current and the stream wait for the
  /// caller's work, then runs `work`.
  commrt_status
  startOnThread(Stream &stream, std::unique_ptr<Operation> &operation,
                std::function<commrt_status(ChannelTask &)> work) {
    auto task = std::make_shared<ChannelTask>();
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    COMMRT_TRY(task->callerWork.record());
    COMMRT_TRY(stream.thread->submit([this, &stream, task, work] {
      commrt_status status = checkCuda("cudaSetDevice", cudaSetDevice(device));
      if (status == COMMRT_SUCCESS)
        status = task->callerWork.orderAfter(stream.stream);
      if (status == COMMRT_SUCCESS)
        status = work(*task);
      task->outcome.finish(status);
    }));
    operation = std::make_unique<ChannelTaskOperation>(task);
    return COMMRT_SUCCESS;
  }

  /// Gives `stream`, a channel of `group`, its thread, the MPI communicator
  /// its collectives agree over and the sparse allreduce's state.
  /// Collective over the group.
  commrt_status createChannelThread(const Group &group, Stream &stream) {
    if (int error = MPI_Comm_dup(group.bootstrap, &stream.agreements)) {
      stream.agreements = MPI_COMM_NULL;
      return failMpi("MPI_Comm_dup", error);
    }
    MPI_Comm_set_errhandler(stream.agreements, MPI_ERRORS_RETURN);
    stream.sparse = std::make_unique<NcclSparse>(stream.agreements, stream.comm,
                                                 stream.stream, group.rank,
                                                 group.size, device);
    stream.thread = std::make_unique<ChannelThread>();
    return COMMRT_SUCCESS;
  }

  /// Sets `found` to the group `group`.
  commrt_status find(int group, Group *&found) {
    if (group == 0) {
      found = &world;
      return COMMRT_SUCCESS;
    }
    auto it = groups.find(group);
    if (it == groups.end())
      return failUnknownGroup(group);
    found = it->second.get();
    return COMMRT_SUCCESS;
  }

  /// Creates the stream and the NCCL communicator of `channel` of `group`.
  /// Collective over the group.
  commrt_status createChannel(Group &group, int channel) {
    auto created = std::make_unique<Stream>();
    commrt_status status = checkCuda(
        "cudaStreamCreateWithFlags",
        cudaStreamCreateWithFlags(&created->stream, cudaStreamNonBlocking));
    // Agree before any rank enters NCCL, so that none waits for one that
    // gave up.
    COMMRT_TRY(agreeOnSuccess(group.bootstrap, status, COMMRT_ERROR_BACKEND,
                              "channel creation"));
    status = checkNccl(
        "ncclCommSplit",
        ncclCommSplit(group.main.comm, 0, group.rank, &created->comm, nullptr),
        group.main.comm);
    COMMRT_TRY(agreeOnSuccess(group.bootstrap, status, COMMRT_ERROR_BACKEND,
                              "ncclCommSplit"));
    group.channels[channel] = std::move(created);
    return COMMRT_SUCCESS;
  }

  /// Sets `onDevice` to whether the broadcast's `buffer` is device (or
  /// managed) memory, once every rank has found its buffer in the same kind
  /// of memory. Collective over the bootstrap communicator.
  commrt_status placeBroadcast(const void *buffer, bool &onDevice) {
    auto locate = [&]() -> commrt_status {
      COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
      return locateBuffer("buffer", buffer, device, onDevice);
    };
    commrt_status status = locate();
    return agreeOnPlacement(world.bootstrap, status, onDevice, "buffer");
  }

  /// Sets `hierarchical` to whether `plan`, on `stream` of `group`, reduces
  /// in two levels: it asks for it and the stream's ranks form several
  /// nodes. The first plan that asks splits the stream's levels. Collective
  /// over the group.
  commrt_status useHierarchy(const Plan &plan, const Group &group,
                             Stream &stream, bool &hierarchical) {
    hierarchical = false;
    bool asked = plan.algorithm == COMMRT_ALGORITHM_HIERARCHICAL ||
                 (plan.algorithm == COMMRT_ALGORITHM_DEFAULT &&
                  config.algorithm == AllreduceAlgorithm::Hierarchical);
    if (!asked || group.size < 2)
      return COMMRT_SUCCESS;
    if (!stream.levelsSplit)
      COMMRT_TRY(splitLevels(group, stream));
    hierarchical = stream.node != nullptr;
    return COMMRT_SUCCESS;
  }

  /// Splits the node and peers communicators of `stream`, one of `group`'s,
  /// where its ranks form several nodes of equal size (makeHierarchy, with
  /// nodes of consecutive world ranks under COMMRT_RANKS_PER_NODE). The
  /// ranks of a node share a color, the lowest rank among them. Collective
  /// over the group; a failure on any rank fails every rank.
  commrt_status splitLevels(const Group &group, Stream &stream) {
    stream.levelsSplit = true;
    // A channel's thread agrees over a communicator of its own.
    MPI_Comm agreements = stream.agreements != MPI_COMM_NULL ? stream.agreements
                                                             : group.bootstrap;
    std::shared_ptr<Hierarchy> levels;
    commrt_status status =
        makeHierarchy(agreements, world.rank, config.ranksPerNode, levels);
    COMMRT_TRY(agreeOnSuccess(agreements, status, COMMRT_ERROR_BACKEND,
                              "node discovery"));
    if (!levels)
      return COMMRT_SUCCESS;
    status = checkNccl("ncclCommSplit",
                       ncclCommSplit(stream.comm, levels->nodeLeader,
                                     levels->nodeRank, &stream.node, nullptr),
                       stream.comm);
    COMMRT_TRY(agreeOnSuccess(agreements, status, COMMRT_ERROR_BACKEND,
                              "ncclCommSplit (node)"));
    status = checkNccl("ncclCommSplit",
                       ncclCommSplit(stream.comm, levels->nodeRank, group.rank,
                                     &stream.peers, nullptr),
                       stream.comm);
    COMMRT_TRY(agreeOnSuccess(agreements, status, COMMRT_ERROR_BACKEND,
                              "ncclCommSplit (peers)"));
    stream.nodeRank = levels->nodeRank;
    stream.nodeSize = levels->nodeSize;
    return COMMRT_SUCCESS;
  }

  /// Enqueues `plan` on `stream`, one of `group`'s: packing, the collective
  /// and unpacking, including the copies back to host buffers.
  commrt_status enqueue(const Plan &plan, const Group &group, Stream &stream) {
    if (plan.kind != PlanKind::Allreduce)
      return enqueueSharded(plan, group, stream);
    // A mixed-wire plan: its two kinds of buffers, one after the other on
    // the stream (NCCL reduces one type per collective).
    if (plan.isMixed()) {
      COMMRT_TRY(enqueue(plan.part(/*narrow=*/true), group, stream));
      return enqueue(plan.part(/*narrow=*/false), group, stream);
    }
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    bool hierarchical;
    COMMRT_TRY(useHierarchy(plan, group, stream, hierarchical));
    size_t buffers = plan.buffers.size();
    std::vector<bool> onDevice;
    size_t hostBytes;
    COMMRT_TRY(locateBuffers(plan, onDevice, hostBytes));
    if (plan.inPlace() && onDevice[0])
      return allreduce(plan.buffers[0], plan.total, plan.dtype, plan.reduce,
                       stream, hierarchical);

    // Device memory: `staged` holds the plan's data as dtype values, for
    // host buffers and as the fusion buffer when no wire type is used;
    // `travel` holds them as wire values.
    commrt_dtype travelDtype = travelType(plan.dtype, plan.wire);
    bool cast = travelDtype != plan.dtype;
    size_t stagedBytes =
        cast && hostBytes == 0 ? 0 : plan.total * elementSize(plan.dtype);
    size_t travelBytes = cast ? plan.total * elementSize(travelDtype) : 0;
    COMMRT_TRY(stream.device.reserve(aligned(stagedBytes) + travelBytes,
                                     stream.stream));
    if (hostBytes > 0)
      COMMRT_TRY(stream.pinned.reserve(hostBytes, stream.stream));
    auto *staged = stream.device.as<char>();
    char *travel = cast ? staged + aligned(stagedBytes) : staged;

    // Pack: stage host buffers, then cast and scale into the fusion buffer,
    // all buffers in one launch (per kSegmentsPerLaunch).
    std::vector<cuda::ConvertSegment> segments(buffers);
    int64_t offset = 0;
    for (size_t i = 0; i < buffers; ++i) {
      size_t bytes = plan.counts[i] * elementSize(plan.dtype);
      const void *source = plan.buffers[i];
      if (!onDevice[i]) {
        char *stage = staged + offset * elementSize(plan.dtype);
        COMMRT_TRY(copy(stage, source, bytes, stream));
        source = stage;
      }
      segments[i] = {source, travel + offset * elementSize(travelDtype),
                     plan.counts[i]};
      offset += plan.counts[i];
    }
    COMMRT_TRY(checkCuda("convertSegments",
                         cuda::convertSegments(segments.data(), buffers,
                                               plan.dtype, travelDtype,
                                               plan.prescale, stream.stream)));

    COMMRT_TRY(allreduce(travel, plan.total, travelDtype,
                         travelReduce(plan.wire, plan.reduce), stream,
                         hierarchical));

    // Unpack into device buffers directly, and through the staging memory
    // and the pinned memory into host buffers.
    double scale = unpackScale(plan.dtype, plan.wire, plan.reduce,
                               plan.prescale, group.size);
    offset = 0;
    for (size_t i = 0; i < buffers; ++i) {
      void *target = onDevice[i] ? plan.buffers[i]
                                 : staged + offset * elementSize(plan.dtype);
      segments[i] = {travel + offset * elementSize(travelDtype), target,
                     plan.counts[i]};
      offset += plan.counts[i];
    }
    COMMRT_TRY(
        checkCuda("convertSegments",
                  cuda::convertSegments(segments.data(), buffers, travelDtype,
                                        plan.dtype, scale, stream.stream)));
    std::vector<HostCopy> results;
    for (size_t i = 0; i < buffers; ++i)
      if (!onDevice[i])
        results.push_back({plan.buffers[i], segments[i].output,
                           plan.counts[i] * elementSize(plan.dtype)});
    return copyToHostBuffers(results, stream);
  }

  /// Enqueues the reduce-scatter or all-gather `plan` on `stream`, one of
  /// `group`'s, with the results the MPI backend's ring gives: the buffers'
  /// concatenation, packed into the travel type (`wire`, times `prescale`)
  /// and padded with zeros to `size` shards of ceil(total / size), is
  /// reduce-scattered (ncclReduceScatter) or all-gathered (ncclAllGather)
  /// in place in the stream's device memory. A reduce-scatter unpacks this
  /// rank's reduced shard and zeroes its padding; an all-gather packs this
  /// rank's shard into its place first, and every rank, its owner included,
  /// unpacks the same travelled values. Host buffers and a host shard are
  /// staged through device memory, and results for them go back through
  /// pinned memory, as the allreduce's do.
  commrt_status enqueueSharded(const Plan &plan, const Group &group,
                               Stream &stream) {
    COMMRT_TRY(checkCuda("cudaSetDevice", cudaSetDevice(device)));
    const Shard own = shardOf(plan.total, group.rank, group.size);
    const int64_t shardCount = shardElements(plan.total, group.size);
    const commrt_dtype travelDtype = travelType(plan.dtype, plan.wire);
    const size_t width = elementSize(plan.dtype);
    const size_t travelWidth = elementSize(travelDtype);
    const size_t buffers = plan.buffers.size();
    std::vector<bool> onDevice;
    size_t hostBytes;
    COMMRT_TRY(locateBuffers(plan, onDevice, hostBytes));
    bool shardOnDevice;
    COMMRT_TRY(locate(plan.shard, shardOnDevice));
    const size_t shardBytes = shardCount * width;

    // Device memory: the padded flat tensor in the travel type, then the
    // staged host buffers and the staged shard in `dtype`.
    const size_t flatBytes = aligned(shardCount * group.size * travelWidth);
    const size_t stagedBytes = aligned(hostBytes);
    COMMRT_TRY(stream.device.reserve(flatBytes + stagedBytes +
                                         (shardOnDevice ? 0 : shardBytes),
                                     stream.stream));
    size_t pinnedBytes = plan.kind == PlanKind::ReduceScatter
                             ? (shardOnDevice ? 0 : shardBytes)
                             : hostBytes;
    if (pinnedBytes > 0)
      COMMRT_TRY(stream.pinned.reserve(pinnedBytes, stream.stream));
    auto *flat = stream.device.as<char>();
    char *staged = flat + flatBytes;
    char *shard =
        shardOnDevice ? static_cast<char *>(plan.shard) : staged + stagedBytes;
    char *ownSlot = flat + group.rank * shardCount * travelWidth;
    // Each buffer where the device reads or writes it.
    std::vector<char *> places(buffers);
    for (size_t i = 0, at = 0; i < buffers; ++i) {
      if (onDevice[i]) {
        places[i] = static_cast<char *>(plan.buffers[i]);
        continue;
      }
      places[i] = staged + at;
      at += plan.counts[i] * width;
    }
    // The buffers' segments of the flat tensor, `toFlat` or back.
    auto flatSegments = [&](bool toFlat) {
      std::vector<cuda::ConvertSegment> segments(buffers);
      int64_t offset = 0;
      for (size_t i = 0; i < buffers; ++i) {
        char *inFlat = flat + offset * travelWidth;
        segments[i] =
            toFlat ? cuda::ConvertSegment{places[i], inFlat, plan.counts[i]}
                   : cuda::ConvertSegment{inFlat, places[i], plan.counts[i]};
        offset += plan.counts[i];
      }
      return segments;
    };
    ncclDataType_t type = ncclType(travelDtype);

    if (plan.kind == PlanKind::ReduceScatter) {
      for (size_t i = 0; i < buffers; ++i)
        if (!onDevice[i])
          COMMRT_TRY(
              copy(places[i], plan.buffers[i], plan.counts[i] * width, stream));
      std::vector<cuda::ConvertSegment> segments = flatSegments(true);
      COMMRT_TRY(checkCuda(
          "convertSegments",
          cuda::convertSegments(segments.data(), buffers, plan.dtype,
                                travelDtype, plan.prescale, stream.stream)));
      COMMRT_TRY(checkCuda(
          "cudaMemsetAsync",
          cudaMemsetAsync(flat + plan.total * travelWidth, 0,
                          (shardCount * group.size - plan.total) * travelWidth,
                          stream.stream)));
      COMMRT_TRY(checkNccl(
          "ncclReduceScatter",
          ncclReduceScatter(flat, ownSlot, shardCount, type,
                            ncclOp(travelReduce(plan.wire, plan.reduce)),
                            stream.comm, stream.stream),
          stream.comm));
      cuda::ConvertSegment unpack{ownSlot, shard, own.length};
      COMMRT_TRY(checkCuda(
          "convertSegments",
          cuda::convertSegments(&unpack, 1, travelDtype, plan.dtype,
                                unpackScale(plan.dtype, plan.wire, plan.reduce,
                                            plan.prescale, group.size),
                                stream.stream)));
      COMMRT_TRY(checkCuda("cudaMemsetAsync",
                           cudaMemsetAsync(shard + own.length * width, 0,
                                           (shardCount - own.length) * width,
                                           stream.stream)));
      if (shardOnDevice)
        return COMMRT_SUCCESS;
      return copyToHostBuffers({{plan.shard, shard, shardBytes}}, stream);
    }

    // All-gather: only the shard's first own.length elements are read.
    if (!shardOnDevice)
      COMMRT_TRY(copy(shard, plan.shard, own.length * width, stream));
    cuda::ConvertSegment pack{shard, ownSlot, own.length};
    COMMRT_TRY(
        checkCuda("convertSegments",
                  cuda::convertSegments(&pack, 1, plan.dtype, travelDtype,
                                        plan.prescale, stream.stream)));
    COMMRT_TRY(
        checkCuda("cudaMemsetAsync",
                  cudaMemsetAsync(ownSlot + own.length * travelWidth, 0,
                                  (shardCount - own.length) * travelWidth,
                                  stream.stream)));
    COMMRT_TRY(checkNccl("ncclAllGather",
                         ncclAllGather(ownSlot, flat, shardCount, type,
                                       stream.comm, stream.stream),
                         stream.comm));
    // Undoes the prescale; nothing was reduced.
    std::vector<cuda::ConvertSegment> segments = flatSegments(false);
    COMMRT_TRY(checkCuda(
        "convertSegments",
        cuda::convertSegments(segments.data(), buffers, travelDtype, plan.dtype,
                              unpackScale(plan.dtype, plan.wire, COMMRT_SUM,
                                          plan.prescale, group.size),
                              stream.stream)));
    std::vector<HostCopy> results;
    for (size_t i = 0; i < buffers; ++i)
      if (!onDevice[i])
        results.push_back({plan.buffers[i], places[i], plan.counts[i] * width});
    return copyToHostBuffers(results, stream);
  }

  /// Enqueues on `stream` the copies of `results` from device memory
  /// (`from`) to the caller's host buffers (`to`), through the stream's
  /// pinned memory, which the caller reserved for all of them, and a host
  /// function that finishes them in order.
  commrt_status copyToHostBuffers(const std::vector<HostCopy> &results,
                                  Stream &stream) {
    if (results.empty())
      return COMMRT_SUCCESS;
    auto copies = std::make_unique<std::vector<HostCopy>>();
    auto *pinned = stream.pinned.as<char>();
    for (const HostCopy &result : results) {
      COMMRT_TRY(copy(pinned, result.from, result.bytes, stream));
      copies->push_back({result.to, pinned, result.bytes});
      pinned += result.bytes;
    }
    COMMRT_TRY(
        checkCuda("cudaLaunchHostFunc",
                  cudaLaunchHostFunc(stream.stream, copyToHost, copies.get())));
    (void)copies.release(); // copyToHost deletes it.
    return COMMRT_SUCCESS;
  }

  /// Enqueues an in-place allreduce of `count` device elements at `data`:
  /// over the stream's two levels where `hierarchical`, else one
  /// ncclAllReduce.
  commrt_status allreduce(void *data, int64_t count, commrt_dtype dtype,
                          commrt_reduce reduce, Stream &stream,
                          bool hierarchical) {
    ncclDataType_t type = ncclType(dtype);
    ncclRedOp_t op = ncclOp(reduce);
    int64_t piece = hierarchical ? count / stream.nodeSize : 0;
    if (piece > 0) {
      // Node sizes are equal, so averaging over the node, then over the
      // nodes, averages over all ranks.
      auto *base = static_cast<char *>(data);
      char *own = base + stream.nodeRank * piece * elementSize(dtype);
      COMMRT_TRY(checkNccl("ncclReduceScatter",
                           ncclReduceScatter(base, own, piece, type, op,
                                             stream.node, stream.stream),
                           stream.node));
      COMMRT_TRY(checkNccl(
          "ncclAllReduce",
          ncclAllReduce(own, own, piece, type, op, stream.peers, stream.stream),
          stream.peers));
      COMMRT_TRY(checkNccl(
          "ncclAllGather",
          ncclAllGather(own, base, piece, type, stream.node, stream.stream),
          stream.node));
    }
    int64_t rest = count - piece * stream.nodeSize;
    if (rest == 0)
      return COMMRT_SUCCESS;
    void *tail = static_cast<char *>(data) +
                 (count - rest) * static_cast<int64_t>(elementSize(dtype));
    return checkNccl(
        "ncclAllReduce",
        ncclAllReduce(tail, tail, rest, type, op, stream.comm, stream.stream),
        stream.comm);
  }

  /// Sets `onDevice[i]` to whether `plan`'s buffer i is device memory, and
  /// `hostBytes` to the bytes of the others, which are staged.
  commrt_status locateBuffers(const Plan &plan, std::vector<bool> &onDevice,
                              size_t &hostBytes) {
    onDevice.assign(plan.buffers.size(), false);
    hostBytes = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      bool isDevice;
      COMMRT_TRY(locate(plan.buffers[i], isDevice));
      onDevice[i] = isDevice;
      if (!isDevice)
        hostBytes += plan.counts[i] * elementSize(plan.dtype);
    }
    return COMMRT_SUCCESS;
  }

  /// Sets `onDevice` to whether `pointer` is device (or managed) memory,
  /// which NCCL can reduce in place; host memory is staged.
  commrt_status locate(const void *pointer, bool &onDevice) {
    return locateBuffer("a buffer", pointer, device, onDevice);
  }

  /// Enqueues a copy of `bytes` on `stream`, in whichever direction.
  commrt_status copy(void *to, const void *from, size_t bytes, Stream &stream) {
    return checkCuda(
        "cudaMemcpyAsync",
        cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream.stream));
  }

  int device;
  /// Orders the collectives of the blocking calls and the starts after the
  /// caller's work.
  CallerOrder callerOrder;
  /// The number of channels of every group.
  int channelCount;
  /// The thread support level MPI was initialised with: channels' threads
  /// need MPI_THREAD_MULTIPLE.
  int threadLevel = MPI_THREAD_SINGLE;
  /// COMMRT_ALLREDUCE and COMMRT_RANKS_PER_NODE: whether the default
  /// algorithm is the hierarchical one, and what a node is.
  AllreduceConfig config;
  /// All ranks: the communicator NCCL was bootstrapped over, and the
  /// backend's NCCL communicator.
  Group world;
  /// The other groups by handle, split from `world` and so declared after
  /// it.
  std::map<int, std::unique_ptr<Group>> groups;
  /// A 2-byte contiguous type carrying f16 and bf16 elements of host
  /// broadcasts.
  MPI_Datatype type16 = MPI_DATATYPE_NULL;
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

} // namespace

commrt_status commrt::createNcclBackend(MPI_Comm comm, int channels,
                                        const AllreduceConfig &config,
                                        std::unique_ptr<Backend> &out) {
  int rank, size, device;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Agree before any rank enters NCCL, so that none waits for one that
  // gave up.
  COMMRT_TRY(agreeOnSuccess(comm, pickDevice(comm, device),
                            COMMRT_ERROR_UNAVAILABLE, "CUDA device selection"));

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
  out = std::make_unique<NcclBackend>(comm, nccl, rank, size, device, stream,
                                      channels, config);
  return COMMRT_SUCCESS;
}

commrt_status commrt::agreeOnPlacement(MPI_Comm comm, commrt_status localStatus,
                                       bool onDevice, const char *what) {
  // The maximum of [status, on device, on host] over the ranks.
  const bool ok = localStatus == COMMRT_SUCCESS;
  int votes[3] = {static_cast<int>(localStatus), ok && onDevice,
                  ok && !onDevice};
  if (int error = MPI_Allreduce(MPI_IN_PLACE, votes, 3, MPI_INT, MPI_MAX, comm))
    return failMpi("MPI_Allreduce", error);
  if (!ok)
    return localStatus;
  if (votes[0] != COMMRT_SUCCESS)
    return fail(static_cast<commrt_status>(votes[0]),
                "another rank rejected its ", what);
  if (votes[1] && votes[2])
    return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on where the ", what,
                " is (device memory on some ranks, host memory on others)");
  return COMMRT_SUCCESS;
}

commrt_status commrt::locateBuffer(const char *name, const void *pointer,
                                   int device, bool &onDevice) {
  cudaPointerAttributes attributes;
  COMMRT_TRY(checkCuda("cudaPointerGetAttributes",
                       cudaPointerGetAttributes(&attributes, pointer)));
  onDevice = attributes.type == cudaMemoryTypeDevice ||
             attributes.type == cudaMemoryTypeManaged;
  if (attributes.type == cudaMemoryTypeDevice && attributes.device != device)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, name,
                " is memory of CUDA device ", attributes.device,
                ", but this rank's NCCL backend runs on device ", device);
  return COMMRT_SUCCESS;
}
