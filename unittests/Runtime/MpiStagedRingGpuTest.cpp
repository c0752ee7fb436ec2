//===- MpiStagedRingGpuTest.cpp - The staged ring on a GPU, several ranks -===//
//
// The staged ring (StagedRing.h) over device memory with its CUDA queue
// (CudaStagingQueue.h): every rank's contributions in device memory, moved
// through pinned host memory over MPI and reduced by the device kernel, on
// any number of ranks that may share one GPU (mpirun -np 4 on a machine
// with one). The results must be exact in every type and reduction and
// identical on every rank. Skips without a CUDA device.
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

} // namespace
