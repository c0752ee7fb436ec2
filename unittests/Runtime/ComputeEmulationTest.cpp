//===- ComputeEmulationTest.cpp - A skeleton's compute steps on the host --===//
//
// The pacer's arithmetic with made-up elapsed times (no clock is read), the
// synthetic gradient values, and commrt_fill_gradient.
//
//===----------------------------------------------------------------------===//

#include "ComputeEmulation.h"
#include "WireFormat.h"

#include "commrt/commrt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

using commrt::ComputePacer;
using commrt::SyntheticGradients;
using commrt::syntheticGradientValue;

TEST(ComputePacerTest, OnTimeStepsSleepInFull) {
  ComputePacer pacer;
  EXPECT_DOUBLE_EQ(pacer.sleepUs(1000.0), 1000.0);
  pacer.record(1000.0, 1000.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 0.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(250.0), 250.0);
}

TEST(ComputePacerTest, LatenessShortensTheNextSleep) {
  ComputePacer pacer;
  pacer.record(1000.0, 1130.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 130.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(1000.0), 870.0);
  // The shortened sleep is late by as much again: the lateness does not
  // grow with the number of steps.
  pacer.record(1000.0, 870.0 + 130.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 130.0);
}

TEST(ComputePacerTest, StepsEndWithinOneLatenessOfTheirSum) {
  ComputePacer pacer;
  const double overshootUs = 127.0;
  double requested = 0.0, elapsed = 0.0;
  for (int step = 0; step < 352; ++step) {
    double stepUs = 100.0 + 37.0 * (step % 9);
    double sleptUs = pacer.sleepUs(stepUs);
    // A sleep wakes late by the overshoot; skipping one costs nothing.
    double tookUs = sleptUs > 0.0 ? sleptUs + overshootUs : 0.0;
    pacer.record(stepUs, tookUs);
    requested += stepUs;
    elapsed += tookUs;
  }
  EXPECT_GE(elapsed, requested);
  EXPECT_LE(elapsed, requested + overshootUs);
  EXPECT_DOUBLE_EQ(elapsed - requested, pacer.lateness());
}

TEST(ComputePacerTest, LatenessLongerThanAStepSkipsIt) {
  ComputePacer pacer;
  // Descheduled for 5 ms during a 1 ms step.
  pacer.record(1000.0, 6000.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(2000.0), 0.0);
  pacer.record(2000.0, 0.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 3000.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(4000.0), 1000.0);
}

TEST(ComputePacerTest, EarlyWakeUpCarriesNoCredit) {
  ComputePacer pacer;
  pacer.record(1000.0, 990.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 0.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(1000.0), 1000.0);
}

TEST(ComputePacerTest, TimeSpentFillingCountsWithinTheStep) {
  ComputePacer pacer;
  // 300 us of a 1000 us step went to filling its results.
  EXPECT_DOUBLE_EQ(pacer.sleepUs(1000.0, 300.0), 700.0);
  pacer.record(1000.0, 300.0 + 700.0 + 50.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 50.0);
  EXPECT_DOUBLE_EQ(pacer.sleepUs(1000.0, 300.0), 650.0);
  // Filling took longer than the step: no sleep, the excess carried.
  EXPECT_DOUBLE_EQ(pacer.sleepUs(100.0, 400.0), 0.0);
  pacer.record(100.0, 400.0);
  EXPECT_DOUBLE_EQ(pacer.lateness(), 350.0);
}

TEST(SyntheticGradientTest, ValuesAreNormalVariedAndNonzero) {
  std::set<float> distinct;
  double sum = 0.0, squares = 0.0;
  int withinOneSd = 0;
  const int count = 1 << 16;
  for (int i = 0; i < count; ++i) {
    float value = syntheticGradientValue(/*seed=*/3, i);
    ASSERT_TRUE(std::isfinite(value)) << i;
    ASSERT_NE(value, 0.0f) << i;
    distinct.insert(std::fabs(value));
    sum += value;
    squares += double(value) * value;
    withinOneSd += std::fabs(value) < 1.0f;
  }
  // Magnitudes barely tie; mean 0, variance 1, 68% within one standard
  // deviation, as a normal distribution has.
  EXPECT_GT(distinct.size(), count * 99 / 100);
  EXPECT_NEAR(sum / count, 0.0, 0.02);
  EXPECT_NEAR(squares / count, 1.0, 0.03);
  EXPECT_NEAR(double(withinOneSd) / count, 0.6827, 0.01);
  // Deterministic, and another seed gives another sequence.
  EXPECT_EQ(syntheticGradientValue(3, 17), syntheticGradientValue(3, 17));
  EXPECT_NE(syntheticGradientValue(3, 17), syntheticGradientValue(4, 17));
}

TEST(SyntheticGradientTest, FillsCopyTheTableFromTheirStartAndWrap) {
  auto values = std::make_unique<SyntheticGradients>();
  const uint32_t size = SyntheticGradients::kSize;
  std::vector<float> out(size + 10);
  values->fill(out.data(), static_cast<int64_t>(out.size()), size - 5,
               [](float x) { return x; });
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(out[i], syntheticGradientValue(0, size - 5 + i)) << i;
  // Then from the table's start again, twice.
  for (uint32_t i = 5; i < out.size(); ++i)
    EXPECT_EQ(out[i], syntheticGradientValue(0, (i - 5) % size)) << i;
  // A start beyond the table wraps; a conversion applies to every value.
  std::vector<double> doubled(3);
  values->fill(doubled.data(), 3, 2 * size + 7,
               [](float x) { return 2.0 * x; });
  for (uint32_t i = 0; i < 3; ++i)
    EXPECT_EQ(doubled[i], 2.0 * syntheticGradientValue(0, 7 + i));
}

TEST(FillGradientTest, FillsEveryDtype) {
  std::vector<float> f32(1000, 0.0f);
  ASSERT_EQ(commrt_fill_gradient(f32.data(), 999, COMMRT_F32), COMMRT_SUCCESS);
  for (int i = 0; i < 999; ++i)
    ASSERT_TRUE(f32[i] != 0.0f && std::isfinite(f32[i])) << i;
  EXPECT_EQ(f32[999], 0.0f) << "wrote past count";

  std::vector<double> f64(64, 0.0);
  ASSERT_EQ(commrt_fill_gradient(f64.data(), 64, COMMRT_F64), COMMRT_SUCCESS);
  for (double value : f64)
    EXPECT_TRUE(value != 0.0 && std::isfinite(value));

  for (int32_t dtype : {COMMRT_F16, COMMRT_BF16}) {
    std::vector<uint16_t> halves(64, 0);
    ASSERT_EQ(commrt_fill_gradient(halves.data(), 64, dtype), COMMRT_SUCCESS);
    for (uint16_t bits : halves) {
      float value = dtype == COMMRT_F16 ? commrt::halfToFloat(bits)
                                        : commrt::bfloat16ToFloat(bits);
      EXPECT_TRUE(std::isfinite(value)) << value;
    }
  }
  // Successive fills differ.
  std::vector<float> again(999);
  ASSERT_EQ(commrt_fill_gradient(again.data(), 999, COMMRT_F32),
            COMMRT_SUCCESS);
  EXPECT_NE(std::vector<float>(f32.begin(), f32.begin() + 999), again);
  // Nothing to fill.
  EXPECT_EQ(commrt_fill_gradient(nullptr, 0, COMMRT_F32), COMMRT_SUCCESS);
}

TEST(FillGradientTest, RejectsBadArguments) {
  float value = 0.0f;
  EXPECT_EQ(commrt_fill_gradient(nullptr, 4, COMMRT_F32),
            COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(commrt_last_error()).find("commrt_fill_gradient"),
            std::string::npos)
      << commrt_last_error();
  EXPECT_EQ(commrt_fill_gradient(&value, -1, COMMRT_F32),
            COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(commrt_fill_gradient(&value, 1, 7), COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(commrt_last_error()).find("dtype"), std::string::npos)
      << commrt_last_error();
  EXPECT_EQ(value, 0.0f);
}
