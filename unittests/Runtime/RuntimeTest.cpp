//===- RuntimeTest.cpp - Single-process tests of the commrt C ABI ---------===//

#include "RuntimeTestUtils.h"

#include <cmath>
#include <limits>
#include <thread>

#if COMMRT_HAVE_NCCL
#include <cuda_runtime.h>
#endif

using commrt::testing::checksName;
using commrt::testing::ChecksTest;
using commrt::testing::expectOneRankKeepsTheValues;
using commrt::testing::failedWith;
using commrt::testing::TypedBuffer;

namespace {

TEST(StatusString, NamesEveryStatus) {
  EXPECT_STREQ(commrt_status_string(COMMRT_SUCCESS), "COMMRT_SUCCESS");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_INVALID_ARGUMENT),
               "COMMRT_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_MISMATCH),
               "COMMRT_ERROR_MISMATCH");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_BACKEND),
               "COMMRT_ERROR_BACKEND");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_NOT_INITIALIZED),
               "COMMRT_ERROR_NOT_INITIALIZED");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_UNAVAILABLE),
               "COMMRT_ERROR_UNAVAILABLE");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_PEER_ENDED),
               "COMMRT_ERROR_PEER_ENDED");
  EXPECT_STREQ(commrt_status_string(COMMRT_ERROR_TIMED_OUT),
               "COMMRT_ERROR_TIMED_OUT");
  EXPECT_STREQ(commrt_status_string(8), "COMMRT_UNKNOWN_STATUS");
  EXPECT_STREQ(commrt_status_string(-1), "COMMRT_UNKNOWN_STATUS");
}

TEST(Runtime, InitialisesLazilyAsOneRank) {
  EXPECT_EQ(commrt_rank(), 0);
  EXPECT_EQ(commrt_size(), 1);
  EXPECT_EQ(commrt_init(), COMMRT_SUCCESS);
  EXPECT_EQ(commrt_init(), COMMRT_SUCCESS) << "commrt_init is idempotent";
}

TEST(Runtime, TimeIsMonotonic) {
  double previous = commrt_time_us();
  for (int i = 0; i < 1000; ++i) {
    double now = commrt_time_us();
    EXPECT_GE(now, previous);
    previous = now;
  }
  double before = commrt_time_us();
  commrt_sleep_us(2000.0);
  EXPECT_GE(commrt_time_us() - before, 2000.0);
}

TEST(Runtime, BarrierAndReportAsOneRank) {
  EXPECT_EQ(commrt_barrier(), COMMRT_SUCCESS);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(commrt_report_step_us(3, 1234.5), COMMRT_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "commrt: step 3: 1234.5 us\n");
}

/// Invalid arguments, with consistency checks off (false) and on (true): on
/// one rank both must give the same error.
class InvalidArgumentTest : public ChecksTest {};

TEST_P(InvalidArgumentTest, Allreduce) {
  float data[4] = {};
  EXPECT_TRUE(failedWith(commrt_allreduce(nullptr, 5, COMMRT_F32, COMMRT_SUM),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce: buffer is null but count is 5"));
  EXPECT_TRUE(failedWith(commrt_allreduce(data, -1, COMMRT_F32, COMMRT_SUM),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce: count -1 is negative"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce(data, 4, 7, COMMRT_SUM), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce: dtype 7 is not a commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce(data, 4, -1, COMMRT_SUM), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce: dtype -1 is not a commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce(data, 4, COMMRT_F32, 4), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce: reduce 4 is not a commrt_reduce (expected 0..3)"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce(nullptr, 0, COMMRT_F16, 9),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce: reduce 9 is not a commrt_reduce (expected 0..3)"))
      << "enums are checked even when count is 0";
}

TEST_P(InvalidArgumentTest, AllreduceWire) {
  float data[3] = {};
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(nullptr, 3, COMMRT_F16, COMMRT_SUM, 1.0f),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_wire: buffer is null but count is 3"));
  EXPECT_TRUE(
      failedWith(commrt_allreduce_wire(data, -2, COMMRT_F16, COMMRT_SUM, 1.0f),
                 COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_allreduce_wire: count -2 is negative"));
  EXPECT_TRUE(
      failedWith(commrt_allreduce_wire(data, 3, COMMRT_F32, COMMRT_SUM, 1.0f),
                 COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_allreduce_wire: wire 0 is not a 16-bit "
                 "commrt_dtype (expected 2..3)"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(data, 3, COMMRT_BF16, -1, 1.0f),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_wire: reduce -1 is not a commrt_reduce (expected "
      "0..3)"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(data, 3, COMMRT_F16, COMMRT_AVG, 0.0f),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_wire: prescale 0 is not a finite nonzero number"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(data, 3, COMMRT_F16, COMMRT_AVG,
                            std::numeric_limits<float>::infinity()),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_wire: prescale inf is not a finite nonzero number"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(data, 3, COMMRT_F16, COMMRT_AVG, std::nanf("")),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_wire: prescale nan is not a finite nonzero number"));
}

TEST_P(InvalidArgumentTest, Broadcast) {
  float data[4] = {};
  EXPECT_TRUE(failedWith(commrt_broadcast(nullptr, 5, COMMRT_F32, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: buffer is null but count is 5"));
  EXPECT_TRUE(failedWith(commrt_broadcast(data, -1, COMMRT_F32, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_broadcast: count -1 is negative"));
  EXPECT_TRUE(failedWith(
      commrt_broadcast(data, 4, 7, 0), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_broadcast: dtype 7 is not a commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(failedWith(
      commrt_broadcast(data, 4, COMMRT_F32, -1), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_broadcast: root -1 is out of range (expected 0..0)"));
  EXPECT_TRUE(failedWith(
      commrt_broadcast(data, 4, COMMRT_BF16, 1), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_broadcast: root 1 is out of range (expected 0..0)"));
  EXPECT_TRUE(
      failedWith(commrt_broadcast(nullptr, 0, COMMRT_F64, 1),
                 COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_broadcast: root 1 is out of range (expected 0..0)"))
      << "the root is checked even when count is 0";
}

TEST_P(InvalidArgumentTest, InitAndSettings) {
  EXPECT_TRUE(failedWith(
      commrt_init_backend(3), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_init_backend: backend 3 is not a commrt_backend (expected "
      "0..2)"));
  EXPECT_TRUE(failedWith(
      commrt_set_consistency_checks(3), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_set_consistency_checks: checks 3 is not a commrt_checks "
      "(expected 0..2)"));
}

INSTANTIATE_TEST_SUITE_P(Checks, InvalidArgumentTest, ::testing::Bool(),
                         checksName);

TEST(Allreduce, CountZeroIsANoOp) {
  EXPECT_EQ(commrt_allreduce(nullptr, 0, COMMRT_F64, COMMRT_MAX),
            COMMRT_SUCCESS);
  EXPECT_EQ(commrt_allreduce_wire(nullptr, 0, COMMRT_BF16, COMMRT_SUM, 1.0f),
            COMMRT_SUCCESS);
}

TEST(Allreduce, OneRankKeepsTheValues) {
  expectOneRankKeepsTheValues([](void *data, int dtype, int reduce) {
    ASSERT_EQ(commrt_allreduce(data, 4, dtype, reduce), COMMRT_SUCCESS)
        << commrt_last_error();
  });
}

TEST(Broadcast, OneRankKeepsTheValues) {
  const double values[] = {1.5, -2.0, 3.0, 0.25};
  EXPECT_EQ(commrt_broadcast(nullptr, 0, COMMRT_F32, 0), COMMRT_SUCCESS)
      << "count 0 is a no-op";
  for (int dtype = COMMRT_F32; dtype <= COMMRT_BF16; ++dtype) {
    TypedBuffer buffer(static_cast<commrt_dtype>(dtype), 4);
    for (int i = 0; i < 4; ++i)
      buffer.set(i, values[i]);
    ASSERT_EQ(commrt_broadcast(buffer.data(), 4, dtype, 0), COMMRT_SUCCESS)
        << commrt_last_error();
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(buffer.get(i), values[i]) << "dtype " << dtype;
  }
}

TEST(AllreduceWire, OneRankRoundsThroughTheWireType) {
  // 1 + 2^-12 is 1 in f16 and bf16; 3 survives both; prescale 0.5 and its
  // inverse are exact.
  float data[] = {1.0f + 0x1p-12f, 3.0f};
  ASSERT_EQ(commrt_allreduce_wire(data, 2, COMMRT_F16, COMMRT_AVG, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(data[0], 1.0f);
  EXPECT_EQ(data[1], 3.0f);
}

TEST(LastError, IsKeptUntilTheNextFailureAndPerThread) {
  commrt_allreduce(nullptr, 1, COMMRT_F32, COMMRT_SUM);
  float value = 1.0f;
  ASSERT_EQ(commrt_allreduce(&value, 1, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS);
  EXPECT_STREQ(commrt_last_error(),
               "commrt_allreduce: buffer is null but count is 1");
  std::string otherThread = "unset";
  std::thread([&] { otherThread = commrt_last_error(); }).join();
  EXPECT_EQ(otherThread, "");
}

/// Whether a CUDA device is visible to this process.
bool gpuVisible() {
#if COMMRT_HAVE_NCCL
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
#else
  return false;
#endif
}

TEST(Backend, NcclIsUnavailableWithoutAGpu) {
  if (gpuVisible())
    GTEST_SKIP() << "a GPU is visible; see NcclReducesOnOneRank";
  int32_t status = commrt_init_backend(COMMRT_BACKEND_NCCL);
  EXPECT_EQ(status, COMMRT_ERROR_UNAVAILABLE);
#if COMMRT_HAVE_NCCL
  EXPECT_EQ(std::string(commrt_last_error())
                .rfind("commrt_init_backend: no CUDA device visible: "
                       "cudaGetDeviceCount returned ",
                       0),
            0u)
      << commrt_last_error();
#else
  EXPECT_STREQ(commrt_last_error(),
               "commrt_init_backend: the NCCL backend was not built (no CUDA "
               "compiler or NCCL was found when commrt was configured)");
#endif
  EXPECT_EQ(commrt_backend_in_use(), COMMRT_BACKEND_MPI)
      << "a failed switch keeps the backend in use";
  EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_AUTO), COMMRT_SUCCESS);
  EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
  EXPECT_EQ(commrt_backend_in_use(), COMMRT_BACKEND_MPI);
}

#if COMMRT_HAVE_NCCL
TEST(Backend, NcclReducesOnOneRank) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible";
  ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_NCCL), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(commrt_backend_in_use(), COMMRT_BACKEND_NCCL);
  float host[] = {1.0f, -2.5f, 3.0f};
  EXPECT_EQ(commrt_allreduce(host, 3, COMMRT_F32, COMMRT_AVG), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(host[1], -2.5f);
  float *device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, sizeof host), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(commrt_allreduce_wire(device, 3, COMMRT_BF16, COMMRT_SUM, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  float result[3];
  ASSERT_EQ(cudaMemcpy(result, device, sizeof result, cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(device);
  EXPECT_EQ(result[0], 1.0f);
  EXPECT_EQ(result[1], -2.5f);
  EXPECT_EQ(result[2], 3.0f);
  EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
}
#endif

} // namespace
