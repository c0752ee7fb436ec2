//===- MpiRingTest.cpp - The ring allreduce agrees with MPI_Allreduce -----===//
//
// Run under mpirun by every commrt-mpi-tests entry: with the default
// COMMRT_ALLREDUCE, these sizes mostly go to MPI_Allreduce; the
// commrt-mpi-ring-np* entries force the ring for every size. Either way the
// results must be exact, equal to MPI_Allreduce's own, and identical on all
// ranks, also for sizes that are not a multiple of the number of ranks or
// smaller than it, in every type.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtils.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace commrt::testing;

namespace {

/// The sizes tried: fewer elements than ranks, odd ones, and one of several
/// MiB.
const int64_t kCounts[] = {1, 2, 3, 5, 7, 1001, 65537, 1000003};

using RingCase = std::tuple<commrt_dtype, commrt_reduce, int64_t>;

class RingTest : public ::testing::TestWithParam<RingCase> {};

TEST_P(RingTest, MatchesMpiAllreduceExactly) {
  auto [dtype, reduce, count] = GetParam();
  GuardedContributions buffer(dtype, count, rank());
  ASSERT_EQ(commrt_allreduce(buffer.data(), count, dtype, reduce),
            COMMRT_SUCCESS)
      << commrt_last_error();

  // The reference: MPI_Allreduce of the same contributions in double, which
  // holds these small integers exactly.
  std::vector<double> reference(count);
  for (int64_t i = 0; i < count; ++i)
    reference[i] = contribution(rank(), i);
  static const MPI_Op ops[] = {MPI_SUM, MPI_SUM, MPI_MAX, MPI_MIN};
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, reference.data(),
                          static_cast<int>(count), MPI_DOUBLE, ops[reduce],
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  // Through the element type, as commrt stores it.
  TypedBuffer rounded(dtype, 1);
  for (int64_t i = 0; i < count; ++i) {
    rounded.set(0, reduce == COMMRT_AVG ? reference[i] / size() : reference[i]);
    ASSERT_EQ(buffer.get(i), rounded.get(0)) << "index " << i;
  }
  buffer.expectGuardsIntact();
  EXPECT_TRUE(
      sameOnAllRanks(buffer.data(), count * commrt::elementSize(dtype)));
}

INSTANTIATE_TEST_SUITE_P(
    OddSizes, RingTest,
    ::testing::Combine(
        ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
        ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN),
        ::testing::ValuesIn(kCounts)),
    [](const ::testing::TestParamInfo<RingCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param)) + "_" +
             std::to_string(std::get<2>(info.param));
    });

TEST(Ring, InexactSumsAreIdenticalOnAllRanks) {
  // Sums that round differently in different orders: every rank must still
  // hold the same bits, close to MPI_Allreduce's.
  const int64_t count = 300007;
  std::vector<float> data(count), reference(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = reference[i] = 1.0f / static_cast<float>(i + 3 + 7 * rank());
  ASSERT_EQ(commrt_allreduce(data.data(), count, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS)
      << commrt_last_error();
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, reference.data(),
                          static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  for (int64_t i = 0; i < count; ++i)
    ASSERT_NEAR(data[i], reference[i], 1e-6f * reference[i]) << "index " << i;
  EXPECT_TRUE(sameOnAllRanks(data.data(), count * sizeof(float)));
}

TEST(Ring, FusedOddBuffersAreExact) {
  // A fused plan packs buffers of odd sizes into one, reduced by the ring
  // under COMMRT_ALLREDUCE=ring.
  const int64_t counts[] = {1, 3, 1000, 7};
  std::vector<std::vector<double>> buffers;
  std::vector<void *> pointers;
  for (int64_t count : counts) {
    buffers.emplace_back(count);
    for (int64_t i = 0; i < count; ++i)
      buffers.back()[i] = contribution(rank(), i);
    pointers.push_back(buffers.back().data());
  }
  ASSERT_EQ(commrt_fused_allreduce(pointers.data(), counts, 4, COMMRT_F64,
                                   COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  for (size_t b = 0; b < buffers.size(); ++b)
    for (int64_t i = 0; i < counts[b]; ++i)
      ASSERT_EQ(buffers[b][i],
                commrt::testing::expectedReduction(COMMRT_SUM, i, size()))
          << "buffer " << b << " index " << i;
}

/// Runs a fused f32 allreduce of buffers of `counts` and checks every
/// element exactly, the guards around each buffer, and that all ranks agree.
void checkFusedF32(const std::vector<int64_t> &counts, commrt_reduce reduce) {
  std::vector<std::vector<float>> buffers;
  std::vector<void *> pointers;
  for (int64_t count : counts) {
    buffers.emplace_back(count + 2);
    buffers.back().front() = 42.0f;
    buffers.back().back() = 43.0f;
    for (int64_t i = 0; i < count; ++i)
      buffers.back()[i + 1] = static_cast<float>(contribution(rank(), i));
    pointers.push_back(buffers.back().data() + 1);
  }
  ASSERT_EQ(commrt_fused_allreduce(pointers.data(), counts.data(),
                                   static_cast<int64_t>(counts.size()),
                                   COMMRT_F32, reduce, COMMRT_WIRE_NONE, 1.0f),
            COMMRT_SUCCESS)
      << commrt_last_error();
  // Count mismatches rather than stop at the first: every rank must reach
  // the collective check below, or the others would wait for it.
  for (size_t b = 0; b < buffers.size(); ++b) {
    EXPECT_EQ(buffers[b].front(), 42.0f) << "buffer " << b;
    EXPECT_EQ(buffers[b].back(), 43.0f) << "buffer " << b;
    int64_t mismatches = 0, first = -1;
    for (int64_t i = 0; i < counts[b]; ++i)
      if (buffers[b][i + 1] !=
              static_cast<float>(
                  commrt::testing::expectedReduction(reduce, i, size())) &&
          mismatches++ == 0)
        first = i;
    EXPECT_EQ(mismatches, 0) << "buffer " << b << ", first at index " << first;
    EXPECT_TRUE(
        sameOnAllRanks(buffers[b].data(), buffers[b].size() * sizeof(float)));
  }
}

TEST(Ring, FusedBuffersAcrossSegmentsAndPieces) {
  // The ring reduces a fused f32 plan in the buffers themselves: segments
  // and 1 MiB pieces start and end inside buffers and span several.
  checkFusedF32({1, 300000, 5, 262144, 131071, 700001, 1, 2}, COMMRT_SUM);
  checkFusedF32({1, 300000, 5, 262144, 131071, 700001, 1, 2}, COMMRT_AVG);
  checkFusedF32({2000003}, COMMRT_MAX);
}

TEST(Ring, FusedManySmallBuffers) {
  // One message gathers hundreds of buffers (an hindexed datatype).
  std::vector<int64_t> counts;
  for (int i = 0; i < 700; ++i)
    counts.push_back(1 + (i * 37) % 301);
  checkFusedF32(counts, COMMRT_SUM);
  checkFusedF32(counts, COMMRT_MIN);
}

} // namespace
