//===- MpiStagedRingTest.cpp - The staged ring on a fake device queue -----===//
//
// The ring that the MPI backend runs over device memory (StagedRing.h),
// driven by a queue whose "device memory" is host memory and whose copies
// take time on a thread of their own, as a GPU's copy engine does. Run
// under mpirun by the commrt-mpi-tests entries. It checks that the results
// are those of MPI_Allreduce in every type and reduction, that no piece is
// sent before its copy to the host has finished, and that the copy of a
// piece to the host runs while the piece before it travels.
//
//===----------------------------------------------------------------------===//

#include "FakeDeviceQueue.h"
#include "MpiTestUtils.h"
#include "ReduceElements.h"
#include "RingAllreduce.h"
#include "RuntimeTestUtils.h"
#include "StagedRing.h"
#include "WireFormat.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace commrt::testing;
using commrt::StagedEvent;

namespace {

/// Host staging from malloc, its buffers in the order they were made.
struct RecordedStaging {
  std::vector<void *> made;
  commrt::StagingBuffers buffers{[this](size_t bytes) {
                                   void *buffer = std::malloc(bytes);
                                   made.push_back(buffer);
                                   return buffer;
                                 },
                                 [](void *buffer) { std::free(buffer); }};
};

using StagedCase = std::tuple<commrt_dtype, commrt_reduce, int64_t>;

class StagedRingTest : public ::testing::TestWithParam<StagedCase> {};

TEST_P(StagedRingTest, MatchesMpiAllreduceExactly) {
  auto [dtype, reduce, count] = GetParam();
  const size_t width = commrt::elementSize(dtype);
  GuardedContributions buffer(dtype, count, rank());
  std::vector<unsigned char> scratch(commrt::shardElements(count, size()) *
                                     width);
  RecordedStaging staging;
  {
    FakeDeviceQueue queue(dtype, reduce, /*usPerKiB=*/1, Clock::now());
    // Pieces of 256 bytes: most segments travel in several.
    ASSERT_EQ(commrt::stagedRingAllreduce(
                  buffer.data(), count, commrt::mpiTypeOf(dtype, MPI_UINT16_T),
                  width, queue, scratch.data(), staging.buffers, MPI_COMM_WORLD,
                  /*pieceBytes=*/256),
              COMMRT_SUCCESS)
        << commrt_last_error();
  }
  // AVG sums on the ring; the division follows it, elsewhere.
  TypedBuffer rounded(dtype, 1);
  for (int64_t i = 0; i < count; ++i) {
    rounded.set(0, expectedReduction(reduce == COMMRT_AVG ? COMMRT_SUM : reduce,
                                     i, size()));
    ASSERT_EQ(buffer.get(i), rounded.get(0)) << "index " << i;
  }
  buffer.expectGuardsIntact();
  EXPECT_TRUE(sameOnAllRanks(buffer.data(), count * width));
}

INSTANTIATE_TEST_SUITE_P(
    TypesReductionsAndSizes, StagedRingTest,
    ::testing::Combine(
        ::testing::Values(COMMRT_F32, COMMRT_F64, COMMRT_F16, COMMRT_BF16),
        ::testing::Values(COMMRT_SUM, COMMRT_AVG, COMMRT_MAX, COMMRT_MIN),
        ::testing::Values(1, 3, 7, 1001, 65537)),
    [](const ::testing::TestParamInfo<StagedCase> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) + "_" +
             reduceName(std::get<1>(info.param)) + "_" +
             std::to_string(std::get<2>(info.param));
    });

/// An event of the ring as the observer heard it, with its time.
struct Heard {
  StagedEvent kind;
  int step;
  int64_t piece;
  double atUs;
};

/// The sends the ring has posted, for a queue that holds a copy open until
/// the send it should overlap has been posted.
class PostedSends {
public:
  void post(int step, int64_t piece) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      posted.insert({step, piece});
    }
    changed.notify_all();
  }
  /// Waits until piece `piece` of step `step` has been sent; false after
  /// `seconds` without.
  bool await(int step, int64_t piece, double seconds) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
      return posted.count({step, piece}) != 0;
    });
  }

private:
  std::mutex mutex;
  std::condition_variable changed;
  std::set<std::pair<int, int64_t>> posted;
};

TEST(StagedRingOrder, SendsAfterTheCopyOutAndOverlapsTheNextCopy) {
  // 8 pieces of 16 KiB per segment. The copy to the host of piece k of a
  // step ends only once piece k - 1 of that step has been sent: a ring that
  // waited for later copies before it sent a piece would stall here for the
  // 10 s the queue waits, and the test names the pieces.
  constexpr int64_t kPieces = 8, kPieceBytes = 16 << 10;
  constexpr double kPatienceSeconds = 10;
  const int64_t count = kPieces * kPieceBytes / 4 * size();
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(contribution(rank(), i));
  std::vector<unsigned char> scratch(commrt::shardElements(count, size()) * 4);
  RecordedStaging staging;
  const Clock::time_point origin = Clock::now();
  std::vector<Heard> heard;
  PostedSends sends;
  std::vector<std::string> stalled;
  std::vector<FakeDeviceQueue::Ran> copies;
  {
    // Copy outs run in step order, kPieces a step (the all-gather's later
    // steps forward from host memory).
    FakeDeviceQueue queue(
        COMMRT_F32, COMMRT_SUM, /*usPerKiB=*/20, origin, [&](size_t copyOut) {
          const int step = static_cast<int>(copyOut / kPieces);
          const int64_t piece = static_cast<int64_t>(copyOut % kPieces);
          if (piece > 0 && !sends.await(step, piece - 1, kPatienceSeconds))
            stalled.push_back("step " + std::to_string(step) + " piece " +
                              std::to_string(piece));
        });
    ASSERT_EQ(
        commrt::stagedRingAllreduce(
            data.data(), count, MPI_FLOAT, 4, queue, scratch.data(),
            staging.buffers, MPI_COMM_WORLD, kPieceBytes,
            [&](StagedEvent kind, int step, int64_t piece) {
              heard.push_back({kind, step, piece, microsecondsSince(origin)});
              if (kind == StagedEvent::SendPosted)
                sends.post(step, piece);
            }),
        COMMRT_SUCCESS)
        << commrt_last_error();
    copies = queue.copies();
  }
  for (int64_t i = 0; i < count; ++i)
    ASSERT_EQ(data[i], expectedReduction(COMMRT_SUM, i, size())) << i;
  // Overlap: every copy out of a piece after the first of its step ran
  // while the piece before it was on its way.
  EXPECT_TRUE(stalled.empty())
      << "copies to the host that ended only after waiting " << kPatienceSeconds
      << " s for the previous piece's send, the first: " << stalled.front();
  ASSERT_EQ(staging.made.size(), 3u);
  const auto *sendBuffer = static_cast<const unsigned char *>(staging.made[0]);

  // The copies to the host, in the order they ran: the send buffer's pieces,
  // the reduce-scatter's steps and the all-gather's first: p steps.
  std::vector<FakeDeviceQueue::Ran> copiesOut;
  for (const FakeDeviceQueue::Ran &ran : copies)
    if (ran.kind == FakeDeviceQueue::Kind::ToHost)
      copiesOut.push_back(ran);
  ASSERT_EQ(copiesOut.size(), static_cast<size_t>(kPieces * size()));

  // Every send from the send buffer was posted after its piece's copy out
  // had ended.
  size_t sendsFromDevice = 0;
  for (const Heard &event : heard) {
    if (event.kind != StagedEvent::SendPosted || event.step > size() - 1)
      continue;
    const FakeDeviceQueue::Ran &out =
        copiesOut[static_cast<size_t>(event.step * kPieces + event.piece)];
    EXPECT_EQ(out.host, sendBuffer + event.piece * kPieceBytes);
    EXPECT_LE(out.endUs, event.atUs)
        << "step " << event.step << " piece " << event.piece
        << " was sent before its copy to the host ended";
    ++sendsFromDevice;
  }
  EXPECT_EQ(sendsFromDevice, static_cast<size_t>(kPieces * size()));
}

} // namespace
