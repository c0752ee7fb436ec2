//===- MpiRowsTest.cpp - The lossless rows exchange across MPI ranks
//-------===//
//
// COMMRT_SELECT_ROWS under mpirun (CTest uses 2 and 4 ranks): a gradient
// that is sparse by nature, as an embedding's, exchanged row by row by
// allgather or by Zen's hash-balanced exchange. Entries are small integers,
// so the result must equal the dense allreduce's exactly, whatever the order
// of summation.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// Which rows of a `rows`-row gradient a rank touches in a test case.
enum class Touch {
  /// A few rows, some shared with other ranks (a Zipf-like head that every
  /// rank uses, and a tail of the rank's own).
  Colliding,
  /// Every row, on every rank.
  All,
  /// None on odd ranks, a few rows on even ones.
  EmptyOnSomeRanks,
};

/// A small integer entry of rank `r`'s row `row`, column `column`, or 0
/// where the rank does not touch the row.
float entryAt(Touch touch, int r, int64_t rows, int64_t row, int64_t column) {
  bool touched = false;
  switch (touch) {
  case Touch::All:
    touched = true;
    break;
  case Touch::Colliding:
    // Rows 0-2 on every rank; then each rank's own stride.
    touched = row < 3 || row % (7 + r) == static_cast<int64_t>(r);
    break;
  case Touch::EmptyOnSomeRanks:
    touched = r % 2 == 0 && (row * 5 + r) % 11 == 0;
    break;
  }
  if (!touched || row >= rows)
    return 0.0f;
  // Nonzero, so that a touched row never looks untouched.
  return static_cast<float>((row * 3 + column * 7 + r * 5) % 19 + 1) *
         (column % 2 ? -1.0f : 1.0f);
}

/// A whole gradient of `rows` rows of `width` entries.
std::vector<float> gradient(Touch touch, int r, int64_t rows, int64_t width) {
  std::vector<float> grad(rows * width);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t column = 0; column < width; ++column)
      grad[row * width + column] = entryAt(touch, r, rows, row, column);
  return grad;
}

using RowsCase = std::tuple<commrt_exchange, commrt_reduce, Touch, int64_t>;

std::string rowsCaseName(const ::testing::TestParamInfo<RowsCase> &info) {
  auto [exchange, reduce, touch, width] = info.param;
  static const char *const touches[] = {"colliding", "all", "emptyonsome"};
  return std::string(exchange == COMMRT_EXCHANGE_HASH ? "hash" : "allgather") +
         "_" + reduceName(reduce) + "_" + touches[static_cast<int>(touch)] +
         "_width" + std::to_string(width);
}

/// Every exchange, reduction and touch pattern, with rows of 1 and of 16.
auto allRowsCases() {
  return ::testing::Combine(
      ::testing::Values(COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_HASH),
      ::testing::Values(COMMRT_SUM, COMMRT_AVG),
      ::testing::Values(Touch::Colliding, Touch::All, Touch::EmptyOnSomeRanks),
      ::testing::Values(int64_t(1), int64_t(16)));
}

class RowsTest : public ::testing::TestWithParam<RowsCase> {
protected:
  static constexpr int64_t kRows = 300;
};

TEST_P(RowsTest, EqualsTheDenseAllreduce) {
  auto [exchange, reduce, touch, width] = GetParam();
  std::vector<float> grad = gradient(touch, rank(), kRows, width);
  std::vector<float> dense = grad;
  ASSERT_EQ(commrt_allreduce(dense.data(), static_cast<int64_t>(dense.size()),
                             COMMRT_F32, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // No residual: the exchange is lossless. The density is only what the
  // plan expected; a wrong guess changes nothing.
  ASSERT_EQ(commrt_sparse_allreduce(
                grad.data(), nullptr, static_cast<int64_t>(grad.size()), 0.01,
                COMMRT_SELECT_ROWS, exchange, reduce, width),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(grad, dense);
}

TEST_P(RowsTest, StartAndWaitGiveTheBlockingResult) {
  auto [exchange, reduce, touch, width] = GetParam();
  std::vector<float> grad = gradient(touch, rank(), kRows, width);
  std::vector<float> started = grad;
  const auto count = static_cast<int64_t>(grad.size());
  ASSERT_EQ(commrt_sparse_allreduce(grad.data(), nullptr, count, 0.5,
                                    COMMRT_SELECT_ROWS, exchange, reduce,
                                    width),
            COMMRT_SUCCESS)
      << commrt_last_error();
  int64_t handle = 0;
  ASSERT_EQ(commrt_sparse_allreduce_start(started.data(), nullptr, count, 0.5,
                                          COMMRT_SELECT_ROWS, exchange, reduce,
                                          width, channels() - 1, &handle),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS) << commrt_last_error();
  EXPECT_EQ(started, grad);
}

INSTANTIATE_TEST_SUITE_P(Exchanges, RowsTest, allRowsCases(), rowsCaseName);

TEST(Rows, NoRankTouchesAnything) {
  for (commrt_exchange exchange :
       {COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_HASH}) {
    std::vector<float> grad(64, 0.0f);
    ASSERT_EQ(commrt_sparse_allreduce(grad.data(), nullptr, 64, 0.1,
                                      COMMRT_SELECT_ROWS, exchange, COMMRT_AVG,
                                      8),
              COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_EQ(grad, std::vector<float>(64, 0.0f));
  }
}

TEST(Rows, ANaNRowReachesEveryRank) {
  // As a dense allreduce carries a NaN, so does the rows exchange: a row
  // with a NaN counts as touched.
  for (commrt_exchange exchange :
       {COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_HASH}) {
    std::vector<float> grad(40, 0.0f);
    if (rank() == 0)
      grad[4 * 3 + 1] = NAN;
    ASSERT_EQ(commrt_sparse_allreduce(grad.data(), nullptr, 40, 0.1,
                                      COMMRT_SELECT_ROWS, exchange, COMMRT_SUM,
                                      4),
              COMMRT_SUCCESS)
        << commrt_last_error();
    EXPECT_TRUE(std::isnan(grad[13]));
    EXPECT_EQ(grad[12], 0.0f);
    EXPECT_EQ(grad[0], 0.0f);
  }
}

TEST(Rows, AGroupReducesAmongItsRanks) {
  if (size() < 2)
    GTEST_SKIP() << "needs two ranks";
  // Two groups: even and odd ranks.
  int32_t group = 0;
  ASSERT_EQ(commrt_group_split(/*id=*/7301, rank() % 2, rank(), &group),
            COMMRT_SUCCESS)
      << commrt_last_error();
  const int64_t rows = 50, width = 3;
  std::vector<float> grad = gradient(Touch::Colliding, rank(), rows, width);
  std::vector<float> expected(grad.size(), 0.0f);
  for (int r = rank() % 2; r < size(); r += 2) {
    std::vector<float> theirs = gradient(Touch::Colliding, r, rows, width);
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] += theirs[i];
  }
  ASSERT_EQ(commrt_group_sparse_allreduce(
                group, grad.data(), nullptr, rows * width, 0.2,
                COMMRT_SELECT_ROWS, COMMRT_EXCHANGE_HASH, COMMRT_SUM, width),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(grad, expected);
}

/// Rank `r`'s rows as a COO gradient would give them: the touched rows of
/// gradient(touch, r, ...), in a scrambled order, each split into two
/// pieces that add up to it (duplicate indices).
void cooRows(Touch touch, int r, int64_t rows, int64_t width,
             std::vector<int64_t> &indices, std::vector<float> &values) {
  std::vector<float> dense = gradient(touch, r, rows, width);
  for (int64_t k = 0; k < rows; ++k) {
    int64_t row = (k * 7 + r) % rows; // a permutation: 7 and rows coprime
    const float *from = dense.data() + row * width;
    if (std::all_of(from, from + width, [](float x) { return x == 0.0f; }))
      continue;
    for (int piece = 0; piece < 2; ++piece) {
      indices.push_back(row);
      for (int64_t j = 0; j < width; ++j)
        values.push_back(piece == 0 ? from[j] - 1.0f : 1.0f);
    }
  }
}

/// Checks that commrt_rows_allreduce of every rank's cooRows gives the
/// dense allreduce's rows that some rank touched, in index order.
void expectTheDenseAllreducesTouchedRows(commrt_exchange exchange,
                                         commrt_reduce reduce, Touch touch,
                                         int64_t width, int64_t rows) {
  std::vector<int64_t> indices;
  std::vector<float> values;
  cooRows(touch, rank(), rows, width, indices, values);
  std::vector<float> dense = gradient(touch, rank(), rows, width);
  ASSERT_EQ(commrt_allreduce(dense.data(), static_cast<int64_t>(dense.size()),
                             COMMRT_F32, reduce),
            COMMRT_SUCCESS);
  // The rows some rank touched, by the same rule on every rank.
  std::vector<int64_t> touched;
  for (int64_t row = 0; row < rows; ++row)
    for (int r = 0; r < size(); ++r) {
      std::vector<float> theirs = gradient(touch, r, rows, width);
      if (std::any_of(theirs.begin() + row * width,
                      theirs.begin() + (row + 1) * width,
                      [](float x) { return x != 0.0f; })) {
        touched.push_back(row);
        break;
      }
    }

  commrt_rows result{};
  ASSERT_EQ(commrt_rows_allreduce(0, indices.data(), values.data(),
                                  static_cast<int64_t>(indices.size()), rows,
                                  width, exchange, reduce, &result),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(result.count, static_cast<int64_t>(touched.size()));
  EXPECT_EQ(result.row_elements, width);
  for (int64_t i = 0; i < result.count; ++i) {
    ASSERT_EQ(result.indices[i], touched[i]) << "row " << i;
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(result.values[i * width + j], dense[touched[i] * width + j])
          << "row " << touched[i] << ", column " << j;
  }
  commrt_rows_free(&result);
  EXPECT_EQ(result.indices, nullptr);
  EXPECT_EQ(result.count, 0);
}

class RowsCooTest : public ::testing::TestWithParam<RowsCase> {};

TEST_P(RowsCooTest, GivesTheDenseAllreducesTouchedRows) {
  auto [exchange, reduce, touch, width] = GetParam();
  expectTheDenseAllreducesTouchedRows(exchange, reduce, touch, width,
                                      /*rows=*/300);
}

TEST(Rows, CallsShareNoRowsThroughTheKeptBuffers) {
  // The exchange keeps its buffers and index table from one call to the
  // next, whichever thread calls (the Python bridge runs each blocking
  // call on a thread of its own, as every other call here does): tables of
  // other sizes, other widths and fewer rows after many must start clean.
  const struct {
    commrt_exchange exchange;
    Touch touch;
    int64_t width, rows;
  } calls[] = {
      {COMMRT_EXCHANGE_HASH, Touch::All, 16, 300},
      {COMMRT_EXCHANGE_ALLGATHER, Touch::EmptyOnSomeRanks, 3, 64},
      {COMMRT_EXCHANGE_HASH, Touch::Colliding, 1, 1000},
      {COMMRT_EXCHANGE_ALLGATHER, Touch::All, 16, 300},
      {COMMRT_EXCHANGE_HASH, Touch::EmptyOnSomeRanks, 5, 40},
      {COMMRT_EXCHANGE_ALLGATHER, Touch::Colliding, 16, 300},
  };
  bool onAThreadOfItsOwn = false;
  for (const auto &call : calls) {
    SCOPED_TRACE(std::to_string(call.rows) + " rows of " +
                 std::to_string(call.width));
    auto check = [&] {
      expectTheDenseAllreducesTouchedRows(call.exchange, COMMRT_SUM, call.touch,
                                          call.width, call.rows);
    };
    if (onAThreadOfItsOwn)
      std::thread(check).join();
    else
      check();
    onAThreadOfItsOwn = !onAThreadOfItsOwn;
  }
}

INSTANTIATE_TEST_SUITE_P(Exchanges, RowsCooTest, allRowsCases(), rowsCaseName);

TEST(Rows, CooInAGroupAndOnNoRank) {
  if (size() < 2)
    GTEST_SKIP() << "needs two ranks";
  int32_t group = 0;
  ASSERT_EQ(commrt_group_split(/*id=*/7302, rank() % 2, rank(), &group),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // Each rank passes row rank() + 1 of ones: a group's sum has its ranks'
  // rows at 1.
  const int64_t row = rank() + 1;
  std::vector<float> ones(3, 1.0f);
  commrt_rows result{};
  ASSERT_EQ(commrt_rows_allreduce(group, &row, ones.data(), 1, 64, 3,
                                  COMMRT_EXCHANGE_HASH, COMMRT_SUM, &result),
            COMMRT_SUCCESS)
      << commrt_last_error();
  std::vector<int64_t> expected;
  for (int r = rank() % 2; r < size(); r += 2)
    expected.push_back(r + 1);
  EXPECT_EQ(std::vector<int64_t>(result.indices, result.indices + result.count),
            expected);
  commrt_rows_free(&result);
  // Nothing on any rank: an empty result.
  ASSERT_EQ(commrt_rows_allreduce(0, nullptr, nullptr, 0, 64, 3,
                                  COMMRT_EXCHANGE_ALLGATHER, COMMRT_AVG,
                                  &result),
            COMMRT_SUCCESS)
      << commrt_last_error();
  EXPECT_EQ(result.count, 0);
  EXPECT_EQ(result.indices, nullptr);
}

TEST(Rows, CooRejectsBadArguments) {
  ASSERT_EQ(commrt_set_consistency_checks(1), COMMRT_SUCCESS);
  const int64_t row = 70;
  float value = 1.0f;
  commrt_rows result{};
  EXPECT_TRUE(failedWith(
      commrt_rows_allreduce(0, &row, &value, 1, 64, 1, COMMRT_EXCHANGE_HASH,
                            COMMRT_SUM, &result),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_rows_allreduce: indices[0] = 70 is not a row of the 64"));
  EXPECT_TRUE(failedWith(
      commrt_rows_allreduce(0, &row, &value, 1, 100, 1, COMMRT_EXCHANGE_CHUNK,
                            COMMRT_SUM, &result),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_rows_allreduce: exchange 2 is not COMMRT_EXCHANGE_ALLGATHER (0) "
      "or COMMRT_EXCHANGE_HASH (1)"));
  EXPECT_TRUE(failedWith(
      commrt_rows_allreduce(0, &row, &value, 1, 100, 0, COMMRT_EXCHANGE_HASH,
                            COMMRT_SUM, &result),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_rows_allreduce: row_elements 0 is not positive"));
  EXPECT_TRUE(failedWith(
      commrt_rows_allreduce(0, nullptr, &value, 1, 100, 1, COMMRT_EXCHANGE_HASH,
                            COMMRT_SUM, &result),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_rows_allreduce: indices is null but count is 1"));
  EXPECT_TRUE(failedWith(
      commrt_rows_allreduce(0, &row, &value, 1, 100, 1, COMMRT_EXCHANGE_HASH,
                            COMMRT_SUM, nullptr),
      COMMRT_ERROR_INVALID_ARGUMENT, "commrt_rows_allreduce: result is null"));
  // One rank's bad index fails every rank.
  const int64_t mine = rank() == 0 ? -1 : 1;
  EXPECT_EQ(commrt_rows_allreduce(0, &mine, &value, 1, 100, 1,
                                  COMMRT_EXCHANGE_HASH, COMMRT_SUM, &result),
            COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(result.count, 0);
  commrt_set_consistency_checks(0);
}

TEST(Rows, RejectsRowsThatDoNotDivideTheCount) {
  ASSERT_EQ(commrt_set_consistency_checks(1), COMMRT_SUCCESS);
  std::vector<float> grad(10, 1.0f);
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce(grad.data(), nullptr, 10, 0.5, COMMRT_SELECT_ROWS,
                              COMMRT_EXCHANGE_HASH, COMMRT_SUM, 4),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_sparse_allreduce: count 10 is not a whole number of rows of "
      "chunk_elements (4)"));
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce(grad.data(), nullptr, 10, 0.5, COMMRT_SELECT_ROWS,
                              COMMRT_EXCHANGE_HASH, COMMRT_SUM, 0),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_sparse_allreduce: chunk_elements 0 is not positive"));
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce(grad.data(), nullptr, 10, 0.5, COMMRT_SELECT_ROWS,
                              COMMRT_EXCHANGE_CHUNK, COMMRT_SUM, 5),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_sparse_allreduce: select 3 does not go with exchange 2: chunk "
      "selection (2) goes with the chunk exchange (2) and only with it"));
  // A lossy selection still needs its residual.
  EXPECT_TRUE(failedWith(
      commrt_sparse_allreduce(grad.data(), nullptr, 10, 0.5, COMMRT_SELECT_TOPK,
                              COMMRT_EXCHANGE_HASH, COMMRT_SUM, 0),
      COMMRT_ERROR_INVALID_ARGUMENT,
      "commrt_sparse_allreduce: residual is null but count is 10"));
  commrt_set_consistency_checks(0);
}

} // namespace
