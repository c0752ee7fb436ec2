//===- ThreadLevelTest.cpp - Async collectives without MPI threads --------===//
//
// A program that initialises MPI itself with less than MPI_THREAD_MULTIPLE:
// the blocking collectives work, the asynchronous ones fail with
// COMMRT_ERROR_UNAVAILABLE.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cstdio>

using commrt::testing::failedWith;

namespace {

TEST(ThreadLevel, AsynchronousCollectivesNeedThreadMultiple) {
  int provided;
  MPI_Query_thread(&provided);
  ASSERT_EQ(provided, MPI_THREAD_SERIALIZED);
  const std::string unavailable =
      ": asynchronous collectives over MPI need MPI_THREAD_MULTIPLE, but MPI "
      "was initialised with MPI_THREAD_SERIALIZED (a program that initialises "
      "MPI itself must ask for MPI_THREAD_MULTIPLE with MPI_Init_thread)";
  float value = 1.0f;
  int64_t handle = 42;
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(&value, 1, COMMRT_F32, COMMRT_SUM, 0, &handle),
      COMMRT_ERROR_UNAVAILABLE, "commrt_allreduce_start" + unavailable));
  EXPECT_EQ(handle, 0);
  void *buffers[] = {&value};
  const int64_t counts[] = {1};
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_BF16, 1.0f, 0, &handle),
      COMMRT_ERROR_UNAVAILABLE, "commrt_fused_allreduce_start" + unavailable));

  ASSERT_EQ(commrt_allreduce(&value, 1, COMMRT_F32, COMMRT_SUM), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, commrt_size());
  ASSERT_EQ(commrt_fused_allreduce(buffers, counts, 1, COMMRT_F32, COMMRT_AVG,
                                   COMMRT_BF16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(value, commrt_size());
}

} // namespace

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  if (commrt_finalize() != COMMRT_SUCCESS) {
    std::fprintf(stderr, "%s\n", commrt_last_error());
    failed = 1;
  }
  MPI_Finalize();
  return failed;
}
