//===- MpiBackend.cpp - Allreduce over MPI, with f16/bf16 user ops --------===//
//
// Blocking collectives run on the caller's thread over the runtime's
// communicator. Asynchronous ones run on channels: each channel has a
// duplicate of that communicator and, from its first collective on, a thread
// that runs the channel's collectives in order with blocking MPI calls. A
// blocking MPI_Allreduce progresses by itself, so the collective advances
// while the caller computes; OpenMPI 4.1 would progress an MPI_Iallreduce
// only while the caller is inside MPI. The threads need MPI_THREAD_MULTIPLE.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "WireFormat.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

using namespace commrt;

namespace {

float add(float a, float b) { return a + b; }
float maximum(float a, float b) { return std::max(a, b); }
float minimum(float a, float b) { return std::min(a, b); }

/// An MPI_User_function combining 16-bit floats elementwise through float.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float),
          float (*Combine)(float, float)>
void combine16(void *in, void *inOut, int *length, MPI_Datatype *) {
  const auto *lhs = static_cast<const uint16_t *>(in);
  auto *rhs = static_cast<uint16_t *>(inOut);
  for (int i = 0; i < *length; ++i)
    rhs[i] = Narrow(Combine(Widen(lhs[i]), Widen(rhs[i])));
}

/// The user functions for f16 and bf16, indexed by [dtype - COMMRT_F16]
/// [reduce]; AVG sums (the division follows the allreduce).
MPI_User_function *const kUserFunctions16[2][4] = {
    {combine16<halfToFloat, floatToHalf, add>,
     combine16<halfToFloat, floatToHalf, add>,
     combine16<halfToFloat, floatToHalf, maximum>,
     combine16<halfToFloat, floatToHalf, minimum>},
    {combine16<bfloat16ToFloat, floatToBFloat16, add>,
     combine16<bfloat16ToFloat, floatToBFloat16, add>,
     combine16<bfloat16ToFloat, floatToBFloat16, maximum>,
     combine16<bfloat16ToFloat, floatToBFloat16, minimum>}};

/// Divides the `count` elements of `data` by `size`.
template <typename T> void divide(T *data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i)
    data[i] /= size;
}

/// Divides the `count` 16-bit floats at `data` by `size` through float.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divide16(uint16_t *data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i)
    data[i] = Narrow(Widen(data[i]) / static_cast<float>(size));
}

/// The name of the MPI thread support level `level`.
const char *threadLevelName(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  }
  return "MPI_THREAD_MULTIPLE";
}

/// Reduces plans over MPI. Its methods only read its members, so that the
/// caller and every channel's thread may use it at once.
class Reducer {
public:
  /// Sets up the f16/bf16 type and ops. Their constructors report errors on
  /// MPI_COMM_WORLD, where they are fatal by default; they fail only when MPI
  /// is out of memory.
  explicit Reducer(int size) : size(size) {
    MPI_Type_contiguous(2, MPI_BYTE, &type16);
    MPI_Type_commit(&type16);
    for (int type = 0; type < 2; ++type)
      for (int reduce = 0; reduce < 4; ++reduce)
        MPI_Op_create(kUserFunctions16[type][reduce], /*commute=*/1,
                      &ops16[type][reduce]);
  }

  ~Reducer() {
    for (auto &opsOfType : ops16)
      for (MPI_Op &op : opsOfType)
        MPI_Op_free(&op);
    MPI_Type_free(&type16);
  }

  Reducer(const Reducer &) = delete;
  Reducer &operator=(const Reducer &) = delete;

  /// Runs `plan` over `comm`, packing into `fusion` (grown as needed and
  /// kept for the next plan) unless it reduces in place.
  commrt_status run(const Plan &plan, MPI_Comm comm,
                    std::vector<unsigned char> &fusion) const {
    if (plan.inPlace())
      return allreduce(plan.buffers[0], plan.total, plan.dtype, plan.reduce,
                       comm);
    commrt_dtype travel = travelType(plan.dtype, plan.wire);
    size_t travelBytes = plan.total * elementSize(travel);
    if (fusion.size() < travelBytes)
      fusion.resize(travelBytes);
    unsigned char *next = fusion.data();
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      convert(plan.buffers[i], plan.dtype, next, travel, plan.counts[i],
              plan.prescale);
      next += plan.counts[i] * elementSize(travel);
    }
    if (commrt_status status =
            allreduce(fusion.data(), plan.total, travel,
                      travelReduce(plan.wire, plan.reduce), comm))
      return status;
    double scale =
        unpackScale(plan.dtype, plan.wire, plan.reduce, plan.prescale, size);
    next = fusion.data();
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      convert(next, travel, plan.buffers[i], plan.dtype, plan.counts[i], scale);
      next += plan.counts[i] * elementSize(travel);
    }
    return COMMRT_SUCCESS;
  }

private:
  /// In-place allreduce of `count` elements of `dtype` at `buffer` over
  /// `comm`; AVG divides the sum by the number of ranks.
  commrt_status allreduce(void *buffer, int64_t count, commrt_dtype dtype,
                          commrt_reduce reduce, MPI_Comm comm) const {
    if (commrt_status status =
            allreduceChunked(buffer, count, dtype, reduce, comm))
      return status;
    if (reduce == COMMRT_AVG)
      divideBySize(buffer, count, dtype);
    return COMMRT_SUCCESS;
  }

  /// MPI_Allreduce in place, in pieces of at most INT_MAX elements since MPI
  /// counts are ints. AVG is reduced as SUM.
  commrt_status allreduceChunked(void *buffer, int64_t count,
                                 commrt_dtype dtype, commrt_reduce reduce,
                                 MPI_Comm comm) const {
    static const MPI_Op builtinOps[] = {MPI_SUM, MPI_SUM, MPI_MAX, MPI_MIN};
    bool is16 = dtype == COMMRT_F16 || dtype == COMMRT_BF16;
    MPI_Datatype type = is16                  ? type16
                        : dtype == COMMRT_F32 ? MPI_FLOAT
                                              : MPI_DOUBLE;
    MPI_Op op = is16 ? ops16[dtype - COMMRT_F16][reduce] : builtinOps[reduce];
    auto *bytes = static_cast<char *>(buffer);
    for (int64_t done = 0; done < count;) {
      int chunk = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      if (int error =
              MPI_Allreduce(MPI_IN_PLACE, bytes + done * elementSize(dtype),
                            chunk, type, op, comm))
        return failMpi("MPI_Allreduce", error);
      done += chunk;
    }
    return COMMRT_SUCCESS;
  }

  /// Divides the reduced sum at `buffer` by the number of ranks.
  void divideBySize(void *buffer, int64_t count, commrt_dtype dtype) const {
    switch (dtype) {
    case COMMRT_F32:
      return divide(static_cast<float *>(buffer), count, size);
    case COMMRT_F64:
      return divide(static_cast<double *>(buffer), count, size);
    case COMMRT_F16:
      return divide16<halfToFloat, floatToHalf>(static_cast<uint16_t *>(buffer),
                                                count, size);
    case COMMRT_BF16:
      return divide16<bfloat16ToFloat, floatToBFloat16>(
          static_cast<uint16_t *>(buffer), count, size);
    }
  }

  int size;
  /// A 2-byte contiguous type carrying f16 and bf16 elements.
  MPI_Datatype type16 = MPI_DATATYPE_NULL;
  /// User ops for [f16, bf16] x commrt_reduce.
  MPI_Op ops16[2][4] = {};
};

/// What a channel's thread and the caller share about one collective.
struct Shared {
  explicit Shared(const Plan &plan) : plan(plan) {}

  const Plan plan;
  /// Set, with release order, once the results are in the buffers.
  std::atomic<bool> done{false};
  std::mutex mutex;
  std::condition_variable finished;
  /// The outcome; written before `done` is set.
  commrt_status status = COMMRT_SUCCESS;
  std::string message;
};

/// A collective queued on a channel.
class MpiOperation final : public Operation {
public:
  explicit MpiOperation(std::shared_ptr<Shared> shared)
      : shared(std::move(shared)) {}

  commrt_status test(bool &done) override {
    done = shared->done.load(std::memory_order_acquire);
    return COMMRT_SUCCESS;
  }

  commrt_status wait() override {
    std::unique_lock<std::mutex> lock(shared->mutex);
    shared->finished.wait(
        lock, [&] { return shared->done.load(std::memory_order_acquire); });
    if (shared->status != COMMRT_SUCCESS)
      return setLastError(shared->status, shared->message);
    return COMMRT_SUCCESS;
  }

private:
  std::shared_ptr<Shared> shared;
};

/// A channel: a communicator of its own, and a thread that runs the queued
/// collectives one after the other, started by the first.
class Channel {
public:
  Channel(const Reducer &reducer, MPI_Comm comm)
      : reducer(reducer), comm(comm) {}

  /// Completes the queued collectives, then stops the thread.
  ~Channel() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    if (thread.joinable())
      thread.join();
    MPI_Comm_free(&comm);
  }

  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;

  /// Queues the collective `shared`.
  commrt_status submit(std::shared_ptr<Shared> shared) {
    if (!thread.joinable()) {
      try {
        thread = std::thread([this] { serve(); });
      } catch (const std::system_error &error) {
        return fail(COMMRT_ERROR_BACKEND,
                    "cannot start the channel's thread: ", error.what());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(shared));
    }
    wake.notify_one();
    return COMMRT_SUCCESS;
  }

private:
  /// The thread's body: runs queued collectives until stopped with an empty
  /// queue.
  void serve() {
    while (true) {
      std::shared_ptr<Shared> shared;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty())
          return;
        shared = std::move(queue.front());
        queue.pop_front();
      }
      commrt_status status = reducer.run(shared->plan, comm, fusion);
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        shared->status = status;
        if (status != COMMRT_SUCCESS)
          shared->message = commrt_last_error();
        shared->done.store(true, std::memory_order_release);
      }
      shared->finished.notify_all();
    }
  }

  const Reducer &reducer;
  MPI_Comm comm;
  /// The channel's fusion buffer; only its thread touches it.
  std::vector<unsigned char> fusion;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::shared_ptr<Shared>> queue;
  bool stopping = false;
  std::thread thread;
};

class MpiBackend final : public Backend {
public:
  MpiBackend(MPI_Comm comm, int size, int threadLevel,
             std::vector<MPI_Comm> channelComms)
      : comm(comm), threadLevel(threadLevel), reducer(size) {
    for (MPI_Comm channelComm : channelComms)
      channels.push_back(std::make_unique<Channel>(reducer, channelComm));
  }

  commrt_backend kind() const override { return COMMRT_BACKEND_MPI; }

  commrt_status run(const Plan &plan) override {
    return reducer.run(plan, comm, fusion);
  }

  commrt_status start(const Plan &plan, int channel,
                      std::unique_ptr<Operation> &operation) override {
    if (threadLevel != MPI_THREAD_MULTIPLE)
      return fail(COMMRT_ERROR_UNAVAILABLE,
                  "asynchronous collectives over MPI need "
                  "MPI_THREAD_MULTIPLE, but MPI was initialised with ",
                  threadLevelName(threadLevel),
                  " (a program that initialises MPI itself must ask for "
                  "MPI_THREAD_MULTIPLE with MPI_Init_thread)");
    auto shared = std::make_shared<Shared>(plan);
    if (commrt_status status = channels[channel]->submit(shared))
      return status;
    operation = std::make_unique<MpiOperation>(std::move(shared));
    return COMMRT_SUCCESS;
  }

private:
  /// The runtime's communicator, for blocking collectives.
  MPI_Comm comm;
  /// The thread support level MPI was initialised with.
  int threadLevel;
  std::vector<unsigned char> fusion;
  Reducer reducer;
  /// Declared after the reducer, which their threads use, so that they are
  /// destroyed (and their collectives completed) first.
  std::vector<std::unique_ptr<Channel>> channels;
};

} // namespace

commrt_status commrt::createMpiBackend(MPI_Comm comm, int channels,
                                       std::unique_ptr<Backend> &out) {
  int size, threadLevel;
  MPI_Comm_size(comm, &size);
  MPI_Query_thread(&threadLevel);
  std::vector<MPI_Comm> channelComms;
  for (int i = 0; i < channels; ++i) {
    MPI_Comm channelComm;
    if (int error = MPI_Comm_dup(comm, &channelComm)) {
      for (MPI_Comm &created : channelComms)
        MPI_Comm_free(&created);
      return failMpi("MPI_Comm_dup", error);
    }
    MPI_Comm_set_errhandler(channelComm, MPI_ERRORS_RETURN);
    channelComms.push_back(channelComm);
  }
  out = std::make_unique<MpiBackend>(comm, size, threadLevel,
                                     std::move(channelComms));
  return COMMRT_SUCCESS;
}
