//===- MpiWaitTest.cpp - How long a wait for known bytes first sleeps -----===//
//
// expectedFirstSleepUs: a wait for a ring's piece sleeps three quarters of
// the time such pieces took recently, and not at all without a history or
// where that time is no longer than a sleep between tests. (The waits
// themselves run under mpirun in commrt-mpi-sleep-np4, every message of
// the ring waited for with its bytes.)
//
//===----------------------------------------------------------------------===//

#include "MpiWait.h"

#include <gtest/gtest.h>

using commrt::expectedFirstSleepUs;

namespace {

TEST(MpiWait, FirstSleepIsThreeQuartersOfTheExpectedTime) {
  // 1 MiB at 1 Gbit/s: 0.008 us a byte, 8388.608 us expected.
  EXPECT_DOUBLE_EQ(expectedFirstSleepUs(1 << 20, 0.008, 500), 0.75 * 8388.608);
  EXPECT_DOUBLE_EQ(expectedFirstSleepUs(1000, 2.0, 500), 1500);
}

TEST(MpiWait, NoFirstSleepWithoutHistory) {
  EXPECT_EQ(expectedFirstSleepUs(1 << 20, 0, 500), 0);
}

TEST(MpiWait, NoFirstSleepForWaitsAsShortAsASleep) {
  // 500 us expected: the sleeps between tests cover it.
  EXPECT_EQ(expectedFirstSleepUs(1000, 0.5, 500), 0);
  EXPECT_EQ(expectedFirstSleepUs(100, 0.008, 500), 0);
  EXPECT_GT(expectedFirstSleepUs(1000, 0.501, 500), 0);
}

} // namespace
