//===- MpiBackend.cpp - Allreduce over MPI, with f16/bf16 user ops --------===//
//
// Blocking collectives run on the caller's thread over the communicator of
// their process group: the runtime's for group 0 (all ranks), a split of it
// for the others. Asynchronous ones run on channels: each channel of each
// group has a duplicate of the group's communicator and, from its first
// collective on, a thread that runs the channel's collectives in order, so
// that they advance while the caller computes (OpenMPI 4.1 progresses a
// nonblocking operation only while some thread is inside MPI). Every MPI
// operation is started nonblocking and completed by MpiWait's loop of tests
// and sleeps, which leaves the core to the ranks that compute while a rank
// waits for its peers or a slow link. The threads need MPI_THREAD_MULTIPLE.
// Broadcasts are MPI_Ibcast calls (broadcastOverMpi, which the NCCL backend
// shares for host buffers).
//
// Large reductions run a ring allreduce of their own on the plan's
// communicator (COMMRT_ALLREDUCE, COMMRT_RING_MIN_BYTES): OpenMPI's default
// MPI_Allreduce over TCP reaches about half the link rate. The buffer is cut
// into one near-equal segment per rank; a reduce-scatter of p - 1 steps sends
// a segment to the right neighbour and reduces the one received from the
// left into the buffer, leaving each rank with one fully reduced segment,
// then an allgather of p - 1 steps circulates those (RingAllreduce.cpp).
// Every rank sends and receives 2 (p - 1) / p of the buffer, the least any
// allreduce can.
//
// COMMRT_ALLREDUCE=hierarchical reduces in two levels where the ranks form
// several nodes of equal size (MPI_COMM_TYPE_SHARED, or COMMRT_RANKS_PER_NODE
// consecutive ranks): MPI_Reduce_scatter within the node leaves each of its q
// ranks one near-equal piece reduced over the node, an allreduce among the
// ranks with the same place on every node (its peers; the ring for pieces of
// COMMRT_RING_MIN_BYTES or more, MPI_Allreduce below) reduces that piece over
// all nodes, and MPI_Allgatherv within the node gives every rank all pieces.
// Only 1/q of the buffer crosses between nodes. The buffer goes in parts of
// 16 MiB, pipelined: while one part crosses between nodes, the next one is
// reduce-scattered and the one before allgathered within the node
// (nonblocking MPI_Ireduce_scatter and MPI_Iallgatherv). Each communicator that
// plans run on (every group's, every channel's) has its node and peers
// communicators, split from it when the group or the backend is made.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "ChannelThread.h"
#include "DeviceStaging.h"
#include "Hierarchy.h"
#include "MpiWait.h"
#include "RingAllreduce.h"
#include "Trace.h"
#include "WireFormat.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <optional>
#include <string>

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

/// An MPI_User_function combining f16 elements as combineHalves does (in
/// hardware where the CPU converts f16).
template <commrt_reduce Reduce>
void combineHalf(void *in, void *inOut, int *length, MPI_Datatype *) {
  combineHalves(static_cast<const uint16_t *>(in),
                static_cast<uint16_t *>(inOut), *length, Reduce);
}

/// The user functions for f16 and bf16, indexed by [dtype - COMMRT_F16]
/// [reduce]; AVG sums (the division follows the allreduce).
MPI_User_function *const kUserFunctions16[2][4] = {
    {combineHalf<COMMRT_SUM>, combineHalf<COMMRT_SUM>, combineHalf<COMMRT_MAX>,
     combineHalf<COMMRT_MIN>},
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

/// The ring's reduction of a mixed-wire fusion buffer (Reducer::runMixed):
/// its first `narrowUnits` units of `width` bytes hold 16-bit wire values,
/// reduced two bytes at a time with `narrowOp` over `type16`; the units after
/// them hold elements of `type`, reduced with `op`.
class MixedReduction final : public RingReduction {
public:
  MixedReduction(int64_t narrowUnits, size_t width, MPI_Datatype type16,
                 MPI_Op narrowOp, MPI_Datatype type, MPI_Op op)
      : narrowUnits(narrowUnits), width(width), type16(type16),
        narrowOp(narrowOp), type(type), op(op) {}

  commrt_status reduce(const unsigned char *from, unsigned char *into,
                       int64_t begin, int64_t count) const override {
    int64_t narrow = std::clamp<int64_t>(narrowUnits - begin, 0, count);
    if (narrow > 0)
      if (int error =
              MPI_Reduce_local(from, into, static_cast<int>(narrow * width / 2),
                               type16, narrowOp))
        return failMpi("MPI_Reduce_local (mixed-wire ring allreduce)", error);
    if (narrow < count)
      if (int error =
              MPI_Reduce_local(from + narrow * width, into + narrow * width,
                               static_cast<int>(count - narrow), type, op))
        return failMpi("MPI_Reduce_local (mixed-wire ring allreduce)", error);
    return COMMRT_SUCCESS;
  }

private:
  int64_t narrowUnits;
  size_t width;
  MPI_Datatype type16;
  MPI_Op narrowOp;
  MPI_Datatype type;
  MPI_Op op;
};

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

/// The bytes of one part of the hierarchical allreduce: large enough that a
/// part's collectives within the node cost little beside its crossing
/// between nodes, small enough that the pipeline of parts fills quickly.
constexpr int64_t kHierarchyPartBytes = int64_t(16) << 20;

/// The number of hierarchical allreduces run (hierarchicalAllreducesRun).
std::atomic<int64_t> hierarchicalRuns{0};

/// A communicator that plans run on, with its number of ranks and, under
/// the hierarchical allreduce over several nodes, its two levels.
struct Ranks {
  MPI_Comm comm;
  int size;
  std::shared_ptr<const Hierarchy> hierarchy = nullptr;
};

/// What a collective's route through device memory needs (DeviceStaging.h),
/// found on the caller's thread when it is called or started.
struct DeviceCall {
  /// Whether each of its buffers is device memory; empty where this rank
  /// has no device access, and then every buffer is host memory.
  std::vector<bool> onDevice;
  /// The lane that stages them, where some buffer is device memory.
  DeviceLane *lane = nullptr;
  /// Orders the lane's work after the caller's, run before that work.
  std::function<commrt_status()> orderLane;
  /// Whether MPI reads device memory itself.
  bool mpiReadsDevice = false;
  /// Whether every rank of the backend has device access (all ranks agree).
  bool everyRankHasDevice = false;

  bool anyOnDevice() const {
    return std::find(onDevice.begin(), onDevice.end(), true) != onDevice.end();
  }
  bool allOnDevice() const {
    return !onDevice.empty() &&
           std::find(onDevice.begin(), onDevice.end(), false) == onDevice.end();
  }
};

/// Sets `all` to whether `mine` holds on every rank of `comm`. Collective.
commrt_status agreeOnEveryRank(bool mine, MPI_Comm comm, bool &all) {
  int local = mine ? 1 : 0, every = 0;
  MPI_Request request;
  if (int error =
          MPI_Iallreduce(&local, &every, 1, MPI_INT, MPI_MIN, comm, &request))
    return failMpi("MPI_Iallreduce (device placement)", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Iallreduce (device placement)"));
  all = every == 1;
  return COMMRT_SUCCESS;
}

/// The sparse allreduce `args` over `comm`, its grad and residual staged
/// through host memory where `call` finds them in device memory.
commrt_status sparseWithDevice(const SparseArguments &args,
                               const DeviceCall &call, MPI_Comm comm) {
  if (!call.anyOnDevice())
    return sparseAllreduce(args, comm);
  COMMRT_TRY(call.orderLane());
  const size_t bytes = static_cast<size_t>(args.count) * sizeof(float);
  std::vector<StagedBuffer> buffers = {
      {args.grad, bytes, call.onDevice[0], /*in=*/true, /*out=*/true}};
  if (args.residual)
    buffers.push_back({args.residual, bytes, call.onDevice[1], true, true});
  int ranks;
  MPI_Comm_size(comm, &ranks);
  return runStaged(
      buffers, *call.lane,
      [&](const std::vector<void *> &host) {
        SparseArguments hosted = args;
        hosted.grad = static_cast<float *>(host[0]);
        if (args.residual)
          hosted.residual = static_cast<float *>(host[1]);
        return sparseAllreduce(hosted, comm);
      },
      &args.trace, ranks);
}

/// Reduces plans over MPI. Its methods only read its members, so that the
/// caller and every channel's thread may use it at once.
class Reducer {
public:
  /// Sets up the f16/bf16 type and ops. Their constructors report errors on
  /// MPI_COMM_WORLD, where they are fatal by default; they fail only when MPI
  /// is out of memory.
  explicit Reducer(const AllreduceConfig &config) : config(config) {
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

  /// The configuration the reducer was made with.
  const AllreduceConfig &configuration() const { return config; }

  /// Runs `plan` over `ranks`, packing into `fusion` (grown as needed and
  /// kept for the next plan) unless it reduces in place; a ring receives
  /// into `scratch`, likewise kept.
  commrt_status run(const Plan &plan, const Ranks &ranks,
                    std::vector<unsigned char> &fusion,
                    std::vector<unsigned char> &scratch) const {
    TracePhase call(plan.trace, COMMRT_PHASE_CALL, ranks.size);
    if (plan.kind != PlanKind::Allreduce)
      return runSharded(plan, ranks, fusion, scratch);
    if (plan.isMixed())
      return runMixed(plan, ranks, fusion, scratch);
    if (plan.inPlace()) {
      TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
      return allreduce(plan.buffers[0], plan.total, plan.dtype, plan.reduce,
                       plan.algorithm, ranks, scratch);
    }
    // A ring reads and writes the buffers where they are: packing them into
    // the fusion buffer would only copy.
    if (plan.wire == COMMRT_WIRE_NONE && plan.prescale == 1.0f &&
        methodFor(plan.algorithm, plan.total, plan.dtype, ranks) ==
            Method::Ring) {
      std::vector<Span> spans;
      for (size_t i = 0; i < plan.buffers.size(); ++i)
        spans.push_back(
            {static_cast<unsigned char *>(plan.buffers[i]), plan.counts[i]});
      {
        TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
        COMMRT_TRY(ring(spans, plan.dtype, plan.reduce, ranks.comm, scratch));
      }
      TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
      if (plan.reduce == COMMRT_AVG)
        for (size_t i = 0; i < plan.buffers.size(); ++i)
          divideBySize(plan.buffers[i], plan.counts[i], plan.dtype, ranks.size);
      return COMMRT_SUCCESS;
    }
    commrt_dtype travel = travelType(plan.dtype, plan.wire);
    size_t travelBytes = plan.total * elementSize(travel);
    if (fusion.size() < travelBytes)
      fusion.resize(travelBytes);
    unsigned char *next = fusion.data();
    {
      TracePhase pack(plan.trace, COMMRT_PHASE_PACK, ranks.size);
      for (size_t i = 0; i < plan.buffers.size(); ++i) {
        convert(plan.buffers[i], plan.dtype, next, travel, plan.counts[i],
                plan.prescale);
        next += plan.counts[i] * elementSize(travel);
      }
    }
    {
      TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
      COMMRT_TRY(allreduce(fusion.data(), plan.total, travel,
                           travelReduce(plan.wire, plan.reduce), plan.algorithm,
                           ranks, scratch));
    }
    TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
    double scale = unpackScale(plan.dtype, plan.wire, plan.reduce,
                               plan.prescale, ranks.size);
    next = fusion.data();
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      convert(next, travel, plan.buffers[i], plan.dtype, plan.counts[i], scale);
      next += plan.counts[i] * elementSize(travel);
    }
    return COMMRT_SUCCESS;
  }

  /// Runs `plan` over `ranks` as run() does, with device buffers where
  /// `call` finds them (DeviceStaging.h). An allreduce plan of device
  /// buffers only, reduced by anything but AVG where it travels, runs on the
  /// device (reduceOnDevice). Anything else runs over host copies of its
  /// device buffers.
  commrt_status runWithDevice(const Plan &plan, const DeviceCall &call,
                              const Ranks &ranks,
                              std::vector<unsigned char> &fusion,
                              std::vector<unsigned char> &scratch) const {
    if (call.onDevice.empty())
      return run(plan, ranks, fusion, scratch);
    const commrt_dtype travel = travelType(plan.dtype, plan.wire);
    const commrt_reduce travelled = travelReduce(plan.wire, plan.reduce);
    const Method method = methodFor(plan.algorithm, plan.total, travel, ranks);
    // Host code divides for AVG.
    const bool devicePlan = plan.kind == PlanKind::Allreduce &&
                            !plan.isMixed() && travelled != COMMRT_AVG;
    // The staged ring and the host ring do not exchange pieces with each
    // other: the ranks agree on which runs. Every rank decides the same way
    // whether to ask, from the plan and the backend's configuration.
    bool stagedRing = false;
    if (call.everyRankHasDevice && devicePlan && method == Method::Ring)
      COMMRT_TRY(agreeOnEveryRank(call.allOnDevice(), ranks.comm, stagedRing));
    if (!call.anyOnDevice())
      return run(plan, ranks, fusion, scratch);
    COMMRT_TRY(call.orderLane());
    if (devicePlan && call.allOnDevice())
      return reduceOnDevice(plan, method, stagedRing, call, ranks, scratch);
    return runStaged(
        stagedBuffersOf(plan, ranks.size, call.onDevice), *call.lane,
        [&](const std::vector<void *> &host) {
          return run(onHost(plan, host), ranks, fusion, scratch);
        },
        &plan.trace, ranks.size);
  }

  /// The 2-byte type carrying f16 and bf16 elements.
  MPI_Datatype halfType() const { return type16; }

private:
  /// Runs the reduce-scatter or all-gather `plan` over `ranks` by the ring's
  /// half (ringReduceScatter, ringAllGather): over the buffers where they are
  /// when nothing converts them, else over `fusion`, which holds their
  /// concatenation in the type they travel in (`wire`, times `prescale`). A
  /// reduce-scatter's shard is unpacked from its segment, its tail past the
  /// buffers zero; an all-gather's goes into its segment first, packed as
  /// every other rank's, so that every rank holds the same values.
  commrt_status runSharded(const Plan &plan, const Ranks &ranks,
                           std::vector<unsigned char> &fusion,
                           std::vector<unsigned char> &scratch) const {
    int rank;
    MPI_Comm_rank(ranks.comm, &rank);
    const Shard own = shardOf(plan.total, rank, ranks.size);
    const int64_t shardCount = shardElements(plan.total, ranks.size);
    const commrt_dtype travel = travelType(plan.dtype, plan.wire);
    const size_t width = elementSize(plan.dtype);
    const size_t travelWidth = elementSize(travel);
    const bool packs = plan.wire != COMMRT_WIRE_NONE || plan.prescale != 1.0f;
    auto *shard = static_cast<unsigned char *>(plan.shard);
    std::vector<Span> spans;
    if (packs) {
      if (fusion.size() < plan.total * travelWidth)
        fusion.resize(plan.total * travelWidth);
      spans.push_back({fusion.data(), plan.total});
    } else {
      for (size_t i = 0; i < plan.buffers.size(); ++i)
        spans.push_back(
            {static_cast<unsigned char *>(plan.buffers[i]), plan.counts[i]});
    }
    if (plan.kind == PlanKind::ReduceScatter) {
      if (packs) {
        TracePhase pack(plan.trace, COMMRT_PHASE_PACK, ranks.size);
        unsigned char *next = fusion.data();
        for (size_t i = 0; i < plan.buffers.size(); ++i) {
          convert(plan.buffers[i], plan.dtype, next, travel, plan.counts[i],
                  plan.prescale);
          next += plan.counts[i] * travelWidth;
        }
      }
      if (ranks.size > 1) {
        TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
        COMMRT_TRY(ringReduceScatter(
            spans, mpiType(travel), travelWidth,
            mpiOp(travel, travelReduce(plan.wire, plan.reduce)), ranks.comm,
            scratch));
      }
      TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
      const double scale = unpackScale(plan.dtype, plan.wire, plan.reduce,
                                       plan.prescale, ranks.size);
      forEachPart(spans, own, travelWidth,
                  [&](unsigned char *at, int64_t offset, int64_t count) {
                    convert(at, travel, shard + offset * width, plan.dtype,
                            count, scale);
                  });
      if (plan.wire == COMMRT_WIRE_NONE && plan.reduce == COMMRT_AVG)
        divideBySize(shard, own.length, plan.dtype, ranks.size);
      std::fill(shard + own.length * width, shard + shardCount * width, 0);
      return COMMRT_SUCCESS;
    }
    {
      TracePhase pack(plan.trace, COMMRT_PHASE_PACK, ranks.size);
      forEachPart(spans, own, travelWidth,
                  [&](unsigned char *at, int64_t offset, int64_t count) {
                    convert(shard + offset * width, plan.dtype, at, travel,
                            count, plan.prescale);
                  });
    }
    if (ranks.size > 1) {
      TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
      COMMRT_TRY(
          ringAllGather(spans, mpiType(travel), travelWidth, ranks.comm));
    }
    if (packs) {
      TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
      // Undoes the prescale; nothing was reduced.
      const double scale = unpackScale(plan.dtype, plan.wire, COMMRT_SUM,
                                       plan.prescale, ranks.size);
      const unsigned char *next = fusion.data();
      for (size_t i = 0; i < plan.buffers.size(); ++i) {
        convert(next, travel, plan.buffers[i], plan.dtype, plan.counts[i],
                scale);
        next += plan.counts[i] * travelWidth;
      }
    }
    return COMMRT_SUCCESS;
  }

  /// Calls `visit(at, offset, count)` for each part of the elements
  /// [range.begin, range.begin + range.length) of the concatenation of
  /// `spans` (elements of `width` bytes) that lies in one span: `at` is its
  /// first element, `offset` its place within the range.
  template <typename Visit>
  static void forEachPart(const std::vector<Span> &spans, Shard range,
                          size_t width, Visit &&visit) {
    int64_t spanBegin = 0;
    for (const Span &span : spans) {
      const int64_t from = std::max(range.begin, spanBegin);
      const int64_t to =
          std::min(range.begin + range.length, spanBegin + span.count);
      if (from < to)
        visit(span.data + (from - spanBegin) * width, from - range.begin,
              to - from);
      spanBegin += span.count;
    }
  }

  /// Runs the mixed-wire `plan` (commrt_mixed_allreduce) over `ranks`: the
  /// narrowed buffers go, as the wire type, to the front of `fusion`, padded
  /// with zeros to a whole element of the plan's dtype, and the others after
  /// them as the dtype; one ring allreduce reduces the whole in units of the
  /// dtype's width, each segment in its own type (MixedReduction).
  commrt_status runMixed(const Plan &plan, const Ranks &ranks,
                         std::vector<unsigned char> &fusion,
                         std::vector<unsigned char> &scratch) const {
    const auto wire = static_cast<commrt_dtype>(plan.wire);
    const size_t width = elementSize(plan.dtype), wireWidth = elementSize(wire);
    int64_t narrowCount = 0;
    for (size_t i = 0; i < plan.buffers.size(); ++i)
      if (plan.narrowed[i])
        narrowCount += plan.counts[i];
    const int64_t narrowUnits =
        static_cast<int64_t>((narrowCount * wireWidth + width - 1) / width);
    const int64_t units = narrowUnits + (plan.total - narrowCount);
    if (fusion.size() < static_cast<size_t>(units) * width)
      fusion.resize(units * width);
    unsigned char *narrowAt = fusion.data();
    unsigned char *fullAt = fusion.data() + narrowUnits * width;
    {
      TracePhase pack(plan.trace, COMMRT_PHASE_PACK, ranks.size);
      std::fill(narrowAt + narrowCount * wireWidth, fullAt, 0);
      for (size_t i = 0; i < plan.buffers.size(); ++i) {
        unsigned char *&at = plan.narrowed[i] ? narrowAt : fullAt;
        convert(plan.buffers[i], plan.dtype, at,
                plan.narrowed[i] ? wire : plan.dtype, plan.counts[i],
                plan.narrowed[i] ? plan.prescale : 1.0);
        at += plan.counts[i] * (plan.narrowed[i] ? wireWidth : width);
      }
    }
    if (ranks.size > 1) {
      TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
      COMMRT_TRY(ringAllreduce(
          {{fusion.data(), units}}, mpiType(plan.dtype), width,
          MixedReduction(narrowUnits, width, type16,
                         mpiOp(wire, travelReduce(plan.wire, plan.reduce)),
                         mpiType(plan.dtype), mpiOp(plan.dtype, plan.reduce)),
          ranks.comm, scratch));
    }
    TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
    const double scale = unpackScale(plan.dtype, plan.wire, plan.reduce,
                                     plan.prescale, ranks.size);
    narrowAt = fusion.data();
    fullAt = fusion.data() + narrowUnits * width;
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      if (plan.narrowed[i]) {
        convert(narrowAt, wire, plan.buffers[i], plan.dtype, plan.counts[i],
                scale);
        narrowAt += plan.counts[i] * wireWidth;
        continue;
      }
      convert(fullAt, plan.dtype, plan.buffers[i], plan.dtype, plan.counts[i],
              1.0);
      if (plan.reduce == COMMRT_AVG)
        divideBySize(plan.buffers[i], plan.counts[i], plan.dtype, ranks.size);
      fullAt += plan.counts[i] * width;
    }
    return COMMRT_SUCCESS;
  }

  /// How a reduction runs (methodFor).
  enum class Method { Ring, Mpi, Hierarchical };

  /// Runs the allreduce `plan`, whose buffers are all device memory, on the
  /// device work of `call`'s lane: its buffers packed into the lane's wire
  /// buffer on the device (unless it reduces its one buffer in place); that
  /// buffer reduced by the staged ring where the ranks agreed on it
  /// (`stagedRing`), by MPI itself where MPI reads device memory and
  /// `method` is MPI_Allreduce's, else staged through host memory and
  /// reduced as `method` says; then unpacked on the device.
  commrt_status reduceOnDevice(const Plan &plan, Method method, bool stagedRing,
                               const DeviceCall &call, const Ranks &ranks,
                               std::vector<unsigned char> &scratch) const {
    TracePhase callPhase(plan.trace, COMMRT_PHASE_CALL, ranks.size);
    const commrt_dtype travel = travelType(plan.dtype, plan.wire);
    const commrt_reduce travelled = travelReduce(plan.wire, plan.reduce);
    const size_t travelWidth = elementSize(travel);
    DeviceLane &lane = *call.lane;
    std::unique_ptr<StagingQueue> queue;
    COMMRT_TRY(lane.queue(travel, travelled, queue));

    void *wire = plan.buffers[0];
    std::vector<StagingQueue::Conversion> packed;
    if (!plan.inPlace()) {
      COMMRT_TRY(lane.scratch(DeviceLane::Slot::Wire,
                              static_cast<size_t>(plan.total) * travelWidth,
                              wire));
      auto *next = static_cast<unsigned char *>(wire);
      for (size_t i = 0; i < plan.buffers.size(); ++i) {
        packed.push_back({plan.buffers[i], next, plan.counts[i]});
        next += static_cast<size_t>(plan.counts[i]) * travelWidth;
      }
      TracePhase pack(plan.trace, COMMRT_PHASE_PACK, ranks.size);
      COMMRT_TRY(queue->convert(packed, plan.dtype, travel, plan.prescale));
    }
    {
      TracePhase exchange(plan.trace, COMMRT_PHASE_EXCHANGE, ranks.size);
      if (stagedRing) {
        void *segment;
        COMMRT_TRY(lane.scratch(
            DeviceLane::Slot::RingSegment,
            static_cast<size_t>(shardElements(plan.total, ranks.size)) *
                travelWidth,
            segment));
        COMMRT_TRY(stagedRingAllreduce(
            wire, plan.total, mpiType(travel), travelWidth, *queue, segment,
            lane.staging(), ranks.comm, kRingPieceBytes));
      } else if (call.mpiReadsDevice && method == Method::Mpi &&
                 travelWidth > 2) {
        // MPI reads the buffer once the device has written it; the 16-bit
        // types' reductions are host code.
        COMMRT_TRY(queue->finish());
        COMMRT_TRY(
            allreduceChunked(wire, plan.total, travel, travelled, ranks.comm));
      } else {
        COMMRT_TRY(runStaged(
            {{wire, static_cast<size_t>(plan.total) * travelWidth,
              /*onDevice=*/true, /*in=*/true, /*out=*/true}},
            lane,
            [&](const std::vector<void *> &host) {
              return allreduce(host[0], plan.total, travel, travelled,
                               plan.algorithm, ranks, scratch);
            },
            &plan.trace, ranks.size));
      }
    }
    if (!plan.inPlace()) {
      TracePhase unpack(plan.trace, COMMRT_PHASE_UNPACK, ranks.size);
      std::vector<StagingQueue::Conversion> unpacked;
      for (size_t i = 0; i < plan.buffers.size(); ++i)
        unpacked.push_back({packed[i].output, plan.buffers[i], plan.counts[i]});
      COMMRT_TRY(queue->convert(unpacked, travel, plan.dtype,
                                unpackScale(plan.dtype, plan.wire, plan.reduce,
                                            plan.prescale, ranks.size)));
    }
    // The caller reads the results when the call returns.
    return queue->finish();
  }

  /// How `count` elements of `dtype` are reduced over `ranks`: as
  /// `algorithm` says, or for COMMRT_ALGORITHM_DEFAULT as the configuration
  /// says (see commrt.h). The ring needs more than one rank, the hierarchy
  /// several nodes of more than one rank.
  Method methodFor(commrt_algorithm algorithm, int64_t count,
                   commrt_dtype dtype, const Ranks &ranks) const {
    const Method flat = ranks.size > 1 ? Method::Ring : Method::Mpi;
    switch (algorithm) {
    case COMMRT_ALGORITHM_RING:
      return flat;
    case COMMRT_ALGORITHM_TREE:
      return Method::Mpi;
    case COMMRT_ALGORITHM_HIERARCHICAL:
      return ranks.hierarchy ? Method::Hierarchical : flat;
    case COMMRT_ALGORITHM_DEFAULT:
      break;
    }
    switch (config.algorithm) {
    case AllreduceAlgorithm::Mpi:
      return Method::Mpi;
    case AllreduceAlgorithm::Hierarchical:
      return ranks.hierarchy ? Method::Hierarchical : Method::Mpi;
    case AllreduceAlgorithm::Ring:
      return flat;
    case AllreduceAlgorithm::Auto:
      break;
    }
    return ranks.size > 2 && count * static_cast<int64_t>(elementSize(dtype)) >=
                                 config.ringMinBytes
               ? Method::Ring
               : Method::Mpi;
  }

  /// In-place allreduce of `count` elements of `dtype` at `buffer` over
  /// `ranks`, by ring or hierarchy (receiving into `scratch`) or
  /// MPI_Allreduce as methodFor says; AVG divides the sum by the number of
  /// ranks.
  commrt_status allreduce(void *buffer, int64_t count, commrt_dtype dtype,
                          commrt_reduce reduce, commrt_algorithm algorithm,
                          const Ranks &ranks,
                          std::vector<unsigned char> &scratch) const {
    commrt_status status;
    switch (methodFor(algorithm, count, dtype, ranks)) {
    case Method::Hierarchical:
      status =
          hierarchical(buffer, count, dtype, reduce, *ranks.hierarchy, scratch);
      break;
    case Method::Ring:
      status = ring({{static_cast<unsigned char *>(buffer), count}}, dtype,
                    reduce, ranks.comm, scratch);
      break;
    case Method::Mpi:
      status = allreduceChunked(buffer, count, dtype, reduce, ranks.comm);
      break;
    }
    if (status)
      return status;
    if (reduce == COMMRT_AVG)
      divideBySize(buffer, count, dtype, ranks.size);
    return COMMRT_SUCCESS;
  }

  /// MPI_Allreduce in place, in pieces of at most INT_MAX elements since MPI
  /// counts are ints. AVG is reduced as SUM.
  commrt_status allreduceChunked(void *buffer, int64_t count,
                                 commrt_dtype dtype, commrt_reduce reduce,
                                 MPI_Comm comm) const {
    MPI_Datatype type = mpiType(dtype);
    MPI_Op op = mpiOp(dtype, reduce);
    auto *bytes = static_cast<char *>(buffer);
    for (int64_t done = 0; done < count;) {
      int chunk = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      MPI_Request request;
      if (int error =
              MPI_Iallreduce(MPI_IN_PLACE, bytes + done * elementSize(dtype),
                             chunk, type, op, comm, &request))
        return failMpi("MPI_Iallreduce", error);
      COMMRT_TRY(waitFor(comm, request, "MPI_Iallreduce"));
      done += chunk;
    }
    return COMMRT_SUCCESS;
  }

  /// Hierarchical allreduce in place (see the file comment) over the two
  /// levels `levels`, each node's pieces reduced into `scratch`, in parts of
  /// kHierarchyPartBytes whose three phases are pipelined. Piece `i` of a
  /// part of n elements is n / q elements, one more for the first n % q.
  /// AVG is reduced as SUM.
  commrt_status hierarchical(void *buffer, int64_t count, commrt_dtype dtype,
                             commrt_reduce reduce, const Hierarchy &levels,
                             std::vector<unsigned char> &scratch) const {
    ++hierarchicalRuns;
    MPI_Datatype type = mpiType(dtype);
    MPI_Op op = mpiOp(dtype, reduce);
    const size_t width = elementSize(dtype);
    const int q = levels.nodeSize, own = levels.nodeRank;
    // The parts, pipelined: while one part crosses between nodes, the next
    // is reduce-scattered and the last allgathered within the node.
    const int64_t partCount = std::clamp<int64_t>(
        kHierarchyPartBytes / static_cast<int64_t>(width), 1, INT_MAX);
    struct Part {
      unsigned char *at;
      std::vector<int> counts, displacements;
      MPI_Request scatter = MPI_REQUEST_NULL, gather = MPI_REQUEST_NULL;
    };
    std::vector<Part> parts;
    for (int64_t done = 0; done < count; done += partCount) {
      int64_t part = std::min(count - done, partCount);
      int64_t base = part / q, extra = part % q;
      Part made{static_cast<unsigned char *>(buffer) + done * width,
                std::vector<int>(q), std::vector<int>(q)};
      for (int i = 0; i < q; ++i) {
        made.counts[i] = static_cast<int>(base + (i < extra ? 1 : 0));
        made.displacements[i] =
            static_cast<int>(i * base + std::min<int64_t>(i, extra));
      }
      parts.push_back(std::move(made));
    }
    // Two slots of one piece each: part j is reduced into slot j % 2.
    const int64_t slotBytes = parts[0].counts[0] * static_cast<int64_t>(width);
    if (static_cast<int64_t>(scratch.size()) < 2 * slotBytes)
      scratch.resize(2 * slotBytes);
    auto slot = [&](size_t j) { return scratch.data() + (j % 2) * slotBytes; };
    auto scatter = [&](size_t j) -> commrt_status {
      if (int error =
              MPI_Ireduce_scatter(parts[j].at, slot(j), parts[j].counts.data(),
                                  type, op, levels.node, &parts[j].scatter))
        return failMpi("MPI_Ireduce_scatter (hierarchical allreduce)", error);
      return COMMRT_SUCCESS;
    };
    auto wait = [](MPI_Comm comm, MPI_Request &request) -> commrt_status {
      return waitFor(comm, request, "MPI_Wait (hierarchical allreduce)");
    };
    // The ring's receive slots.
    std::vector<unsigned char> ringScratch;
    COMMRT_TRY(scatter(0));
    for (size_t j = 0; j < parts.size(); ++j) {
      Part &part = parts[j];
      COMMRT_TRY(wait(levels.node, part.scatter));
      if (j + 1 < parts.size()) {
        // Slot (j + 1) % 2 is free once part j - 1 is gathered from it.
        if (j > 0)
          COMMRT_TRY(wait(levels.node, parts[j - 1].gather));
        COMMRT_TRY(scatter(j + 1));
      }
      // Across nodes, large pieces take the ring: OpenMPI's allreduce over
      // TCP reaches about half the link rate, and this is the level where
      // the link is slow. Its waits also progress the node's collectives.
      const int piece = part.counts[own];
      if (static_cast<int64_t>(piece) * static_cast<int64_t>(width) >=
          config.ringMinBytes) {
        COMMRT_TRY(ringAllreduce({{slot(j), piece}}, type, width, op,
                                 levels.peers, ringScratch));
      } else {
        MPI_Request request;
        if (int error = MPI_Iallreduce(MPI_IN_PLACE, slot(j), piece, type, op,
                                       levels.peers, &request))
          return failMpi("MPI_Iallreduce (hierarchical allreduce)", error);
        COMMRT_TRY(wait(levels.peers, request));
      }
      if (int error = MPI_Iallgatherv(
              slot(j), piece, type, part.at, part.counts.data(),
              part.displacements.data(), type, levels.node, &part.gather))
        return failMpi("MPI_Iallgatherv (hierarchical allreduce)", error);
    }
    for (Part &part : parts)
      COMMRT_TRY(wait(levels.node, part.gather));
    return COMMRT_SUCCESS;
  }

  /// The MPI datatype carrying `dtype`.
  MPI_Datatype mpiType(commrt_dtype dtype) const {
    return mpiTypeOf(dtype, type16);
  }

  /// The MPI op reducing `dtype` with `reduce`; AVG sums.
  MPI_Op mpiOp(commrt_dtype dtype, commrt_reduce reduce) const {
    static const MPI_Op builtinOps[] = {MPI_SUM, MPI_SUM, MPI_MAX, MPI_MIN};
    if (dtype == COMMRT_F16 || dtype == COMMRT_BF16)
      return ops16[dtype - COMMRT_F16][reduce];
    return builtinOps[reduce];
  }

  /// Ring allreduce (see ringAllreduce) of the concatenation of `spans`,
  /// elements of `dtype`; AVG is reduced as SUM.
  commrt_status ring(const std::vector<Span> &spans, commrt_dtype dtype,
                     commrt_reduce reduce, MPI_Comm comm,
                     std::vector<unsigned char> &scratch) const {
    return ringAllreduce(spans, mpiType(dtype), elementSize(dtype),
                         mpiOp(dtype, reduce), comm, scratch);
  }

  /// Divides the reduced sum at `buffer` by the number of ranks, `size`.
  void divideBySize(void *buffer, int64_t count, commrt_dtype dtype,
                    int size) const {
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

  AllreduceConfig config;
  /// A 2-byte contiguous type carrying f16 and bf16 elements.
  MPI_Datatype type16 = MPI_DATATYPE_NULL;
  /// User ops for [f16, bf16] x commrt_reduce.
  MPI_Op ops16[2][4] = {};
};

/// What a channel's thread and the caller share about one collective.
struct Shared {
  Shared(const Plan &plan, DeviceCall device)
      : plan(plan), device(std::move(device)) {}
  Shared(const SparseArguments &sparse, DeviceCall device)
      : sparse(sparse), device(std::move(device)) {}

  /// The dense plan, unless `sparse` is set.
  const Plan plan;
  /// The sparse allreduce, instead of a plan.
  const std::optional<SparseArguments> sparse;
  /// Where its buffers are.
  const DeviceCall device;
  /// Set once the results are in the buffers.
  TaskOutcome outcome;
};

/// A collective queued on a channel.
class MpiOperation final : public Operation {
public:
  explicit MpiOperation(std::shared_ptr<Shared> shared)
      : shared(std::move(shared)) {}

  commrt_status test(bool &done) override {
    done = shared->outcome.isDone();
    return COMMRT_SUCCESS;
  }

  commrt_status wait() override { return shared->outcome.wait(); }

  commrt_status waitFor(double seconds, bool &done) override {
    done = shared->outcome.waitFor(seconds);
    return COMMRT_SUCCESS;
  }

private:
  std::shared_ptr<Shared> shared;
};

/// A channel of a group: a communicator of its own (a duplicate of the
/// group's, which it frees), and a thread that runs the queued collectives
/// one after the other, started by the first.
class Channel {
public:
  Channel(const Reducer &reducer, Ranks ranks)
      : reducer(reducer), ranks(ranks) {}

  /// Completes the queued collectives, then stops the thread.
  ~Channel() {
    thread.stop();
    MPI_Comm_free(&ranks.comm);
  }

  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;

  /// Queues the collective `shared`.
  commrt_status submit(std::shared_ptr<Shared> shared) {
    return thread.submit([this, shared] {
      const TraceContext &trace =
          shared->sparse ? shared->sparse->trace : shared->plan.trace;
      // Not when tracing began after the start.
      if (isTracing() && trace.startedUs > 0)
        recordTraceEvent(trace, COMMRT_PHASE_QUEUED, trace.startedUs,
                         commrt_time_us(), ranks.size, /*cpuUs=*/-1);
      shared->outcome.finish(
          shared->sparse
              ? sparseWithDevice(*shared->sparse, shared->device, ranks.comm)
              : reducer.runWithDevice(shared->plan, shared->device, ranks,
                                      fusion, scratch));
    });
  }

  /// The channel's device lane, made on the caller's thread by the first
  /// collective with device buffers; its work runs on the channel's thread.
  std::unique_ptr<DeviceLane> lane;

private:
  const Reducer &reducer;
  Ranks ranks;
  /// The channel's fusion and ring buffers; only its thread touches them.
  std::vector<unsigned char> fusion, scratch;
  ChannelThread thread;
};

/// The ranks of a process group, as the MPI backend runs its collectives.
struct Group {
  /// The group's communicator, for blocking collectives (the caller's).
  Ranks ranks;
  /// The fusion and ring buffers of blocking collectives.
  std::vector<unsigned char> fusion, scratch;
  /// The device lane of blocking collectives, made by the first with device
  /// buffers.
  std::unique_ptr<DeviceLane> lane;
  /// The group's channels.
  std::vector<std::unique_ptr<Channel>> channels;
};

/// Makes `channels` duplicates of `comm`, which return errors, into
/// `channelComms`. Collective over `comm`.
commrt_status duplicate(MPI_Comm comm, int channels,
                        std::vector<MPI_Comm> &channelComms) {
  for (int i = 0; i < channels; ++i) {
    MPI_Comm channelComm;
    if (int error = MPI_Comm_dup(comm, &channelComm)) {
      for (MPI_Comm &created : channelComms)
        MPI_Comm_free(&created);
      channelComms.clear();
      return failMpi("MPI_Comm_dup", error);
    }
    MPI_Comm_set_errhandler(channelComm, MPI_ERRORS_RETURN);
    channelComms.push_back(channelComm);
  }
  return COMMRT_SUCCESS;
}

class MpiBackend final : public Backend {
public:
  /// A backend without groups; insertGroup adds group 0 next.
  MpiBackend(int channels, int threadLevel, const AllreduceConfig &config)
      : channelCount(channels), threadLevel(threadLevel), reducer(config) {}

  commrt_backend kind() const override { return COMMRT_BACKEND_MPI; }

  commrt_status addGroup(int group, MPI_Comm comm, int, int) override {
    std::vector<MPI_Comm> channelComms;
    COMMRT_TRY(duplicate(comm, channelCount, channelComms));
    return insertGroup(group, comm, std::move(channelComms));
  }

  commrt_status run(const Plan &plan, int group) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    DeviceCall call;
    COMMRT_TRY(locate(plan, found->lane, call));
    return reducer.runWithDevice(plan, call, found->ranks, found->fusion,
                                 found->scratch);
  }

  commrt_status start(const Plan &plan, int group, int channel,
                      std::unique_ptr<Operation> &operation) override {
    return startOnChannel(plan, group, channel, operation);
  }

  commrt_status startSparse(const SparseArguments &args, int group, int channel,
                            std::unique_ptr<Operation> &operation) override {
    return startOnChannel(args, group, channel, operation);
  }

  commrt_status sparse(const SparseArguments &args, int group) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    DeviceCall call;
    COMMRT_TRY(locate(args, found->lane, call));
    return sparseWithDevice(args, call, found->ranks.comm);
  }

  commrt_status rows(const RowsArguments &args, int group,
                     ReducedRows &result) override {
    Group *found;
    COMMRT_TRY(find(group, found));
    return rowsAllreduce(args, found->ranks.comm, result);
  }

  commrt_status broadcast(void *buffer, int64_t count, commrt_dtype dtype,
                          int root) override {
    Group &all = *groups[0];
    DeviceCall call;
    COMMRT_TRY(locate(
        {buffer}, [](size_t) -> std::string { return "buffer"; }, all.lane,
        call));
    const size_t bytes = static_cast<size_t>(count) * elementSize(dtype);
    return viaHost(call, {{buffer, bytes, call.anyOnDevice(), true, true}},
                   [&](const std::vector<void *> &host) {
                     return broadcastOverMpi(host[0], count, dtype, root,
                                             all.ranks.comm,
                                             reducer.halfType());
                   });
  }

  commrt_status allgather(const void *send, void *recv, const int64_t *counts,
                          commrt_dtype dtype) override {
    Group &all = *groups[0];
    int rank;
    MPI_Comm_rank(all.ranks.comm, &rank);
    int64_t total = 0;
    for (int r = 0; r < all.ranks.size; ++r)
      total += counts[r];
    DeviceCall call;
    // An empty send may be null.
    std::vector<const void *> pointers = {recv};
    if (counts[rank] > 0)
      pointers.push_back(send);
    COMMRT_TRY(locate(
        pointers, [](size_t i) -> std::string { return i ? "send" : "recv"; },
        all.lane, call));
    const size_t width = elementSize(dtype);
    std::vector<StagedBuffer> buffers = {
        {recv, static_cast<size_t>(total) * width,
         !call.onDevice.empty() && call.onDevice[0], false, true}};
    if (counts[rank] > 0)
      buffers.push_back(
          {const_cast<void *>(send), static_cast<size_t>(counts[rank]) * width,
           !call.onDevice.empty() && call.onDevice[1], true, false});
    return viaHost(call, buffers, [&](const std::vector<void *> &host) {
      return allgatherOverMpi(counts[rank] > 0 ? host[1] : send, host[0],
                              counts, dtype, all.ranks.comm,
                              reducer.halfType());
    });
  }

  /// Adds `group`, the ranks of `comm`, whose channels run on
  /// `channelComms` (freed with the channels, also on failure). Splits the
  /// node and peers communicators of `comm` and of every channel's, for the
  /// hierarchical allreduce, which a plan may ask for whatever the
  /// configuration. Collective over `comm`.
  commrt_status insertGroup(int group, MPI_Comm comm,
                            std::vector<MPI_Comm> channelComms) {
    auto added = std::make_unique<Group>();
    added->ranks.comm = comm;
    MPI_Comm_size(comm, &added->ranks.size);
    std::vector<Ranks> channelRanks;
    for (MPI_Comm channelComm : channelComms)
      channelRanks.push_back(Ranks{channelComm, added->ranks.size});
    commrt_status status = COMMRT_SUCCESS;
    const AllreduceConfig &config = reducer.configuration();
    if (added->ranks.size > 1) {
      // Nodes of consecutive ranks count ranks of the backend's communicator,
      // which group 0 is being made over when there is none yet.
      int baseRank;
      MPI_Comm_rank(groups.empty() ? comm : groups.at(0)->ranks.comm,
                    &baseRank);
      std::shared_ptr<Hierarchy> levels;
      status = makeHierarchy(comm, baseRank, config.ranksPerNode, levels);
      added->ranks.hierarchy = levels;
      for (Ranks &ranks : channelRanks) {
        if (status != COMMRT_SUCCESS)
          break;
        status =
            makeHierarchy(ranks.comm, baseRank, config.ranksPerNode, levels);
        ranks.hierarchy = levels;
      }
    }
    for (Ranks &ranks : channelRanks)
      added->channels.push_back(std::make_unique<Channel>(reducer, ranks));
    if (status != COMMRT_SUCCESS)
      return status;
    groups[group] = std::move(added);
    return COMMRT_SUCCESS;
  }

  /// Makes this rank's device access (none where it has none) and agrees
  /// with every rank whether all have one. Collective over `comm`.
  commrt_status findDevices(MPI_Comm comm) {
    device = makeDeviceAccess();
    return agreeOnEveryRank(device != nullptr, comm, everyRankHasDevice);
  }

private:
  /// Sets `call` to where the `pointers` are (the argument `names[i]`
  /// holds `pointers[i]`, for messages), making `lane` where it is needed
  /// and not made yet. Nothing where this rank has no device access.
  commrt_status locate(const std::vector<const void *> &pointers,
                       const DeviceAccess::NameOf &nameOf,
                       std::unique_ptr<DeviceLane> &lane, DeviceCall &call) {
    if (!device)
      return COMMRT_SUCCESS;
    call.mpiReadsDevice = device->mpiReadsDevice();
    call.everyRankHasDevice = everyRankHasDevice;
    COMMRT_TRY(device->locate(pointers, nameOf, call.onDevice));
    if (!call.anyOnDevice())
      return COMMRT_SUCCESS;
    if (!lane)
      COMMRT_TRY(device->makeLane(lane));
    call.lane = lane.get();
    return lane->markCaller(call.orderLane);
  }

  /// Where the buffers (then the shard) of `plan` are.
  commrt_status locate(const Plan &plan, std::unique_ptr<DeviceLane> &lane,
                       DeviceCall &call) {
    std::vector<const void *> pointers(plan.buffers.begin(),
                                       plan.buffers.end());
    if (plan.kind != PlanKind::Allreduce)
      pointers.push_back(plan.shard);
    return locate(
        pointers,
        [&plan](size_t i) -> std::string {
          return i < plan.buffers.size() ? "buffers[" + std::to_string(i) + "]"
                                         : "shard";
        },
        lane, call);
  }

  /// Where the grad and residual (where there is one) of `args` are.
  commrt_status locate(const SparseArguments &args,
                       std::unique_ptr<DeviceLane> &lane, DeviceCall &call) {
    std::vector<const void *> pointers = {args.grad};
    if (args.residual)
      pointers.push_back(args.residual);
    return locate(
        pointers,
        [](size_t i) -> std::string { return i ? "residual" : "grad"; }, lane,
        call);
  }

  /// Runs `collective` over `buffers` (flagged `onDevice` as `call` found
  /// them), as MPI takes them: as they are where MPI reads device memory,
  /// through host copies otherwise (runStaged).
  static commrt_status
  viaHost(const DeviceCall &call, const std::vector<StagedBuffer> &buffers,
          const std::function<commrt_status(const std::vector<void *> &)>
              &collective) {
    if (call.anyOnDevice()) {
      COMMRT_TRY(call.orderLane());
      if (!call.mpiReadsDevice)
        return runStaged(buffers, *call.lane, collective);
      COMMRT_TRY(waitForCallerWork(*call.lane));
    }
    std::vector<void *> asTheyAre;
    for (const StagedBuffer &buffer : buffers)
      asTheyAre.push_back(buffer.pointer);
    return collective(asTheyAre);
  }

  /// Queues `work` (a Plan or SparseArguments) on `channel` of `group`,
  /// with where its buffers are, and sets `operation` to it.
  template <typename Work>
  commrt_status startOnChannel(const Work &work, int group, int channel,
                               std::unique_ptr<Operation> &operation) {
    Group *found;
    COMMRT_TRY(find(group, found));
    DeviceCall call;
    COMMRT_TRY(locate(work, found->channels[channel]->lane, call));
    return submit(std::make_shared<Shared>(work, std::move(call)), group,
                  channel, operation);
  }

  /// Queues `shared` on `channel` of `group` and sets `operation` to it.
  commrt_status submit(std::shared_ptr<Shared> shared, int group, int channel,
                       std::unique_ptr<Operation> &operation) {
    if (threadLevel != MPI_THREAD_MULTIPLE)
      return fail(COMMRT_ERROR_UNAVAILABLE,
                  "asynchronous collectives over MPI need "
                  "MPI_THREAD_MULTIPLE, but MPI was initialised with ",
                  threadLevelName(threadLevel),
                  " (a program that initialises MPI itself must ask for "
                  "MPI_THREAD_MULTIPLE with MPI_Init_thread)");
    Group *found;
    COMMRT_TRY(find(group, found));
    COMMRT_TRY(found->channels[channel]->submit(shared));
    operation = std::make_unique<MpiOperation>(std::move(shared));
    return COMMRT_SUCCESS;
  }

  /// Sets `found` to the group `group`.
  commrt_status find(int group, Group *&found) {
    auto it = groups.find(group);
    if (it == groups.end())
      return failUnknownGroup(group);
    found = it->second.get();
    return COMMRT_SUCCESS;
  }

  /// The number of channels of every group.
  int channelCount;
  /// The thread support level MPI was initialised with.
  int threadLevel;
  /// This rank's device memory, where it has any (findDevices).
  std::unique_ptr<DeviceAccess> device;
  /// Whether every rank has device access.
  bool everyRankHasDevice = false;
  Reducer reducer;
  /// The groups by handle, 0 for all ranks. Declared after the reducer,
  /// which their channels' threads use, so that they are destroyed (and
  /// their collectives completed) first.
  std::map<int, std::unique_ptr<Group>> groups;
};

} // namespace

commrt_status commrt::broadcastOverMpi(void *buffer, int64_t count,
                                       commrt_dtype dtype, int root,
                                       MPI_Comm comm, MPI_Datatype type16) {
  MPI_Datatype type = mpiTypeOf(dtype, type16);
  auto *bytes = static_cast<char *>(buffer);
  for (int64_t done = 0; done < count;) {
    int chunk = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    MPI_Request request;
    if (int error = MPI_Ibcast(bytes + done * elementSize(dtype), chunk, type,
                               root, comm, &request))
      return failMpi("MPI_Ibcast", error);
    COMMRT_TRY(waitFor(comm, request, "MPI_Ibcast"));
    done += chunk;
  }
  return COMMRT_SUCCESS;
}

commrt_status commrt::allgatherOverMpi(const void *send, void *recv,
                                       const int64_t *counts,
                                       commrt_dtype dtype, MPI_Comm comm,
                                       MPI_Datatype type16) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> ints(size), displacements(size);
  int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > INT_MAX - offset)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                  "an allgather over MPI takes at most ", INT_MAX,
                  " elements in all (MPI's counts are ints); counts[0..", r,
                  "] add up to more");
    ints[r] = static_cast<int>(counts[r]);
    displacements[r] = static_cast<int>(offset);
    offset += counts[r];
  }
  MPI_Datatype type = mpiTypeOf(dtype, type16);
  MPI_Request request;
  if (int error = MPI_Iallgatherv(send, ints[rank], type, recv, ints.data(),
                                  displacements.data(), type, comm, &request))
    return failMpi("MPI_Iallgatherv", error);
  return waitFor(comm, request, "MPI_Iallgatherv");
}

commrt_status commrt::createMpiBackend(MPI_Comm comm, int channels,
                                       const AllreduceConfig &config,
                                       std::unique_ptr<Backend> &out) {
  // A bad COMMRT_WAIT fails here, before the first collective.
  const WaitPolicy *policy;
  COMMRT_TRY(waitPolicy(policy));
  int threadLevel;
  MPI_Query_thread(&threadLevel);
  std::vector<MPI_Comm> channelComms;
  COMMRT_TRY(duplicate(comm, channels, channelComms));
  auto backend = std::make_unique<MpiBackend>(channels, threadLevel, config);
  COMMRT_TRY(backend->findDevices(comm));
  COMMRT_TRY(backend->insertGroup(0, comm, std::move(channelComms)));
  out = std::move(backend);
  return COMMRT_SUCCESS;
}

int64_t commrt::hierarchicalAllreducesRun() { return hierarchicalRuns.load(); }
