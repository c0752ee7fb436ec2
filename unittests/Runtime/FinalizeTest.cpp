//===- FinalizeTest.cpp - commrt calls after commrt_finalize --------------===//
//
// A binary of its own: MPI cannot be initialised again once finalised. Runs
// on one rank and under mpirun.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

using commrt::testing::failedWith;

namespace {

TEST(Finalize, CompletesCollectivesInFlightThenEveryLaterCallFails) {
  ASSERT_EQ(commrt_init(), COMMRT_SUCCESS) << commrt_last_error();
  const int32_t size = commrt_size();
  std::vector<float> values(100000, 1.0f);
  float fused[] = {2.0f, 3.0f};
  void *buffers[] = {fused};
  const int64_t counts[] = {2};
  int64_t handles[2];
  ASSERT_EQ(commrt_allreduce_start(values.data(), values.size(), COMMRT_F32,
                                   COMMRT_SUM, 0, &handles[0]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32,
                                         COMMRT_MAX, COMMRT_F16, 1.0f,
                                         commrt_channels() - 1, &handles[1]),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_finalize(), COMMRT_SUCCESS) << commrt_last_error();
  for (float value : values)
    ASSERT_EQ(value, size) << "the finalisation completed the collective";
  EXPECT_EQ(fused[0], 2.0f);
  EXPECT_EQ(fused[1], 3.0f);

  const std::string finalized = ": the runtime was finalised (commrt_finalize) "
                                "and MPI cannot be re-initialised";
  float value = 1.0f;
  int64_t handle;
  int32_t done;
  EXPECT_TRUE(failedWith(commrt_allreduce(&value, 1, COMMRT_F32, COMMRT_SUM),
                         COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_allreduce" + finalized));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(&value, 1, COMMRT_F16, COMMRT_SUM, 1.0f),
      COMMRT_ERROR_NOT_INITIALIZED, "commrt_allreduce_wire" + finalized));
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                             COMMRT_WIRE_NONE, 1.0f),
      COMMRT_ERROR_NOT_INITIALIZED, "commrt_fused_allreduce" + finalized));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(&value, 1, COMMRT_F32, COMMRT_SUM, 0, &handle),
      COMMRT_ERROR_NOT_INITIALIZED, "commrt_allreduce_start" + finalized));
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f, 0, &handle),
      COMMRT_ERROR_NOT_INITIALIZED,
      "commrt_fused_allreduce_start" + finalized));
  EXPECT_TRUE(failedWith(commrt_test(handles[0], &done),
                         COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_test" + finalized));
  EXPECT_TRUE(failedWith(commrt_wait(handles[1]), COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_wait" + finalized));
  EXPECT_TRUE(failedWith(commrt_init(), COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_init" + finalized));
  EXPECT_TRUE(failedWith(commrt_init_backend(COMMRT_BACKEND_MPI),
                         COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_init_backend" + finalized));
  EXPECT_TRUE(failedWith(commrt_set_consistency_checks(1),
                         COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_set_consistency_checks" + finalized));
  EXPECT_TRUE(failedWith(commrt_finalize(), COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_finalize" + finalized));
  EXPECT_EQ(commrt_rank(), -1);
  EXPECT_EQ(commrt_last_error(), "commrt_rank" + finalized);
  EXPECT_EQ(commrt_size(), -1);
  EXPECT_EQ(commrt_backend_in_use(), -1);
  EXPECT_EQ(commrt_last_error(), "commrt_backend_in_use" + finalized);
  EXPECT_EQ(commrt_channels(), -1);
  EXPECT_EQ(commrt_last_error(), "commrt_channels" + finalized);
}

} // namespace
