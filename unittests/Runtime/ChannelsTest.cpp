//===- ChannelsTest.cpp - The number of channels from COMMRT_CHANNELS -----===//
//
// A binary of its own, run by CTest with several environments: on one rank
// and under mpirun, with ranks that agree or not. COMMRT_TEST_EXPECTED tells
// what to expect: a number of channels, or the status and message with which
// initialisation fails ("COMMRT_ERROR_...: commrt_init: ..."); unset, the
// default number of channels.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include <cstdlib>

using commrt::testing::failedWith;

namespace {

TEST(Channels, ComeFromTheEnvironment) {
  const char *expected = std::getenv("COMMRT_TEST_EXPECTED");
  std::string expectation =
      expected ? expected : std::to_string(COMMRT_DEFAULT_CHANNELS);
  if (expectation.rfind("COMMRT_", 0) == 0) {
    int32_t status = commrt_init();
    EXPECT_EQ(std::string(commrt_status_string(status)) + ": " +
                  commrt_last_error(),
              expectation);
    EXPECT_EQ(commrt_channels(), -1);
    return;
  }
  const int channels = std::stoi(expectation);
  ASSERT_EQ(commrt_channels(), channels) << commrt_last_error();
  float value = 1.0f;
  int64_t handle;
  ASSERT_EQ(commrt_allreduce_start(&value, 1, COMMRT_F32, COMMRT_SUM,
                                   channels - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(value, commrt_size());
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(&value, 1, COMMRT_F32, COMMRT_SUM, channels,
                             &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_allreduce_start: channel " + std::to_string(channels) +
          " is out of range (expected 0.." + std::to_string(channels - 1) +
          "; COMMRT_CHANNELS sets the number of channels)"));
}

} // namespace
