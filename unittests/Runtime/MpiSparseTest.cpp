//===- MpiSparseTest.cpp - commrt_sparse_allreduce across MPI ranks -------===//
//
// Run under mpirun with any number of ranks (CTest uses 2 and 4). Gradients
// and residuals are small integers, so every sum is exact in f32 and results
// compare exactly. What each rank sent is recovered as acc - residual_out and
// gathered with MPI to check the reduction.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// A small integer gradient entry of rank `r`, distinct across ranks.
float gradientAt(int r, int64_t i) {
  return static_cast<float>((i * 7 + r * 13 + (i * i) % 17) % 23 - 11);
}

/// A small integer residual entry of rank `r`.
float residualAt(int r, int64_t i) {
  return static_cast<float>((i * 3 + r) % 5 - 2);
}

/// `local` summed over all ranks, in double (exact for small integers).
std::vector<double> sumOverRanks(const std::vector<float> &local) {
  std::vector<double> sum(local.begin(), local.end());
  MPI_Allreduce(MPI_IN_PLACE, sum.data(), static_cast<int>(sum.size()),
                MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum;
}

/// One rank's view of a sparse allreduce it ran.
struct Step {
  std::vector<float> acc, reduced, residualOut, sent;
  /// The indices whose entry this rank sent (nonzero entries of `sent`).
  std::vector<int64_t> selected;
};

/// Runs one sparse allreduce on `grad` and `residual` and checks what holds
/// for every scheme: the new residual keeps exactly what was not sent, and
/// the reduced gradient is the reduction over ranks of what they sent.
Step runStep(std::vector<float> grad, std::vector<float> residual,
             double density, commrt_select select, commrt_exchange exchange,
             commrt_reduce reduce, int64_t chunkElements) {
  const auto count = static_cast<int64_t>(grad.size());
  Step step;
  for (int64_t i = 0; i < count; ++i)
    step.acc.push_back(grad[i] + residual[i]);
  EXPECT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count,
                                    density, select, exchange, reduce,
                                    chunkElements),
            COMMRT_SUCCESS)
      << commrt_last_error();
  step.reduced = grad;
  step.residualOut = residual;
  for (int64_t i = 0; i < count; ++i) {
    // Every entry is either kept whole or sent whole.
    EXPECT_TRUE(residual[i] == step.acc[i] || residual[i] == 0.0f)
        << "index " << i;
    step.sent.push_back(step.acc[i] - residual[i]);
    EXPECT_EQ(step.sent[i] + residual[i], step.acc[i]) << "index " << i;
    if (step.sent[i] != 0.0f)
      step.selected.push_back(i);
  }
  std::vector<double> sum = sumOverRanks(step.sent);
  for (int64_t i = 0; i < count; ++i) {
    float expected = static_cast<float>(sum[i]);
    if (reduce == COMMRT_AVG)
      expected /= static_cast<float>(size());
    EXPECT_EQ(step.reduced[i], expected) << "index " << i;
  }
  return step;
}

class SparseTest : public ::testing::TestWithParam<SparseScheme> {
protected:
  static constexpr int64_t kCount = 1000;
  static constexpr int64_t kChunk = 16;
  static constexpr double kDensity = 0.1;

  /// Two steps, the second on the first's residual, each checked by
  /// runStep and against the selection's own guarantee.
  void runTwoSteps() {
    auto [select, exchange, reduce] = GetParam();
    std::vector<float> grad(kCount), residual(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      grad[i] = gradientAt(rank(), i);
      residual[i] = residualAt(rank(), i);
    }
    for (int s = 0; s < 2; ++s) {
      Step step =
          runStep(grad, residual, kDensity, select, exchange, reduce, kChunk);
      checkSelection(select, step);
      residual = step.residualOut;
    }
  }

  /// Checks that `step` selected what `select` promises.
  void checkSelection(commrt_select select, const Step &step) {
    const auto k = static_cast<int64_t>(std::ceil(kDensity * kCount));
    const auto selected = static_cast<int64_t>(step.selected.size());
    std::vector<bool> isSelected(kCount, false);
    for (int64_t i : step.selected)
      isSelected[i] = true;
    if (select == COMMRT_SELECT_CHUNK)
      return checkChunks(step, isSelected);

    // The smallest selected magnitude, and the last index that has it.
    float least = INFINITY;
    int64_t lastLeast = -1;
    for (int64_t i : step.selected)
      if (std::fabs(step.acc[i]) <= least) {
        least = std::fabs(step.acc[i]);
        lastLeast = i;
      }
    for (int64_t i = 0; i < kCount; ++i) {
      if (isSelected[i])
        continue;
      float magnitude = std::fabs(step.acc[i]);
      EXPECT_LE(magnitude, least) << "index " << i;
      if (select == COMMRT_SELECT_TOPK)
        EXPECT_TRUE(magnitude < least || i > lastLeast)
            << "index " << i << " ties with the selected " << lastLeast;
      else
        EXPECT_LT(magnitude, least) << "index " << i;
    }
    if (select == COMMRT_SELECT_TOPK) {
      EXPECT_EQ(selected, k);
      return;
    }
    // Threshold: at least k (there are more nonzeros), at most k + k / 8 or
    // all entries tied with the k-th largest magnitude.
    std::vector<float> magnitudes;
    for (float value : step.acc)
      magnitudes.push_back(std::fabs(value));
    std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1),
                     magnitudes.end(), std::greater<float>());
    float kth = magnitudes[k - 1];
    auto reachingKth = static_cast<int64_t>(
        std::count_if(step.acc.begin(), step.acc.end(),
                      [kth](float value) { return std::fabs(value) >= kth; }));
    EXPECT_GE(selected, k);
    EXPECT_LE(selected, std::max(k + k / 8, reachingKth));
  }

  /// Chunk selection: whole chunks, the same on every rank, as many as the
  /// density says, of the largest norms summed over ranks.
  void checkChunks(const Step &step, const std::vector<bool> &isSelected) {
    const int64_t chunks = (kCount + kChunk - 1) / kChunk;
    const auto picked = static_cast<int64_t>(std::ceil(kDensity * chunks));
    std::vector<int> chosen(chunks, 0);
    std::vector<double> norms(chunks, 0.0);
    for (int64_t c = 0; c < chunks; ++c) {
      bool all = true;
      for (int64_t i = c * kChunk; i < std::min(kCount, (c + 1) * kChunk);
           ++i) {
        all = all && step.residualOut[i] == 0.0f;
        norms[c] += static_cast<double>(step.acc[i]) * step.acc[i];
        chosen[c] |= isSelected[i];
      }
      if (chosen[c])
        EXPECT_TRUE(all) << "chunk " << c << " was sent in part";
    }
    std::vector<int> agreed = chosen;
    MPI_Allreduce(MPI_IN_PLACE, agreed.data(), static_cast<int>(chunks),
                  MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    EXPECT_EQ(agreed, chosen) << "ranks chose different chunks";
    EXPECT_EQ(std::count(chosen.begin(), chosen.end(), 1), picked);
    MPI_Allreduce(MPI_IN_PLACE, norms.data(), static_cast<int>(chunks),
                  MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double leastChosen = INFINITY, mostOther = 0.0;
    for (int64_t c = 0; c < chunks; ++c) {
      if (chosen[c])
        leastChosen = std::min(leastChosen, norms[c]);
      else
        mostOther = std::max(mostOther, norms[c]);
    }
    EXPECT_GE(leastChosen, mostOther);
  }
};

TEST_P(SparseTest, ConservesEverythingAndSelectsAsPromised) { runTwoSteps(); }

TEST_P(SparseTest, DensityOneIsTheDenseAllreduce) {
  auto [select, exchange, reduce] = GetParam();
  const int64_t count = 257;
  std::vector<float> grad(count), residual(count), dense(count);
  for (int64_t i = 0; i < count; ++i) {
    grad[i] = gradientAt(rank(), i);
    residual[i] = residualAt(rank(), i);
    dense[i] = grad[i] + residual[i];
  }
  ASSERT_EQ(commrt_allreduce(dense.data(), count, COMMRT_F32, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count, 1.0,
                                    select, exchange, reduce, 10),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(grad, dense);
  EXPECT_EQ(residual, std::vector<float>(count, 0.0f));
}

INSTANTIATE_TEST_SUITE_P(ValidSchemes, SparseTest,
                         ::testing::ValuesIn(validSparseSchemes()),
                         sparseSchemeName);

/// Sparse allreduces started on a channel and waited.
class SparseStartTest : public ::testing::TestWithParam<SparseScheme> {};

TEST_P(SparseStartTest, StartAndWaitGiveTheBlockingResults) {
  auto [select, exchange, reduce] = GetParam();
  const int64_t count = 5003, chunkElements = 64;
  std::vector<float> grad(count), residual(count);
  for (int64_t i = 0; i < count; ++i) {
    grad[i] = gradientAt(rank(), i) / 3.0f;
    residual[i] = residualAt(rank(), i) / 7.0f;
  }
  std::vector<float> startedGrad = grad, startedResidual = residual;
  const int64_t chunk = select == COMMRT_SELECT_CHUNK ? chunkElements : 0;
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count, 0.02,
                                    select, exchange, reduce, chunk),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle = 0;
  ASSERT_EQ(commrt_sparse_allreduce_start(
                startedGrad.data(), startedResidual.data(), count, 0.02, select,
                exchange, reduce, chunk, channels() - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_NE(handle, 0);
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(startedGrad, grad);
  EXPECT_EQ(startedResidual, residual);
}

INSTANTIATE_TEST_SUITE_P(ValidSchemes, SparseStartTest,
                         ::testing::ValuesIn(validSparseSchemes()),
                         sparseSchemeName);

TEST(Sparse, StartsOverlapDenseCollectivesOnOtherChannels) {
  // A sparse allreduce on channel 0 while a dense one runs on the last
  // channel, and a second sparse one queued behind the first: every result
  // is the blocking one.
  const int64_t count = 20000;
  std::vector<float> grad(count), residual(count), dense(count);
  for (int64_t i = 0; i < count; ++i) {
    grad[i] = gradientAt(rank(), i);
    residual[i] = residualAt(rank(), i);
    dense[i] = static_cast<float>(contribution(rank(), i));
  }
  std::vector<float> grad2 = grad, residual2 = residual;
  std::vector<float> expectedGrad = grad, expectedResidual = residual;
  ASSERT_EQ(commrt_sparse_allreduce(
                expectedGrad.data(), expectedResidual.data(), count, 0.01,
                COMMRT_SELECT_THRESHOLD, COMMRT_EXCHANGE_HASH, COMMRT_AVG, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t first = 0, second = 0, other = 0;
  ASSERT_EQ(commrt_sparse_allreduce_start(grad.data(), residual.data(), count,
                                          0.01, COMMRT_SELECT_THRESHOLD,
                                          COMMRT_EXCHANGE_HASH, COMMRT_AVG, 0,
                                          /*channel=*/0, &first),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_allreduce_start(dense.data(), count, COMMRT_F32, COMMRT_SUM,
                                   channels() - 1, &other),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce_start(grad2.data(), residual2.data(), count,
                                          0.01, COMMRT_SELECT_THRESHOLD,
                                          COMMRT_EXCHANGE_HASH, COMMRT_AVG, 0,
                                          /*channel=*/0, &second),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(second), COMMRT_SUCCESS) << commrt_last_error();
  ASSERT_EQ(commrt_wait(other), COMMRT_SUCCESS) << commrt_last_error();
  ASSERT_EQ(commrt_wait(first), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(grad, expectedGrad);
  EXPECT_EQ(residual, expectedResidual);
  EXPECT_EQ(grad2, expectedGrad);
  EXPECT_EQ(residual2, expectedResidual);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < count; ++i)
    mismatches += dense[i] !=
                  static_cast<float>(expectedReduction(COMMRT_SUM, i, size()));
  EXPECT_EQ(mismatches, 0);
}

TEST(Sparse, StartRejectsABadChannelAndANullHandle) {
  std::vector<float> grad(8, 1.0f), residual(8, 0.0f);
  int64_t handle = 7;
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce_start(
          grad.data(), residual.data(), 8, 0.5, COMMRT_SELECT_TOPK,
          COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0, channels(), &handle),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_sparse_allreduce_start: channel " + std::to_string(channels()) +
          " is out of range (expected 0.." + std::to_string(channels() - 1) +
          "; COMMRT_CHANNELS sets the number of channels)"));
  EXPECT_EQ(handle, 0) << "a failed start stores handle 0";
  EXPECT_TRUE(
      failedWith(commrt_sparse_allreduce_start(
                     grad.data(), residual.data(), 8, 0.5, COMMRT_SELECT_TOPK,
                     COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0, 0, nullptr),
                 COMMRT_ERROR_INVALID_ARGUMENT,
                 "commrt_sparse_allreduce_start: handle is null"));
  // Nothing to reduce: a handle that is already complete.
  ASSERT_EQ(commrt_sparse_allreduce_start(
                nullptr, nullptr, 0, 0.5, COMMRT_SELECT_TOPK,
                COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0, 0, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int32_t done = 0;
  ASSERT_EQ(commrt_test(handle, &done), COMMRT_SUCCESS);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(commrt_wait(handle), COMMRT_SUCCESS);
}

TEST(Sparse, HashExchangeSumsAsTheAllgatherDoes) {
  const int64_t count = 4096;
  std::vector<float> grad(count), residual(count);
  for (int64_t i = 0; i < count; ++i) {
    // Fractions: the sums round, and must round alike.
    grad[i] = gradientAt(rank(), i) / 3.0f;
    residual[i] = residualAt(rank(), i) / 7.0f;
  }
  std::vector<float> grad2 = grad, residual2 = residual;
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count, 0.05,
                                    COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_sparse_allreduce(grad2.data(), residual2.data(), count, 0.05,
                                    COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_HASH,
                                    COMMRT_SUM, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(grad, grad2);
  EXPECT_EQ(residual, residual2);
}

TEST(Sparse, ThresholdNeverSelectsZeros) {
  // Fewer nonzeros than k: all of them are sent, the zeros are not.
  const int64_t count = 100;
  std::vector<float> grad(count, 0.0f), residual(count, 0.0f);
  grad[rank() + 3] = 1.0f;
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count, 0.5,
                                    COMMRT_SELECT_THRESHOLD,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i)
    EXPECT_EQ(grad[i], i >= 3 && i < 3 + size() ? 1.0f : 0.0f) << i;
  EXPECT_EQ(residual, std::vector<float>(count, 0.0f));
}

TEST(Sparse, ChunkSelectionSendsANaNChunk) {
  // 8 chunks of 16; chunk c holds (c + 1) on every rank, so chunk 7 has the
  // largest norm, except that the last rank has a NaN in chunk 2. Two
  // chunks are picked: the NaN one and chunk 7, on every rank. Compared as
  // a number, the NaN would derail the selection (and stay in the residual
  // for ever).
  const int64_t chunk = 16, count = 8 * chunk;
  std::vector<float> grad(count), residual(count, 0.0f);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = static_cast<float>(i / chunk + 1);
  const int64_t nanIndex = 2 * chunk + 5;
  if (rank() == size() - 1)
    grad[nanIndex] = std::nanf("");
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(), count,
                                    2.0 / 8.0, COMMRT_SELECT_CHUNK,
                                    COMMRT_EXCHANGE_CHUNK, COMMRT_SUM, chunk),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (int64_t i = 0; i < count; ++i) {
    int64_t c = i / chunk;
    float sum = static_cast<float>((c + 1) * size());
    if (i == nanIndex)
      EXPECT_TRUE(std::isnan(grad[i])) << i;
    else
      EXPECT_EQ(grad[i], c == 2 || c == 7 ? sum : 0.0f) << i;
    // Sent chunks leave the residual; the NaN with them.
    EXPECT_EQ(residual[i], c == 2 || c == 7 ? 0.0f : static_cast<float>(c + 1))
        << i;
  }
}

TEST(Sparse, ZeroCountIsANoOp) {
  EXPECT_EQ(commrt_sparse_allreduce(nullptr, nullptr, 0, 0.5,
                                    COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
}

/// Argument errors, with the consistency checks on so that a rank's bad
/// argument fails every rank.
class SparseErrorTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(commrt_set_consistency_checks(1), COMMRT_SUCCESS);
  }
  void TearDown() override { commrt_set_consistency_checks(0); }

  /// Calls commrt_sparse_allreduce on 8 elements, topk over allgather by
  /// default, and expects `status` with `message` after the function name.
  static ::testing::AssertionResult
  fails(commrt_status status, const std::string &message, double density,
        int32_t select = COMMRT_SELECT_TOPK,
        int32_t exchange = COMMRT_EXCHANGE_ALLGATHER,
        int32_t reduce = COMMRT_SUM, int64_t chunkElements = 0,
        int64_t count = 8, bool nullGrad = false) {
    std::vector<float> grad(8, 1.0f), residual(8, 0.0f);
    return failedWith(commrt_sparse_allreduce(nullGrad ? nullptr : grad.data(),
                                              residual.data(), count, density,
                                              select, exchange, reduce,
                                              chunkElements),
                      status, "commrt_sparse_allreduce: " + message);
  }
};

TEST_F(SparseErrorTest, RejectsInvalidArguments) {
  const commrt_status invalid = COMMRT_ERROR_INVALID_ARGUMENT;
  EXPECT_TRUE(fails(invalid, "density 0 is not in (0, 1]", 0.0));
  EXPECT_TRUE(fails(invalid, "density 1.5 is not in (0, 1]", 1.5));
  EXPECT_TRUE(fails(invalid, "density nan is not in (0, 1]", NAN));
  EXPECT_TRUE(fails(invalid, "select 4 is not a commrt_select (expected 0..3)",
                    0.5, 4));
  EXPECT_TRUE(fails(invalid,
                    "exchange -1 is not a commrt_exchange (expected 0..2)", 0.5,
                    COMMRT_SELECT_TOPK, -1));
  EXPECT_TRUE(fails(invalid, "reduce 2 is not COMMRT_SUM (0) or COMMRT_AVG (1)",
                    0.5, COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_ALLGATHER,
                    COMMRT_MAX));
  EXPECT_TRUE(fails(invalid,
                    "select 0 does not go with exchange 2: chunk selection "
                    "(2) goes with the chunk exchange (2) and only with it",
                    0.5, COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_CHUNK));
  EXPECT_TRUE(fails(invalid,
                    "select 2 does not go with exchange 1: chunk selection "
                    "(2) goes with the chunk exchange (2) and only with it",
                    0.5, COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_HASH));
  EXPECT_TRUE(fails(invalid, "chunk_elements 0 is not positive", 0.5,
                    COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK, COMMRT_SUM, 0));
  EXPECT_TRUE(fails(invalid, "count -1 is negative", 0.5, COMMRT_SELECT_TOPK,
                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0, -1));
  EXPECT_TRUE(fails(invalid, "grad is null but count is 8", 0.5,
                    COMMRT_SELECT_TOPK, COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM,
                    0, 8, true));
  float buffer[8] = {};
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce(buffer, buffer + 4, 8, 0.5, COMMRT_SELECT_TOPK,
                              COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
      invalid, "commrt_sparse_allreduce: grad and residual overlap"));
}

TEST_F(SparseErrorTest, OneRanksInvalidArgumentFailsEveryRank) {
  if (rank() == 0)
    EXPECT_TRUE(fails(COMMRT_ERROR_INVALID_ARGUMENT,
                      "density 2 is not in (0, 1]", 2.0));
  else
    EXPECT_TRUE(fails(COMMRT_ERROR_INVALID_ARGUMENT,
                      "rank 0 passed an invalid argument", 0.5));
}

TEST_F(SparseErrorTest, RanksDisagreeing) {
  if (size() < 2)
    GTEST_SKIP() << "needs two ranks";
  const commrt_status mismatch = COMMRT_ERROR_MISMATCH;
  EXPECT_TRUE(
      fails(mismatch, "ranks disagree on density", rank() == 0 ? 0.25 : 0.5));
  EXPECT_TRUE(
      fails(mismatch, "ranks disagree on exchange (min 0, max 1)", 0.5,
            COMMRT_SELECT_TOPK,
            rank() == 0 ? COMMRT_EXCHANGE_ALLGATHER : COMMRT_EXCHANGE_HASH));
  EXPECT_TRUE(fails(mismatch, "ranks disagree on chunk_elements (min 4, max 5)",
                    0.5, COMMRT_SELECT_CHUNK, COMMRT_EXCHANGE_CHUNK, COMMRT_SUM,
                    rank() == 0 ? 4 : 5));
}

} // namespace
