//===- FinalizeTest.cpp - commrt calls after commrt_finalize --------------===//
//
// A binary of its own: MPI cannot be initialised again once finalised.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

using commrt::testing::failedWith;

namespace {

TEST(Finalize, EveryLaterCallFailsWithNotInitialized) {
  ASSERT_EQ(commrt_init(), COMMRT_SUCCESS) << commrt_last_error();
  ASSERT_EQ(commrt_finalize(), COMMRT_SUCCESS) << commrt_last_error();

  const std::string finalized = ": the runtime was finalised (commrt_finalize) "
                                "and MPI cannot be re-initialised";
  float value = 1.0f;
  EXPECT_TRUE(failedWith(commrt_allreduce(&value, 1, COMMRT_F32, COMMRT_SUM),
                         COMMRT_ERROR_NOT_INITIALIZED,
                         "commrt_allreduce" + finalized));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_wire(&value, 1, COMMRT_F16, COMMRT_SUM, 1.0f),
      COMMRT_ERROR_NOT_INITIALIZED, "commrt_allreduce_wire" + finalized));
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
}

} // namespace
