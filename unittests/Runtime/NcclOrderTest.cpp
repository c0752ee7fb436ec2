//===- NcclOrderTest.cpp - NCCL work order: caller, channels, threads
//------===//
//
// One process, one rank, device buffers under the NCCL backend: a gradient
// that the caller's default stream is still writing when a call starts is
// read only once it is written. The default stream first sleeps in a host
// function, then copies v = 1 + 2^-20 over the stale 3.0 of the buffer; the
// call follows at once. A call that waits reduces v: over an f16 wire that
// comes back as 1.0, and a sparse allreduce of density 1 leaves v + residual.
// A call that does not wait reduces the stale 3.0 long before the copy, which
// then leaves v in the buffer. A started sparse allreduce runs on its
// channel's thread, behind the caller; dense and sparse starts on one channel
// give what the blocking calls give, bit for bit. Skips without a CUDA
// device.
//
//===----------------------------------------------------------------------===//

#include "GpuTestUtils.h"
#include "commrt/commrt.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

using commrt::testing::bitsOf;
using commrt::testing::DeviceArray;
using commrt::testing::gpuVisible;

namespace {

constexpr int64_t kCount = 1 << 20;
/// Not an f16 value: the wire rounds it to 1.0.
constexpr float kWritten = 1.0f + 0x1p-20f;
constexpr float kStale = 3.0f;

void CUDART_CB sleepOnStream(void *) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

class NcclOrderTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!gpuVisible())
      GTEST_SKIP() << "no CUDA device visible to run the NCCL backend";
    ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_NCCL), COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(cudaMalloc(&grad, kCount * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&written, kCount * sizeof(float)), cudaSuccess);
    fill(grad, kStale);
    for (int64_t i = 0; i < kCount; ++i)
      written[i] = kWritten;
  }
  void TearDown() override {
    cudaFree(grad);
    cudaFreeHost(written);
    if (gpuVisible())
      EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
  }

  /// Sets the `kCount` floats at `buffer` to `value`, synchronously.
  static void fill(float *buffer, float value) {
    std::vector<float> values(kCount, value);
    ASSERT_EQ(cudaMemcpy(buffer, values.data(), kCount * sizeof(float),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }

  /// Enqueues, on the legacy default stream, a sleep and then the copy of
  /// `written` into `grad`, and returns at once.
  void writeLate() {
    ASSERT_EQ(cudaLaunchHostFunc(cudaStreamLegacy, sleepOnStream, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(grad, written, kCount * sizeof(float),
                              cudaMemcpyHostToDevice, cudaStreamLegacy),
              cudaSuccess);
  }

  /// Waits for every stream, then expects all of `grad` to be `expected`.
  void expectGrad(float expected) {
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> values(kCount);
    ASSERT_EQ(cudaMemcpy(values.data(), grad, kCount * sizeof(float),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    int64_t wrong = 0;
    for (float value : values)
      wrong += value != expected;
    EXPECT_EQ(wrong, 0) << "elements other than " << expected << ", e.g. "
                        << values[0];
  }

  float *grad = nullptr;
  float *written = nullptr;
};

TEST_F(NcclOrderTest, BlockingWireAllreduceReadsTheWrittenGradient) {
  writeLate();
  ASSERT_EQ(commrt_allreduce_wire(grad, kCount, COMMRT_F16, COMMRT_SUM, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectGrad(1.0f);
}

TEST_F(NcclOrderTest, StartedFusedAllreduceReadsTheWrittenGradient) {
  writeLate();
  void *buffers[] = {grad, grad + kCount / 2};
  int64_t counts[] = {kCount / 2, kCount - kCount / 2};
  int64_t handle = 0;
  ASSERT_EQ(commrt_fused_allreduce_start(buffers, counts, 2, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_F16, 1.0f,
                                         /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  expectGrad(1.0f);
}

TEST_F(NcclOrderTest, SparseAllreduceReadsTheWrittenGradient) {
  DeviceArray<float> residual(std::vector<float>(kCount, 0.5f));
  writeLate();
  // Density 1: every entry of grad + residual is sent, none is kept.
  EXPECT_EQ(commrt_sparse_allreduce(grad, residual.get(), kCount, 1.0,
                                    COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectGrad(kWritten + 0.5f);
}

TEST_F(NcclOrderTest, StartedSparseAllreduceRunsBehindTheCaller) {
  DeviceArray<float> residual(std::vector<float>(kCount, 0.5f));
  writeLate();
  int64_t handle = 0;
  ASSERT_EQ(commrt_sparse_allreduce_start(grad, residual.get(), kCount, 1.0,
                                          COMMRT_SELECT_TOPK,
                                          COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM,
                                          0, /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // The caller's copy is still behind its sleep, so the allreduce, which
  // waits for it, cannot have finished: the start returned without running
  // it to the end.
  int32_t done = 1;
  ASSERT_EQ(commrt_test(handle, &done), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(done, 0);
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  expectGrad(kWritten + 0.5f);
}

/// The buffers of one round of the channel test: a dense f32 buffer, a
/// sparse gradient with its residual, and a buffer reduced over f16.
struct Round {
  explicit Round(const std::vector<float> (&values)[4])
      : dense(values[0]), grad(values[1]), residual(values[2]),
        wire(values[3]) {}
  DeviceArray<float> dense, grad, residual, wire;
};

TEST(NcclChannelThread, StartsOnOneChannelMatchTheBlockingCalls) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the NCCL backend";
  ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_NCCL), COMMRT_SUCCESS)
      << commrt_last_error();
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t count = 300007;
  std::vector<float> values[4];
  for (auto &buffer : values) {
    buffer.resize(count);
    for (float &value : buffer)
      value = normal(random);
  }
  Round blocking(values), started(values);

  // Each call blocking, one after the other.
  ASSERT_EQ(
      commrt_allreduce(blocking.dense.get(), count, COMMRT_F32, COMMRT_AVG),
      COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce(blocking.grad.get(),
                                    blocking.residual.get(), count, 0.01,
                                    COMMRT_SELECT_THRESHOLD,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_AVG, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_allreduce_wire(blocking.wire.get(), count, COMMRT_F16,
                                  COMMRT_SUM, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();

  // The same, started on one channel: dense, sparse (which gives the
  // channel its thread), then dense again through the thread; waited for in
  // reverse order.
  int64_t handles[3] = {};
  ASSERT_EQ(commrt_allreduce_start(started.dense.get(), count, COMMRT_F32,
                                   COMMRT_AVG, /*channel=*/0, &handles[0]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce_start(
                started.grad.get(), started.residual.get(), count, 0.01,
                COMMRT_SELECT_THRESHOLD, COMMRT_EXCHANGE_ALLGATHER, COMMRT_AVG,
                0, /*channel=*/0, &handles[1]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  void *wireBuffers[] = {started.wire.get()};
  int64_t wireCounts[] = {count};
  ASSERT_EQ(commrt_fused_allreduce_start(wireBuffers, wireCounts, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_F16, 0.5f,
                                         /*channel=*/0, &handles[2]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int i = 2; i >= 0; --i)
    ASSERT_EQ(commrt_wait(handles[i]), COMMRT_SUCCESS) << commrt_last_error();

  EXPECT_EQ(bitsOf(started.dense.download()),
            bitsOf(blocking.dense.download()));
  EXPECT_EQ(bitsOf(started.grad.download()), bitsOf(blocking.grad.download()));
  EXPECT_EQ(bitsOf(started.residual.download()),
            bitsOf(blocking.residual.download()));
  EXPECT_EQ(bitsOf(started.wire.download()), bitsOf(blocking.wire.download()));
  // The sparse allreduce sent about 1% of the entries and kept the rest.
  std::vector<uint32_t> residual = bitsOf(started.residual.download());
  int64_t kept = std::count_if(residual.begin(), residual.end(),
                               [](uint32_t bits) { return bits != 0; });
  EXPECT_GT(kept, count * 98 / 100);
  EXPECT_LT(kept, count);
  EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
}

} // namespace
