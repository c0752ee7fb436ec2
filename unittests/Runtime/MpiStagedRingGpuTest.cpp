//===- MpiStagedRingGpuTest.cpp - The staged ring on a GPU, several ranks -===//
//
// The staged ring (StagedRing.h) over device memory with its CUDA queue
// (CudaStagingQueue.h): every rank's contributions in device memory, moved
// through pinned host memory over MPI and reduced by the device kernel, on
// any number of ranks that may share one GPU (mpirun -np 4 on a machine
// with one). The results must be exact in every type and reduction and
// identical on every rank. Then the MPI backend itself given device
// buffers (DeviceStaging.h, CudaDeviceAccess.cpp) through commrt's C API:
// in-place allreduces by MPI_Allreduce and by the staged ring, a fused plan
// of device and host buffers, a started one, and a sparse allreduce whose
// results must be the host path's bit for bit. Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "CudaStagingQueue.h"
#include "GpuTestUtils.h"
#include "MpiTestUtils.h"
#include "RingAllreduce.h"
#include "RuntimeTestUtils.h"
#include "StagedRing.h"
#include "WireFormat.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

using GpuStagedCase = std::tuple<commrt_dtype, commrt_reduce, int64_t>;

class GpuStagedRingTest : public ::testing::TestWithParam<GpuStagedCase> {};

TEST_P(GpuStagedRingTest, MatchesTheExactReduction) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the staged ring";
  auto [dtype, reduce, count] = GetParam();
  const size_t width = commrt::elementSize(dtype);
  TypedBuffer host(dtype, count);
  for (int64_t i = 0; i < count; ++i)
    host.set(i, contribution(rank(), i));
  std::vector<unsigned char> bytes(
      static_cast<const unsigned char *>(host.data()),
      static_cast<const unsigned char *>(host.data()) + count * width);
  DeviceArray<unsigned char> data(bytes);
  DeviceArray<unsigned char> scratch(commrt::shardElements(count, size()) *
                                     width);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  std::unique_ptr<commrt::StagingBuffers> staging = commrt::makePinnedStaging();
  {
    commrt::CudaStagingQueue queue(stream, dtype, reduce);
    ASSERT_EQ(commrt::stagedRingAllreduce(
                  data.get(), count, commrt::mpiTypeOf(dtype, MPI_UINT16_T),
                  width, queue, scratch.get(), *staging, MPI_COMM_WORLD,
                  commrt::kRingPieceBytes),
              COMMRT_SUCCESS)
        << commrt_last_error();
  }
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  std::vector<unsigned char> result = data.download();
  std::memcpy(host.data(), result.data(), result.size());
  TypedBuffer rounded(dtype, 1);
  for (int64_t i = 0; i < count; ++i) {
    rounded.set(0, expectedReduction(reduce == COMMRT_AVG ? COMMRT_SUM : reduce,
                                     i, size()));
    ASSERT_EQ(host.get(i), rounded.get(0)) << "index " << i;
  }
  EXPECT_TRUE(sameOnAllRanks(result.data(), result.size()));
}

INSTANTIATE_TEST_SUITE_P(
    TypesReductionsAndSizes, GpuStagedRingTest,
    ::testing::Combine(::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16,
                                         COMMRT_BF16),
                       ::testing::Values(COMMRT_SUM, COMMRT_MAX, COMMRT_MIN),
                       // Fewer elements than ranks, an odd count, and
                       // several 1 MiB pieces per segment.
                       ::testing::Values(3, 1001, (int64_t(3) << 20) + 5)),
    [](const ::testing::TestParamInfo<GpuStagedCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param)) + "_" +
             std::to_string(std::get<2>(info.param));
    });

/// Above COMMRT_RING_MIN_BYTES in f32: the staged ring's with more than two
/// ranks; and below it.
constexpr int64_t kRingCount = (int64_t(1) << 20) + 3, kSmallCount = 1001;

std::vector<float> contributionsOf(int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(contribution(rank(), i));
  return values;
}

void expectSummed(const std::vector<float> &values) {
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(values[i], expectedReduction(COMMRT_SUM, i, size()))
        << "index " << i;
}

TEST(GpuMpiBackendTest, AllreducesDeviceBuffers) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible";
  for (int64_t count : {kSmallCount, kRingCount}) {
    DeviceArray<float> buffer(count);
    // Written on the default stream just before the call: the backend must
    // order its copies after it.
    ASSERT_EQ(cudaMemsetAsync(buffer.get(), 0xff, count * sizeof(float),
                              cudaStreamLegacy),
              cudaSuccess);
    std::vector<float> mine = contributionsOf(count);
    ASSERT_EQ(cudaMemcpyAsync(buffer.get(), mine.data(), count * sizeof(float),
                              cudaMemcpyHostToDevice, cudaStreamLegacy),
              cudaSuccess);
    ASSERT_EQ(commrt_allreduce(buffer.get(), count, COMMRT_F32, COMMRT_SUM),
              COMMRT_SUCCESS)
        << commrt_last_error();
    expectSummed(buffer.download());
  }
}

TEST(GpuMpiBackendTest, FusedAndStartedPlansOfDeviceAndHostBuffers) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible";
  const std::vector<int64_t> sizes = {kSmallCount, 37, kRingCount};
  DeviceArray<float> first(contributionsOf(sizes[0]));
  std::vector<float> middle = contributionsOf(sizes[1]);
  DeviceArray<float> last(contributionsOf(sizes[2]));
  void *buffers[] = {first.get(), middle.data(), last.get()};
  ASSERT_EQ(commrt_fused_allreduce(buffers, sizes.data(), 3, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_F16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  expectSummed(first.download());
  expectSummed(middle);
  expectSummed(last.download());

  DeviceArray<float> started(contributionsOf(kRingCount));
  void *one[] = {started.get()};
  int64_t handle = 0;
  ASSERT_EQ(commrt_fused_allreduce_start(one, &kRingCount, 1, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         /*channel=*/0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  expectSummed(started.download());
}

TEST(GpuMpiBackendTest, SparseAllreduceOfDeviceBuffersIsTheHostPaths) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible";
  constexpr int64_t count = 4099;
  std::vector<float> grad(count), residual(count, 0.25f);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = static_cast<float>(contribution(rank(), i * 7 + 3)) * 0.37f;
  DeviceArray<float> deviceGrad(grad), deviceResidual(residual);
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count, 0.05,
                                    COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_HASH,
                                    COMMRT_SUM, 64),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce(deviceGrad.get(), deviceResidual.get(),
                                    count, 0.05, COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_HASH, COMMRT_SUM, 64),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(deviceGrad.download(), grad);
  EXPECT_EQ(deviceResidual.download(), residual);
}

} // namespace
