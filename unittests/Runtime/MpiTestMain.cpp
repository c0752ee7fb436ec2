//===- MpiTestMain.cpp - GoogleTest main for tests run under mpirun -------===//
//
// Every rank runs every test. Rank 0 prints GoogleTest's usual output; the
// other ranks print only their failures, prefixed with their rank. The exit
// code is non-zero on every rank when a test failed on any rank.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

/// Prints failed assertions of a rank other than 0.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank(rank) {}

  void OnTestStart(const ::testing::TestInfo &test) override {
    current = &test;
  }

  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (!result.failed())
      return;
    // Not UnitTest::current_test_info(): GoogleTest holds the lock it takes
    // while it reports a result, so calling it here would deadlock.
    std::fprintf(stderr, "[rank %d] %s.%s: %s:%d: Failure\n%s\n", rank,
                 current ? current->test_suite_name() : "",
                 current ? current->name() : "",
                 result.file_name() ? result.file_name() : "unknown",
                 result.line_number(), result.message());
  }

private:
  int rank;
  const ::testing::TestInfo *current = nullptr;
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // These tests are of the MPI backend, also where a GPU would make AUTO
  // pick NCCL.
  if (commrt_init_backend(COMMRT_BACKEND_MPI) != COMMRT_SUCCESS) {
    std::fprintf(stderr, "%s\n", commrt_last_error());
    return 1;
  }
  int rank = commrt_rank();
  if (rank != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed && rank == 0)
    std::fprintf(stderr, "FAILED: a test failed on at least one rank\n");
  if (commrt_finalize() != COMMRT_SUCCESS) {
    std::fprintf(stderr, "[rank %d] %s\n", rank, commrt_last_error());
    return 1;
  }
  return failed;
}
