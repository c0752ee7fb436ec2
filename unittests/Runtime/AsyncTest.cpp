//===- AsyncTest.cpp - Single-process tests of async and fused collectives ===//

#include "RuntimeTestUtils.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

using commrt::testing::checksName;
using commrt::testing::ChecksTest;
using commrt::testing::expectOneRankKeepsTheValues;
using commrt::testing::failedWith;

namespace {

/// Invalid arguments, with consistency checks off (false) and on (true): on
/// one rank both must give the same error.
class AsyncInvalidArgumentTest : public ChecksTest {
protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ChecksTest::SetUp());
    channels = commrt_channels();
    ASSERT_GT(channels, 0) << commrt_last_error();
  }

  int32_t channels = 0;
};

TEST_P(AsyncInvalidArgumentTest, AllreduceStart) {
  float data[4] = {};
  int64_t handle = 42;
  auto start = [&](void *buffer, int64_t count, int32_t dtype, int32_t reduce,
                   int32_t channel) {
    handle = 42;
    return commrt_allreduce_start(buffer, count, dtype, reduce, channel,
                                  &handle);
  };
  EXPECT_TRUE(
      failedWith(start(nullptr, 4, COMMRT_F32, COMMRT_SUM, 0),
                 COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_allreduce_start: buffer is null but count is 4"));
  EXPECT_EQ(handle, 0) << "a failed start stores handle 0";
  EXPECT_TRUE(failedWith(start(data, -3, COMMRT_F32, COMMRT_SUM, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce_start: count -3 is negative"));
  EXPECT_TRUE(failedWith(start(data, 4, 4, COMMRT_SUM, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce_start: dtype 4 is not a "
                         "commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(failedWith(start(data, 4, COMMRT_F64, -1, 0),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce_start: reduce -1 is not a "
                         "commrt_reduce (expected 0..3)"));
  std::string range = "is out of range (expected 0.." +
                      std::to_string(channels - 1) +
                      "; COMMRT_CHANNELS sets the number of channels)";
  EXPECT_TRUE(failedWith(start(data, 4, COMMRT_F32, COMMRT_SUM, -1),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce_start: channel -1 " + range));
  EXPECT_TRUE(failedWith(start(data, 4, COMMRT_F32, COMMRT_SUM, channels),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_allreduce_start: channel " +
                             std::to_string(channels) + " " + range));
  EXPECT_EQ(handle, 0);
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(data, 4, COMMRT_F32, COMMRT_SUM, 0, nullptr),
      COMMRT_ERROR_INVALID_ARGUMENT, "commrt_allreduce_start: handle is null"));
  EXPECT_TRUE(failedWith(
      commrt_allreduce_start(nullptr, 0, COMMRT_F32, COMMRT_SUM, 0, nullptr),
      COMMRT_ERROR_INVALID_ARGUMENT, "commrt_allreduce_start: handle is null"))
      << "even when there is nothing to reduce";
}

TEST_P(AsyncInvalidArgumentTest, FusedAllreduce) {
  float a[3] = {}, b[2] = {};
  void *buffers[] = {a, b};
  const int64_t counts[] = {3, 2};
  auto fused = [&](void *const *buffers, const int64_t *counts,
                   int32_t nbuffers, int32_t dtype, int32_t reduce,
                   int32_t wire, float prescale) {
    return commrt_fused_allreduce(buffers, counts, nbuffers, dtype, reduce,
                                  wire, prescale);
  };
  const std::string prefix = "commrt_fused_allreduce: ";
  auto invalid = [&](int32_t status, const std::string &message) {
    return failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT, prefix + message);
  };
  EXPECT_TRUE(invalid(
      fused(buffers, counts, 0, COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
      "nbuffers 0 is less than 1"));
  EXPECT_TRUE(invalid(fused(buffers, counts, -2, COMMRT_F32, COMMRT_SUM,
                            COMMRT_WIRE_NONE, 1.0f),
                      "nbuffers -2 is less than 1"));
  EXPECT_TRUE(invalid(
      fused(nullptr, counts, 2, COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
      "buffers is null"));
  EXPECT_TRUE(invalid(fused(buffers, nullptr, 2, COMMRT_F32, COMMRT_SUM,
                            COMMRT_WIRE_NONE, 1.0f),
                      "counts is null"));
  const int64_t negative[] = {3, -1};
  EXPECT_TRUE(invalid(fused(buffers, negative, 2, COMMRT_F32, COMMRT_SUM,
                            COMMRT_WIRE_NONE, 1.0f),
                      "counts[1] -1 is negative"));
  void *withNull[] = {a, nullptr};
  EXPECT_TRUE(invalid(fused(withNull, counts, 2, COMMRT_F32, COMMRT_SUM,
                            COMMRT_WIRE_NONE, 1.0f),
                      "buffers[1] is null but counts[1] is 2"));
  const int64_t huge[] = {std::numeric_limits<int64_t>::max() / 8, 1};
  EXPECT_TRUE(invalid(
      fused(buffers, huge, 2, COMMRT_F32, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
      "counts add up to more than 1152921504606846975 "
      "elements"));
  EXPECT_TRUE(
      invalid(fused(buffers, counts, 2, 5, COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
              "dtype 5 is not a commrt_dtype (expected 0..3)"));
  EXPECT_TRUE(
      invalid(fused(buffers, counts, 2, COMMRT_F32, 4, COMMRT_WIRE_NONE, 1.0f),
              "reduce 4 is not a commrt_reduce (expected 0..3)"));
  const std::string notAWire =
      " is not COMMRT_WIRE_NONE (-1), COMMRT_F16 (2) or COMMRT_BF16 (3)";
  EXPECT_TRUE(invalid(
      fused(buffers, counts, 2, COMMRT_F64, COMMRT_SUM, COMMRT_F32, 1.0f),
      "wire 0" + notAWire));
  EXPECT_TRUE(
      invalid(fused(buffers, counts, 2, COMMRT_F64, COMMRT_SUM, -2, 1.0f),
              "wire -2" + notAWire));
  EXPECT_TRUE(invalid(
      fused(buffers, counts, 2, COMMRT_F16, COMMRT_SUM, COMMRT_F16, 1.0f),
      "wire 2 (f16) is not narrower than dtype 2 (f16); COMMRT_WIRE_NONE (-1) "
      "sends the dtype itself"));
  EXPECT_TRUE(invalid(
      fused(buffers, counts, 2, COMMRT_F16, COMMRT_SUM, COMMRT_BF16, 1.0f),
      "wire 3 (bf16) is not narrower than dtype 2 (f16); COMMRT_WIRE_NONE "
      "(-1) sends the dtype itself"));
  for (float prescale :
       {0.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
    std::ostringstream message;
    message << "prescale " << prescale << " is not a finite nonzero number";
    EXPECT_TRUE(invalid(fused(buffers, counts, 2, COMMRT_F32, COMMRT_AVG,
                              COMMRT_BF16, prescale),
                        message.str()));
  }
  const int64_t zeros[] = {0, 0};
  void *nulls[] = {nullptr, nullptr};
  EXPECT_TRUE(
      invalid(fused(nulls, zeros, 2, COMMRT_F32, COMMRT_SUM, COMMRT_F32, 1.0f),
              "wire 0" + notAWire))
      << "arguments are checked even when there is nothing to reduce";
}

TEST_P(AsyncInvalidArgumentTest, FusedAllreduceStart) {
  float a[3] = {};
  void *buffers[] = {a};
  const int64_t counts[] = {3};
  int64_t handle = 42;
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f, channels, &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_fused_allreduce_start: channel " + std::to_string(channels) +
          " is out of range (expected 0.." + std::to_string(channels - 1) +
          "; COMMRT_CHANNELS sets the number of channels)"));
  EXPECT_EQ(handle, 0);
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f, 0, nullptr),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_fused_allreduce_start: handle is null"));
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 0, COMMRT_F32, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f, 0, &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_fused_allreduce_start: nbuffers 0 is less than 1"));
  EXPECT_TRUE(failedWith(
      commrt_fused_allreduce_start(buffers, counts, 1, COMMRT_BF16, COMMRT_SUM,
                                   COMMRT_F16, 1.0f, 0, &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_fused_allreduce_start: wire 2 (f16) is not narrower than dtype "
      "3 (bf16); COMMRT_WIRE_NONE (-1) sends the dtype itself"));
}

TEST_P(AsyncInvalidArgumentTest, MixedAllreduce) {
  float a[3] = {}, b[2] = {};
  void *buffers[] = {a, b};
  const int64_t counts[] = {3, 2};
  const int32_t narrowed[] = {1, 0};
  auto invalid = [&](int32_t status, const std::string &message) {
    return failedWith(status, COMMRT_ERROR_INVALID_ARGUMENT,
                      "commrt_mixed_allreduce: " + message);
  };
  EXPECT_TRUE(invalid(commrt_mixed_allreduce(0, buffers, counts, narrowed, 2,
                                             COMMRT_F32, COMMRT_SUM,
                                             COMMRT_WIRE_NONE, 1.0f),
                      "wire is COMMRT_WIRE_NONE (-1): a mixed allreduce "
                      "narrows some buffers to COMMRT_F16 or COMMRT_BF16"));
  EXPECT_TRUE(
      invalid(commrt_mixed_allreduce(0, buffers, counts, nullptr, 2, COMMRT_F32,
                                     COMMRT_SUM, COMMRT_F16, 1.0f),
              "narrowed is null"));
  const int32_t notAFlag[] = {1, 2};
  EXPECT_TRUE(
      invalid(commrt_mixed_allreduce(0, buffers, counts, notAFlag, 2,
                                     COMMRT_F32, COMMRT_SUM, COMMRT_F16, 1.0f),
              "narrowed[1] 2 is not 0 or 1"));
  EXPECT_TRUE(
      invalid(commrt_mixed_allreduce(0, buffers, counts, narrowed, 2,
                                     COMMRT_F16, COMMRT_SUM, COMMRT_F16, 1.0f),
              "wire 2 (f16) is not narrower than dtype 2 (f16); "
              "COMMRT_WIRE_NONE (-1) sends the dtype itself"));
  EXPECT_TRUE(
      invalid(commrt_mixed_allreduce(0, buffers, counts, narrowed, 2,
                                     COMMRT_F32, COMMRT_SUM, COMMRT_F16, 0.0f),
              "prescale 0 is not a finite nonzero number"));
  EXPECT_TRUE(failedWith(
      commrt_mixed_allreduce(7, buffers, counts, narrowed, 2, COMMRT_F32,
                             COMMRT_SUM, COMMRT_F16, 1.0f),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_mixed_allreduce: group 7 is not a process group (0, all ranks, "
      "or a handle commrt_group_split returned)"));
  int64_t handle = 42;
  EXPECT_TRUE(failedWith(
      commrt_mixed_allreduce_start(0, buffers, counts, narrowed, 2, COMMRT_F32,
                                   COMMRT_SUM, COMMRT_F16, 1.0f, channels,
                                   &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_mixed_allreduce_start: channel " + std::to_string(channels) +
          " is out of range (expected 0.." + std::to_string(channels - 1) +
          "; COMMRT_CHANNELS sets the number of channels)"));
  EXPECT_EQ(handle, 0);
}

TEST(Async, OneRankMixedAllreduceRoundsOnlyTheNarrowedBuffers) {
  // On one rank nothing travels, but narrowed buffers still go through the
  // wire type: 1/3 comes back rounded to f16, the f32 buffer unchanged.
  float narrow[2] = {1.0f / 3.0f, 2.0f}, full[3] = {1.0f / 3.0f, -5.5f, 7.0f};
  float empty[1] = {9.0f};
  void *buffers[] = {narrow, empty, full};
  const int64_t counts[] = {2, 0, 3};
  const int32_t narrowed[] = {1, 1, 0};
  ASSERT_EQ(commrt_mixed_allreduce(0, buffers, counts, narrowed, 3, COMMRT_F32,
                                   COMMRT_AVG, COMMRT_F16, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(narrow[0],
            commrt::halfToFloat(commrt::floatToHalf(1.0f / 6.0f)) * 2.0f);
  EXPECT_EQ(narrow[1], 2.0f);
  EXPECT_EQ(full[0], 1.0f / 3.0f);
  EXPECT_EQ(full[1], -5.5f);
  EXPECT_EQ(full[2], 7.0f);
  EXPECT_EQ(empty[0], 9.0f) << "an empty buffer is not touched";
}

TEST_P(AsyncInvalidArgumentTest, TestAndWait) {
  const std::string notInFlight = " is not in flight (it was never returned "
                                  "by a start, or was already waited)";
  int32_t done = 7;
  EXPECT_TRUE(failedWith(commrt_test(0, &done), COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_test: handle 0" + notInFlight));
  EXPECT_EQ(done, 0);
  EXPECT_TRUE(failedWith(commrt_wait(-5), COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_wait: handle -5" + notInFlight));
  done = 7;
  EXPECT_TRUE(failedWith(commrt_wait_for(3, 1.0, &done),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_wait_for: handle 3" + notInFlight));
  EXPECT_EQ(done, 0);

  float value = 2.0f;
  int64_t handle;
  ASSERT_EQ(
      commrt_allreduce_start(&value, 1, COMMRT_F32, COMMRT_SUM, 0, &handle),
      COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_TRUE(failedWith(commrt_test(handle, nullptr),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_test: done is null"));
  EXPECT_TRUE(failedWith(commrt_wait_for(handle, 1.0, nullptr),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_wait_for: done is null"));
  EXPECT_TRUE(failedWith(commrt_wait_for(handle, -1.0, &done),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_wait_for: timeout_s is -1, expected a "
                         "number of seconds (0 or more)"));
  EXPECT_TRUE(failedWith(commrt_wait_for(handle, std::nan(""), &done),
                         COMMRT_ERROR_INVALID_ARGUMENT,
                         "commrt_wait_for: timeout_s is nan, expected a "
                         "number of seconds (0 or more)"));
  // One rank: done at once, and the handle is still the caller's.
  EXPECT_EQ(commrt_wait_for(handle, 60.0, &done), COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(done, 1);
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_TRUE(
      failedWith(commrt_wait(handle), COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_wait: handle " + std::to_string(handle) + notInFlight))
      << "a handle is waited once";
  EXPECT_TRUE(failedWith(
      commrt_test(handle, &done), COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_test: handle " + std::to_string(handle) + notInFlight));
}

INSTANTIATE_TEST_SUITE_P(Checks, AsyncInvalidArgumentTest, ::testing::Bool(),
                         checksName);

TEST(Async, OneRankKeepsTheValues) {
  expectOneRankKeepsTheValues([](void *data, int dtype, int reduce) {
    int64_t handle;
    ASSERT_EQ(commrt_allreduce_start(data, 4, dtype, reduce,
                                     reduce % commrt_channels(), &handle),
              COMMRT_SUCCESS)
        << commrt_last_error();
    ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  });
}

TEST(Async, HandlesAreDistinctAndNeverZero) {
  std::set<int64_t> handles;
  for (int i = 0; i < 10; ++i) {
    int64_t handle;
    ASSERT_EQ(
        commrt_allreduce_start(nullptr, 0, COMMRT_F64, COMMRT_MAX, 0, &handle),
        COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_NE(handle, 0);
    handles.insert(handle);
  }
  EXPECT_EQ(handles.size(), 10u);
  for (int64_t handle : handles) {
    int32_t done = 0;
    EXPECT_EQ(commrt_test(handle, &done), COMMRT_SUCCESS);
    EXPECT_EQ(done, 1) << "nothing to reduce: complete when started";
    EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS);
  }
}

TEST(Fused, OneRankRoundsThroughTheWireType) {
  // Per buffer: 1 + 2^-12 is 1 in f16 and bf16; 3 and -0.75 survive both.
  float a[] = {1.0f + 0x1p-12f, 3.0f};
  double b[] = {-0.75, 1.0 + 0x1p-12};
  float c[] = {-0.75f};
  void *floats[] = {a, nullptr, c};
  const int64_t floatCounts[] = {2, 0, 1};
  ASSERT_EQ(commrt_fused_allreduce(floats, floatCounts, 3, COMMRT_F32,
                                   COMMRT_AVG, COMMRT_F16, 0.5f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 3.0f);
  EXPECT_EQ(c[0], -0.75f);
  void *doubles[] = {b};
  const int64_t doubleCounts[] = {2};
  ASSERT_EQ(commrt_fused_allreduce(doubles, doubleCounts, 1, COMMRT_F64,
                                   COMMRT_SUM, COMMRT_BF16, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(b[0], -0.75);
  EXPECT_EQ(b[1], 1.0);
}

TEST(Fused, WithoutAWireTypeKeepsEveryBit) {
  // 1 + 2^-20 is lost in any 16-bit type, kept in f32.
  float a[] = {1.0f + 0x1p-20f, -3.5f};
  float b[] = {0x1p-140f};
  void *buffers[] = {a, b};
  const int64_t counts[] = {2, 1};
  ASSERT_EQ(commrt_fused_allreduce(buffers, counts, 2, COMMRT_F32, COMMRT_MAX,
                                   COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(a[0], 1.0f + 0x1p-20f);
  EXPECT_EQ(a[1], -3.5f);
  EXPECT_EQ(b[0], 0x1p-140f);
}

TEST(Fused, ZeroLengthBuffersOnlyIsANoOp) {
  void *buffers[] = {nullptr, nullptr};
  const int64_t counts[] = {0, 0};
  EXPECT_EQ(commrt_fused_allreduce(buffers, counts, 2, COMMRT_BF16, COMMRT_SUM,
                                   COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle;
  ASSERT_EQ(commrt_fused_allreduce_start(buffers, counts, 2, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_F16, 1.0f, 1,
                                         &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS);
}

} // namespace
