//===- MpiDeviceBuffersTest.cpp - The MPI backend given device buffers ----===//
//
// The MPI backend's route for device buffers (DeviceStaging.h), through
// commrt's C API. Built twice:
//  - commrt-mpi-device-tests runs on CPUs with a device access whose
//    "device memory" is host memory mapped without access: the host may
//    touch it only inside the fake device queue's copies, conversions and
//    reductions, so that any host code reading or writing a device buffer
//    directly faults. It also counts what the device did: an in-place ring
//    allreduce of device memory on every rank must run the staged ring
//    (reductions on the device queue), a plan of device buffers must be
//    packed and unpacked on the device, and a rank whose buffer is host
//    memory must lead every rank to the host ring.
//  - commrt-gpu-mpi-device-tests (COMMRT_REAL_DEVICE) runs the same tests
//    on a CUDA device, through the backend's CUDA access, on any number of
//    ranks that may share the GPU; the counts are the fake's alone and are
//    not checked there. It skips without a device.
// Every entry point must give the results it gives host buffers.
//
//===----------------------------------------------------------------------===//

#include "DeviceStaging.h"
#include "MpiTestUtils.h"
#include "ReduceElements.h"
#include "RuntimeTestUtils.h"
#include "WireFormat.h"

#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#if COMMRT_REAL_DEVICE
#include "GpuTestUtils.h"

#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace commrt::testing;

namespace {

#if COMMRT_REAL_DEVICE
constexpr bool kFakeDevice = false;
#else
constexpr bool kFakeDevice = true;
#endif

// Checks of what the fake device counted; a real device counts nothing.
#define EXPECT_COUNT_EQ(count, expected)                                       \
  if constexpr (kFakeDevice)                                                   \
  EXPECT_EQ(count, expected)
#define EXPECT_COUNT_GT(count, bound)                                          \
  if constexpr (kFakeDevice)                                                   \
  EXPECT_GT(count, bound)
#define EXPECT_COUNT_TRUE(condition)                                           \
  if constexpr (kFakeDevice)                                                   \
  EXPECT_TRUE(condition)

/// What the fake device did in this process, reset by each test.
struct DeviceCounts {
  std::atomic<int> copiesToHost{0}, copiesToDevice{0}, reductions{0},
      conversions{0};
  std::atomic<int> callerMarks{0}, lanesOrdered{0};
  /// Whether a lane was last ordered after the caller on another thread
  /// than the test's (a channel's).
  std::atomic<bool> orderedOffTheCaller{false};
  std::thread::id caller;

  void reset() {
    copiesToHost = copiesToDevice = reductions = conversions = 0;
    callerMarks = lanesOrdered = 0;
    orderedOffTheCaller = false;
    caller = std::this_thread::get_id();
  }
};
DeviceCounts counts;

#if !COMMRT_REAL_DEVICE
/// Whether the fake says that MPI reads device memory itself.
std::atomic<bool> mpiReadsDevice{false};

/// Fake device memory: anonymous mappings that the host may not access
/// (PROT_NONE) except inside withAccess, which the fake queue's work runs
/// in. Where MPI is to read device memory itself, it stays accessible.
class FakeDeviceMemory {
public:
  static FakeDeviceMemory &get() {
    static FakeDeviceMemory memory;
    return memory;
  }

  void *allocate(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    const size_t mapped = roundToPages(bytes);
    void *pointer =
        mmap(nullptr, mapped, PROT_READ | PROT_WRITE, kMapFlags, -1, 0);
    if (pointer == MAP_FAILED)
      return nullptr;
    regions[static_cast<char *>(pointer)] = mapped;
    protect(pointer, mapped);
    return pointer;
  }

  void release(void *pointer) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = regions.find(static_cast<char *>(pointer));
    if (it == regions.end())
      return;
    munmap(it->first, it->second);
    regions.erase(it);
  }

  /// Whether `pointer` lies in fake device memory.
  bool contains(const void *pointer) {
    std::lock_guard<std::mutex> lock(mutex);
    const char *at = static_cast<const char *>(pointer);
    auto it = regions.upper_bound(const_cast<char *>(at));
    if (it == regions.begin())
      return false;
    --it;
    return at < it->first + it->second;
  }

  /// Runs `work` with every mapping readable and writable: the fake
  /// device's own access.
  template <typename Work> void withAccess(Work work) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[begin, bytes] : regions)
      mprotect(begin, bytes, PROT_READ | PROT_WRITE);
    work();
    for (auto &[begin, bytes] : regions)
      protect(begin, bytes);
  }

  /// Whether the host is kept out of device memory (not while MPI is to read
  /// it itself).
  void setGuarded(bool guard) {
    std::lock_guard<std::mutex> lock(mutex);
    guarded = guard;
    for (auto &[begin, bytes] : regions)
      protect(begin, bytes);
  }

private:
  static constexpr int kMapFlags = MAP_PRIVATE | MAP_ANONYMOUS;

  static size_t roundToPages(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  }
  void protect(void *begin, size_t bytes) {
    mprotect(begin, bytes, guarded ? PROT_NONE : PROT_READ | PROT_WRITE);
  }

  std::mutex mutex;
  std::map<char *, size_t> regions;
  bool guarded = true;
};

/// A StagingQueue that runs its work when it is enqueued (an in-order queue
/// whose work is always done), inside the fake device's access.
class ImmediateQueue final : public commrt::StagingQueue {
public:
  ImmediateQueue(commrt_dtype dtype, commrt_reduce reduce)
      : dtype(dtype), reduceKind(reduce) {}

  commrt_status copyToHost(void *to, const void *from, size_t bytes) override {
    ++counts.copiesToHost;
    FakeDeviceMemory::get().withAccess([&] { std::memcpy(to, from, bytes); });
    return COMMRT_SUCCESS;
  }
  commrt_status copyToDevice(void *to, const void *from,
                             size_t bytes) override {
    ++counts.copiesToDevice;
    FakeDeviceMemory::get().withAccess([&] { std::memcpy(to, from, bytes); });
    return COMMRT_SUCCESS;
  }
  commrt_status reduce(const void *from, void *into, int64_t count) override {
    ++counts.reductions;
    FakeDeviceMemory::get().withAccess(
        [&] { commrt::reduceElements(from, into, count, dtype, reduceKind); });
    return COMMRT_SUCCESS;
  }
  commrt_status convert(const std::vector<Conversion> &conversions,
                        commrt_dtype from, commrt_dtype to,
                        double scale) override {
    ++counts.conversions;
    FakeDeviceMemory::get().withAccess([&] {
      for (const Conversion &conversion : conversions)
        commrt::convert(conversion.input, from, conversion.output, to,
                        conversion.count, scale);
    });
    return COMMRT_SUCCESS;
  }
  commrt_status mark(int64_t &marker) override {
    marker = ++marks;
    return COMMRT_SUCCESS;
  }
  commrt_status reached(int64_t, bool &done) override {
    done = true;
    return COMMRT_SUCCESS;
  }
  commrt_status waitFor(int64_t) override { return COMMRT_SUCCESS; }

private:
  commrt_dtype dtype;
  commrt_reduce reduceKind;
  int64_t marks = 0;
};

class FakeLane final : public commrt::DeviceLane {
public:
  ~FakeLane() override {
    for (void *memory : deviceScratch)
      if (memory)
        FakeDeviceMemory::get().release(memory);
  }

  commrt_status markCaller(std::function<commrt_status()> &orderLane) override {
    ++counts.callerMarks;
    orderLane = [] {
      ++counts.lanesOrdered;
      counts.orderedOffTheCaller = std::this_thread::get_id() != counts.caller;
      return COMMRT_SUCCESS;
    };
    return COMMRT_SUCCESS;
  }
  commrt_status queue(commrt_dtype dtype, commrt_reduce reduce,
                      std::unique_ptr<commrt::StagingQueue> &made) override {
    made = std::make_unique<ImmediateQueue>(dtype, reduce);
    return COMMRT_SUCCESS;
  }
  commrt::StagingBuffers &staging() override { return hostStaging; }
  commrt_status scratch(Slot slot, size_t bytes, void *&memory) override {
    const int at = static_cast<int>(slot);
    if (bytes > scratchBytes[at]) {
      if (deviceScratch[at])
        FakeDeviceMemory::get().release(deviceScratch[at]);
      deviceScratch[at] = FakeDeviceMemory::get().allocate(bytes);
      scratchBytes[at] = bytes;
    }
    memory = deviceScratch[at];
    return COMMRT_SUCCESS;
  }

private:
  commrt::StagingBuffers hostStaging{
      [](size_t bytes) { return std::malloc(bytes); },
      [](void *buffer) { std::free(buffer); }};
  void *deviceScratch[2] = {nullptr, nullptr};
  size_t scratchBytes[2] = {0, 0};
};

class FakeDeviceAccess final : public commrt::DeviceAccess {
public:
  commrt_status locate(const std::vector<const void *> &pointers,
                       const NameOf &, std::vector<bool> &onDevice) override {
    onDevice.clear();
    for (const void *pointer : pointers)
      onDevice.push_back(FakeDeviceMemory::get().contains(pointer));
    return COMMRT_SUCCESS;
  }
  commrt_status makeLane(std::unique_ptr<commrt::DeviceLane> &lane) override {
    lane = std::make_unique<FakeLane>();
    return COMMRT_SUCCESS;
  }
  bool mpiReadsDevice() const override { return ::mpiReadsDevice.load(); }
};

/// Installed before main, so before the backend is made.
const bool fakeDeviceInstalled = [] {
  commrt::setDeviceAccessFactoryForTesting(
      [] { return std::make_unique<FakeDeviceAccess>(); });
  return true;
}();

/// A buffer of fake device memory holding `count` elements of `dtype`.
class DeviceBuffer {
public:
  DeviceBuffer(commrt_dtype dtype, int64_t count)
      : dtype(dtype), count(count),
        bytes(static_cast<size_t>(count) * commrt::elementSize(dtype)),
        memory(FakeDeviceMemory::get().allocate(bytes)) {}
  ~DeviceBuffer() { FakeDeviceMemory::get().release(memory); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *get() const { return memory; }

  void upload(TypedBuffer from) {
    FakeDeviceMemory::get().withAccess(
        [&] { std::memcpy(memory, from.data(), bytes); });
  }
  TypedBuffer download() const {
    TypedBuffer to(dtype, count);
    FakeDeviceMemory::get().withAccess(
        [&] { std::memcpy(to.data(), memory, bytes); });
    return to;
  }

private:
  commrt_dtype dtype;
  int64_t count;
  size_t bytes;
  void *memory;
};

#else
/// A buffer of device memory holding `count` elements of `dtype`.
class DeviceBuffer {
public:
  DeviceBuffer(commrt_dtype dtype, int64_t count)
      : dtype(dtype), count(count),
        bytes(static_cast<size_t>(count) * commrt::elementSize(dtype)) {
    EXPECT_EQ(cudaMalloc(&memory, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(memory); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *get() const { return memory; }

  void upload(TypedBuffer from) {
    EXPECT_EQ(cudaMemcpy(memory, from.data(), bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  TypedBuffer download() const {
    TypedBuffer to(dtype, count);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(to.data(), memory, bytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    return to;
  }

private:
  commrt_dtype dtype;
  int64_t count;
  size_t bytes;
  void *memory = nullptr;
};

#endif

/// Rank `r`'s contributions (RuntimeTestUtils.h) in `dtype`.
TypedBuffer contributions(commrt_dtype dtype, int64_t count, int r) {
  TypedBuffer values(dtype, count);
  for (int64_t i = 0; i < count; ++i)
    values.set(i, contribution(r, i));
  return values;
}

/// Expects `values` to be the exact `reduce` of every rank's contributions.
void expectReduced(const TypedBuffer &values, int64_t count,
                   commrt_reduce reduce, int ranks) {
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(values.get(i), expectedReduction(reduce, i, ranks))
        << "index " << i;
}

#if !COMMRT_REAL_DEVICE
/// Says where the host touched fake device memory, instead of a bare crash.
void reportFault(int) {
  const char message[] =
      "MpiDeviceBuffersTest: host code touched fake device memory (or another "
      "fault)\n";
  ssize_t ignored = write(2, message, sizeof message - 1);
  (void)ignored;
  std::_Exit(1);
}
#endif

class DeviceBuffersTest : public ::testing::Test {
protected:
  void SetUp() override {
#if COMMRT_REAL_DEVICE
    if (!gpuVisible())
      GTEST_SKIP() << "no CUDA device visible";
#else
    std::signal(SIGSEGV, reportFault);
    mpiReadsDevice = false;
    FakeDeviceMemory::get().setGuarded(true);
#endif
    counts.reset();
  }
};

/// Above COMMRT_RING_MIN_BYTES (1 MiB) in f32: the ring's, with more than
/// two ranks.
constexpr int64_t kRingCount = (int64_t(1) << 18) + 3;
/// Below it: MPI_Allreduce's.
constexpr int64_t kSmallCount = 1001;

/// Whether an allreduce of `bytes` runs the ring: with more than two ranks,
/// from 1 MiB on, unless COMMRT_ALLREDUCE chose another algorithm.
bool reducedByTheRing(int64_t bytes) {
  return std::getenv("COMMRT_ALLREDUCE") == nullptr && size() > 2 &&
         bytes >= (int64_t(1) << 20);
}

/// Expects what the fake device did to reduce one buffer in device memory
/// (a plan's one buffer, or the wire buffer it was packed into): the staged
/// ring's reductions of the received pieces where `byTheStagedRing`, else
/// one copy of it each way, the host reducing.
void expectReducedOnce(bool byTheStagedRing) {
  if (byTheStagedRing) {
    EXPECT_COUNT_GT(counts.reductions, 0);
    return;
  }
  EXPECT_COUNT_EQ(counts.reductions, 0);
  EXPECT_COUNT_EQ(counts.copiesToHost, 1);
  EXPECT_COUNT_EQ(counts.copiesToDevice, 1);
}

TEST_F(DeviceBuffersTest, InPlaceAllreduceMatchesTheExactReduction) {
  for (commrt_dtype dtype : {COMMRT_F32, COMMRT_F16, COMMRT_F64})
    for (commrt_reduce reduce : {COMMRT_SUM, COMMRT_AVG, COMMRT_MAX})
      for (int64_t count : {kSmallCount, kRingCount}) {
        SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + reduceName(reduce) +
                     " " + std::to_string(count));
        counts.reset();
        DeviceBuffer buffer(dtype, count);
        buffer.upload(contributions(dtype, count, rank()));
        ASSERT_EQ(commrt_allreduce(buffer.get(), count, dtype, reduce),
                  COMMRT_SUCCESS)
            << commrt_last_error();
        expectReduced(buffer.download(), count, reduce, size());
        EXPECT_COUNT_EQ(counts.callerMarks, 1);
        EXPECT_COUNT_EQ(counts.lanesOrdered, 1);
        expectReducedOnce(
            reducedByTheRing(
                count * static_cast<int64_t>(commrt::elementSize(dtype))) &&
            reduce != COMMRT_AVG);
      }
}

TEST_F(DeviceBuffersTest, FusedPlanOfDeviceAndHostBuffers) {
  const std::vector<int64_t> sizes = {kSmallCount, 37, 5000};
  DeviceBuffer first(COMMRT_F32, sizes[0]), last(COMMRT_F32, sizes[2]);
  TypedBuffer middle = contributions(COMMRT_F32, sizes[1], rank());
  first.upload(contributions(COMMRT_F32, sizes[0], rank()));
  last.upload(contributions(COMMRT_F32, sizes[2], rank()));
  void *buffers[] = {first.get(), middle.data(), last.get()};
  // f16 on the wire: the contributions and their sums are exact in f16.
  ASSERT_EQ(commrt_fused_allreduce(buffers, sizes.data(), 3, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_F16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectReduced(first.download(), sizes[0], COMMRT_SUM, size());
  expectReduced(middle, sizes[1], COMMRT_SUM, size());
  expectReduced(last.download(), sizes[2], COMMRT_SUM, size());
  // The host buffer is used where it is.
  EXPECT_COUNT_EQ(counts.copiesToHost, 2);
  EXPECT_COUNT_EQ(counts.copiesToDevice, 2);
}

TEST_F(DeviceBuffersTest, FusedPlanOfDeviceBuffersRunsOnTheDevice) {
  for (int32_t wire : {int32_t(COMMRT_F16), int32_t(COMMRT_WIRE_NONE)})
    for (commrt_reduce reduce : {COMMRT_SUM, COMMRT_AVG})
      for (int64_t second : {int64_t(37), kRingCount}) {
        SCOPED_TRACE(std::string(wire == COMMRT_F16 ? "f16" : "no") +
                     " wire, " + reduceName(reduce) + ", " +
                     std::to_string(second));
        counts.reset();
        const std::vector<int64_t> sizes = {kSmallCount, second};
        DeviceBuffer first(COMMRT_F32, sizes[0]), last(COMMRT_F32, sizes[1]);
        first.upload(contributions(COMMRT_F32, sizes[0], rank()));
        last.upload(contributions(COMMRT_F32, sizes[1], rank()));
        void *buffers[] = {first.get(), last.get()};
        ASSERT_EQ(commrt_fused_allreduce(buffers, sizes.data(), 2, COMMRT_F32,
                                         reduce, wire, 1.0f),
                  COMMRT_SUCCESS)
            << commrt_last_error();
        expectReduced(first.download(), sizes[0], reduce, size());
        expectReduced(last.download(), sizes[1], reduce, size());
        if (wire == COMMRT_WIRE_NONE && reduce == COMMRT_AVG) {
          // Divided on the host: every buffer staged.
          EXPECT_COUNT_EQ(counts.conversions, 0);
          EXPECT_COUNT_EQ(counts.copiesToHost, 2);
          continue;
        }
        // Packed and unpacked on the device.
        EXPECT_COUNT_EQ(counts.conversions, 2);
        const int64_t wireBytes =
            (sizes[0] + sizes[1]) * (wire == COMMRT_F16 ? 2 : 4);
        expectReducedOnce(reducedByTheRing(wireBytes));
      }
}

TEST_F(DeviceBuffersTest, StartedOnAChannelOrdersItsLaneThere) {
  DeviceBuffer buffer(COMMRT_F32, kRingCount);
  buffer.upload(contributions(COMMRT_F32, kRingCount, rank()));
  void *buffers[] = {buffer.get()};
  const int64_t counted[] = {kRingCount};
  int64_t handle = 0;
  ASSERT_EQ(commrt_fused_allreduce_start(buffers, counted, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  expectReduced(buffer.download(), kRingCount, COMMRT_SUM, size());
  // Marked on the caller's thread, ordered on the channel's.
  EXPECT_COUNT_EQ(counts.callerMarks, 1);
  EXPECT_COUNT_EQ(counts.lanesOrdered, 1);
  EXPECT_COUNT_TRUE(counts.orderedOffTheCaller);
}

TEST_F(DeviceBuffersTest, PlacementThatDiffersAcrossRanksTakesTheHostRing) {
  if (!reducedByTheRing(kRingCount * 4))
    GTEST_SKIP() << "the ring needs more than two ranks and COMMRT_ALLREDUCE "
                    "unset";
  // Rank 0's buffer is host memory, the others' device memory.
  TypedBuffer onHost = contributions(COMMRT_F32, kRingCount, rank());
  DeviceBuffer onDevice(COMMRT_F32, kRingCount);
  onDevice.upload(onHost);
  void *buffer = rank() == 0 ? onHost.data() : onDevice.get();
  ASSERT_EQ(commrt_allreduce(buffer, kRingCount, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectReduced(rank() == 0 ? onHost : onDevice.download(), kRingCount,
                COMMRT_SUM, size());
  EXPECT_COUNT_EQ(counts.reductions, 0);
  EXPECT_COUNT_EQ(counts.copiesToHost, rank() == 0 ? 0 : 1);
}

class DeviceSparseTest : public DeviceBuffersTest,
                         public ::testing::WithParamInterface<SparseScheme> {};

TEST_P(DeviceSparseTest, MatchesTheHostPathBitForBit) {
  auto [select, exchange, reduce] = GetParam();
  constexpr int64_t count = 4099;
  std::vector<float> grad(count), residual(count);
  for (int64_t i = 0; i < count; ++i) {
    grad[i] = static_cast<float>(contribution(rank(), i * 7 + 3)) * 0.37f;
    residual[i] = static_cast<float>(i % 13) * 0.01f;
  }
  std::vector<float> hostGrad = grad, hostResidual = residual;
  ASSERT_EQ(commrt_sparse_allreduce(hostGrad.data(), hostResidual.data(), count,
                                    0.05, select, exchange, reduce, 64),
            COMMRT_SUCCESS)
      << commrt_last_error();

  counts.reset();
  TypedBuffer gradValues(COMMRT_F32, count), residualValues(COMMRT_F32, count);
  std::memcpy(gradValues.data(), grad.data(), count * sizeof(float));
  std::memcpy(residualValues.data(), residual.data(), count * sizeof(float));
  DeviceBuffer deviceGrad(COMMRT_F32, count), deviceResidual(COMMRT_F32, count);
  deviceGrad.upload(gradValues);
  deviceResidual.upload(residualValues);
  int64_t handle = 0;
  ASSERT_EQ(commrt_sparse_allreduce_start(
                static_cast<float *>(deviceGrad.get()),
                static_cast<float *>(deviceResidual.get()), count, 0.05, select,
                exchange, reduce, 64, /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  TypedBuffer gotGrad = deviceGrad.download();
  TypedBuffer gotResidual = deviceResidual.download();
  EXPECT_EQ(std::memcmp(gotGrad.data(), hostGrad.data(), count * 4), 0);
  EXPECT_EQ(std::memcmp(gotResidual.data(), hostResidual.data(), count * 4), 0);
  EXPECT_COUNT_EQ(counts.copiesToHost, 2);
  EXPECT_COUNT_EQ(counts.copiesToDevice, 2);
}

/// The phases recorded by `collective`, in the order they ended, traced
/// alone.
template <typename Collective>
std::vector<commrt_trace_event> phasesOf(Collective &&collective) {
  EXPECT_EQ(commrt_trace_start(64), COMMRT_SUCCESS) << commrt_last_error();
  collective();
  EXPECT_EQ(commrt_trace_stop(), COMMRT_SUCCESS) << commrt_last_error();
  std::vector<commrt_trace_event> events(64);
  int64_t count = 0;
  EXPECT_EQ(commrt_trace_read(events.data(), 64, &count), COMMRT_SUCCESS);
  events.resize(static_cast<size_t>(count));
  return events;
}

/// The event of `phase` among `events`, or null.
const commrt_trace_event *
findPhase(const std::vector<commrt_trace_event> &events, int32_t phase) {
  for (const commrt_trace_event &event : events)
    if (event.phase == phase)
      return &event;
  return nullptr;
}

// Device buffers staged through host memory whole are traced: their copies
// in end before the collective's messages begin, their copies out begin
// after the messages end. Host buffers and the staged ring's pieces (whose
// copies overlap the messages) have neither phase.
TEST_F(DeviceBuffersTest, StagedCopiesAreTraced) {
  constexpr int64_t count = 4099;
  DeviceBuffer buffer(COMMRT_F32, count);
  buffer.upload(contributions(COMMRT_F32, count, rank()));
  // AVG without a wire type is staged whole (commrt.h).
  std::vector<commrt_trace_event> staged = phasesOf([&] {
    ASSERT_EQ(commrt_allreduce(buffer.get(), count, COMMRT_F32, COMMRT_AVG),
              COMMRT_SUCCESS)
        << commrt_last_error();
  });
  const commrt_trace_event *in = findPhase(staged, COMMRT_PHASE_STAGE_IN);
  const commrt_trace_event *out = findPhase(staged, COMMRT_PHASE_STAGE_OUT);
  const commrt_trace_event *messages = findPhase(staged, COMMRT_PHASE_EXCHANGE);
  ASSERT_NE(in, nullptr);
  ASSERT_NE(out, nullptr);
  ASSERT_NE(messages, nullptr);
  EXPECT_LE(in->end_us, messages->begin_us);
  EXPECT_GE(out->begin_us, messages->end_us);
  EXPECT_LE(in->begin_us, in->end_us);
  EXPECT_EQ(in->elements, count);
  EXPECT_EQ(out->ranks, size());

  std::vector<float> host(count, 1.0f);
  std::vector<commrt_trace_event> unstaged = phasesOf([&] {
    ASSERT_EQ(commrt_allreduce(host.data(), count, COMMRT_F32, COMMRT_AVG),
              COMMRT_SUCCESS)
        << commrt_last_error();
  });
  EXPECT_NE(findPhase(unstaged, COMMRT_PHASE_EXCHANGE), nullptr);
  EXPECT_EQ(findPhase(unstaged, COMMRT_PHASE_STAGE_IN), nullptr);
  EXPECT_EQ(findPhase(unstaged, COMMRT_PHASE_STAGE_OUT), nullptr);

  // A sparse allreduce's grad and residual, before its selection and after
  // its scatter.
  DeviceBuffer grad(COMMRT_F32, count), residual(COMMRT_F32, count);
  grad.upload(contributions(COMMRT_F32, count, rank()));
  residual.upload(contributions(COMMRT_F32, count, 0));
  std::vector<commrt_trace_event> sparse = phasesOf([&] {
    ASSERT_EQ(commrt_sparse_allreduce(static_cast<float *>(grad.get()),
                                      static_cast<float *>(residual.get()),
                                      count, 0.05, COMMRT_SELECT_TOPK,
                                      COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
              COMMRT_SUCCESS)
        << commrt_last_error();
  });
  in = findPhase(sparse, COMMRT_PHASE_STAGE_IN);
  out = findPhase(sparse, COMMRT_PHASE_STAGE_OUT);
  const commrt_trace_event *select = findPhase(sparse, COMMRT_PHASE_SELECT);
  const commrt_trace_event *scatter = findPhase(sparse, COMMRT_PHASE_SCATTER);
  ASSERT_NE(in, nullptr);
  ASSERT_NE(out, nullptr);
  ASSERT_NE(select, nullptr);
  ASSERT_NE(scatter, nullptr);
  EXPECT_LE(in->end_us, select->begin_us);
  EXPECT_GE(out->begin_us, scatter->end_us);
}

INSTANTIATE_TEST_SUITE_P(EveryScheme, DeviceSparseTest,
                         ::testing::ValuesIn(validSparseSchemes()),
                         sparseSchemeName);

TEST_F(DeviceBuffersTest, BroadcastAndAllgather) {
  constexpr int64_t count = 513;
  DeviceBuffer buffer(COMMRT_BF16, count);
  buffer.upload(contributions(COMMRT_BF16, count, rank()));
  ASSERT_EQ(commrt_broadcast(buffer.get(), count, COMMRT_BF16, size() - 1),
            COMMRT_SUCCESS)
      << commrt_last_error();
  TypedBuffer broadcast = buffer.download();
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(broadcast.get(i), contribution(size() - 1, i)) << "index " << i;

  // Rank r sends r + 1 elements; the last rank's send is host memory.
  std::vector<int64_t> sent(size());
  int64_t total = 0;
  for (int r = 0; r < size(); ++r)
    total += sent[r] = r + 1;
  DeviceBuffer send(COMMRT_F32, sent[rank()]), recv(COMMRT_F32, total);
  TypedBuffer mine = contributions(COMMRT_F32, sent[rank()], rank());
  send.upload(mine);
  const void *from = rank() == size() - 1 ? mine.data() : send.get();
  ASSERT_EQ(commrt_allgather(from, recv.get(), sent.data(), COMMRT_F32),
            COMMRT_SUCCESS)
      << commrt_last_error();
  TypedBuffer gathered = recv.download();
  int64_t at = 0;
  for (int r = 0; r < size(); ++r)
    for (int64_t i = 0; i < sent[r]; ++i, ++at)
      ASSERT_EQ(gathered.get(at), contribution(r, i)) << "rank " << r;
}

TEST_F(DeviceBuffersTest, ReduceScatterAndAllGatherOfAGroup) {
  // Two groups of alternate ranks (one group where there is one rank).
  int32_t group = 0;
  ASSERT_EQ(commrt_group_split(/*id=*/7301, rank() % 2, rank(), &group),
            COMMRT_SUCCESS)
      << commrt_last_error();
  const int ranks = commrt_group_size(group);
  const int me = commrt_group_rank(group);
  const std::vector<int64_t> sizes = {1000, 333};
  const int64_t flat = sizes[0] + sizes[1];
  const int64_t shardCount = (flat + ranks - 1) / ranks;
  DeviceBuffer first(COMMRT_F32, sizes[0]), second(COMMRT_F32, sizes[1]);
  DeviceBuffer shard(COMMRT_F32, shardCount);
  TypedBuffer all = contributions(COMMRT_F32, flat, me);
  TypedBuffer firstValues(COMMRT_F32, sizes[0]),
      secondValues(COMMRT_F32, sizes[1]);
  for (int64_t i = 0; i < flat; ++i)
    (i < sizes[0] ? firstValues : secondValues)
        .set(i < sizes[0] ? i : i - sizes[0], all.get(i));
  first.upload(firstValues);
  second.upload(secondValues);
  void *buffers[] = {first.get(), second.get()};
  ASSERT_EQ(commrt_reduce_scatter(group, buffers, sizes.data(), 2, shard.get(),
                                  shardCount, COMMRT_F32, COMMRT_SUM,
                                  COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  TypedBuffer reduced = shard.download();
  for (int64_t i = 0; i < shardCount && me * shardCount + i < flat; ++i)
    ASSERT_EQ(reduced.get(i),
              expectedReduction(COMMRT_SUM, me * shardCount + i, ranks))
        << "shard index " << i;

  // Gathering the reduced shards gives every rank the reduced tensor.
  ASSERT_EQ(commrt_all_gather(group, shard.get(), shardCount, buffers,
                              sizes.data(), 2, COMMRT_F32, COMMRT_WIRE_NONE,
                              1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  TypedBuffer gotFirst = first.download(), gotSecond = second.download();
  for (int64_t i = 0; i < flat; ++i)
    ASSERT_EQ(i < sizes[0] ? gotFirst.get(i) : gotSecond.get(i - sizes[0]),
              expectedReduction(COMMRT_SUM, i, ranks))
        << "index " << i;
}

#if COMMRT_REAL_DEVICE
TEST_F(DeviceBuffersTest, OrderedAfterTheCallersDefaultStream) {
  for (int64_t count : {kSmallCount, kRingCount}) {
    DeviceBuffer buffer(COMMRT_F32, count);
    // Written on the legacy default stream just before the call, without a
    // synchronisation: the backend's copies must wait for it.
    ASSERT_EQ(cudaMemsetAsync(buffer.get(), 0xff, count * sizeof(float),
                              cudaStreamLegacy),
              cudaSuccess);
    TypedBuffer mine = contributions(COMMRT_F32, count, rank());
    ASSERT_EQ(cudaMemcpyAsync(buffer.get(), mine.data(), count * sizeof(float),
                              cudaMemcpyHostToDevice, cudaStreamLegacy),
              cudaSuccess);
    ASSERT_EQ(commrt_allreduce(buffer.get(), count, COMMRT_F32, COMMRT_SUM),
              COMMRT_SUCCESS)
        << commrt_last_error();
    expectReduced(buffer.download(), count, COMMRT_SUM, size());
  }
}
#else
TEST_F(DeviceBuffersTest, CudaAwareMpiTakesDevicePointersAsTheyAre) {
  // MPI reads the fake device memory itself: it stays accessible.
  mpiReadsDevice = true;
  FakeDeviceMemory::get().setGuarded(false);
  DeviceBuffer buffer(COMMRT_F32, kSmallCount);
  buffer.upload(contributions(COMMRT_F32, kSmallCount, rank()));
  ASSERT_EQ(commrt_allreduce(buffer.get(), kSmallCount, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectReduced(buffer.download(), kSmallCount, COMMRT_SUM, size());
  // MPI_Allreduce's, unless COMMRT_ALLREDUCE chose an algorithm whose
  // reductions run on the host, which is staged.
  const int staged = std::getenv("COMMRT_ALLREDUCE") == nullptr ? 0 : 1;
  EXPECT_COUNT_EQ(counts.copiesToHost, staged);
  EXPECT_COUNT_EQ(counts.copiesToDevice, staged);
  counts.reset();
  ASSERT_EQ(commrt_broadcast(buffer.get(), kSmallCount, COMMRT_F32, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_COUNT_EQ(counts.copiesToHost, 0);
  EXPECT_COUNT_EQ(counts.copiesToDevice, 0);
  EXPECT_COUNT_EQ(counts.lanesOrdered, 1);

  counts.reset();

  // What MPI cannot reduce itself (AVG divides on the host) is staged.
  ASSERT_EQ(commrt_allreduce(buffer.get(), kSmallCount, COMMRT_F32, COMMRT_AVG),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_COUNT_EQ(counts.copiesToHost, 1);
  EXPECT_COUNT_EQ(counts.copiesToDevice, 1);

  // A fused plan: packed on the device, and the wire buffer handed to MPI.
  counts.reset();
  DeviceBuffer other(COMMRT_F32, 37);
  other.upload(contributions(COMMRT_F32, 37, rank()));
  void *buffers[] = {buffer.get(), other.get()};
  const int64_t sizes[] = {kSmallCount, 37};
  ASSERT_EQ(commrt_fused_allreduce(buffers, sizes, 2, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectReduced(other.download(), 37, COMMRT_SUM, size());
  EXPECT_COUNT_EQ(counts.conversions, 2);
  EXPECT_COUNT_EQ(counts.copiesToHost, staged);
}
#endif

} // namespace
