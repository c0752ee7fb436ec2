//===- MpiWait.cpp - Waiting for MPI requests without holding a core ------===//

#include "MpiWait.h"
#include "Backend.h"
#include "Validation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

using namespace commrt;

namespace {

using Clock = std::chrono::steady_clock;

/// Reads the environment variable `name`, when set, as a number of
/// microseconds >= 0 into `us`.
commrt_status microsecondsFromEnvironment(const char *name, double &us) {
  return nonNegativeFromEnvironment(name, us,
                                    "a number of microseconds (0 or more)");
}

/// Reads the policy from the environment.
commrt_status policyFromEnvironment(WaitPolicy &policy) {
  if (const char *mode = std::getenv("COMMRT_WAIT")) {
    if (std::strcmp(mode, "poll") == 0)
      policy.mode = WaitPolicy::Mode::Poll;
    else if (std::strcmp(mode, "sleep") == 0)
      policy.mode = WaitPolicy::Mode::Sleep;
    else if (std::strcmp(mode, "auto") != 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_WAIT=", mode,
                  " is not one of auto, sleep, poll");
  }
  COMMRT_TRY(microsecondsFromEnvironment("COMMRT_WAIT_SPIN_US", policy.spinUs));
  return microsecondsFromEnvironment("COMMRT_WAIT_SLEEP_US", policy.maxSleepUs);
}

/// Sets the calling thread's timer slack to `nanoseconds` for its lifetime
/// and restores it after: Linux lets a sleep overrun by the slack, 50 us by
/// default, which would make every short sleep a long one.
class TimerSlack {
public:
  explicit TimerSlack(unsigned long nanoseconds) {
#if defined(__linux__)
    int previous = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (previous >= 0 && prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0) == 0)
      saved = static_cast<unsigned long>(previous);
#else
    (void)nanoseconds;
#endif
  }
  ~TimerSlack() {
#if defined(__linux__)
    if (saved)
      prctl(PR_SET_TIMERSLACK, saved, 0, 0, 0);
#endif
  }
  TimerSlack(const TimerSlack &) = delete;
  TimerSlack &operator=(const TimerSlack &) = delete;

private:
  unsigned long saved = 0;
};

/// The first sleep between tests, in microseconds.
constexpr double kFirstSleepUs = 10;

/// The longest sleep after short waits, in microseconds: small collectives'
/// chains lose up to a sleep per message.
constexpr double kShortWaitSleepUs = 100;

/// The thread's recent waits: moving averages of their lengths in
/// microseconds, each new wait weighing a quarter, for waits whose bytes
/// their callers knew (a ring's pieces) and for the others (MPI's own
/// nonblocking collectives), apart: a sparse allreduce's short chains after
/// a dense ring's long waits spin as short waits do. A channel's thread runs
/// one collective at a time, so these follow that collective's messages.
thread_local double recentWaitUs[2] = {0, 0};

/// The thread's recent waits whose callers said how many bytes they await
/// (a ring's pieces): a moving average of their microseconds per byte (0:
/// none yet). A wait counts as at most twice the average: the first piece
/// of a collective also waits for the slowest rank to arrive, which says
/// nothing about the link, and would make the next pieces oversleep.
thread_local double recentUsPerByte = 0;

/// How the next wait spins and sleeps, after waits of `recentUs` on average:
/// the tight loop only where waits were shorter than twice it, sleeps up to
/// a tenth of the recent waits' length (at least kShortWaitSleepUs, at most
/// the policy's longest). A wait whose bytes are unknown (`knowsBytes`
/// false) sleeps kShortWaitSleepUs at most: those are MPI's own nonblocking
/// collectives and a ring's sends, whose rounds and socket writes move on
/// only while the rank tests (per-tensor allreduces over a 1 Gbit/s link
/// took 1.2x as long with longer sleeps).
struct WaitShape {
  double spinUs;
  double maxSleepUs;
};
WaitShape shapeWait(const WaitPolicy &policy, double recentUs,
                    bool knowsBytes) {
  WaitShape shape;
  shape.spinUs = recentUs > 2 * policy.spinUs ? 0 : policy.spinUs;
  shape.maxSleepUs = std::min(
      policy.maxSleepUs, knowsBytes ? std::max(kShortWaitSleepUs, recentUs / 10)
                                    : kShortWaitSleepUs);
  return shape;
}

/// The values recordTransport attaches to a communicator: their addresses.
const int kSharedMemory = 0, kNetwork = 1;

/// The keyval of the transport attribute, made at the first use; dups copy
/// the attribute.
int transportKeyval() {
  static int keyval = MPI_KEYVAL_INVALID;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval,
                           nullptr);
  });
  return keyval;
}

/// Whether waits on `comm` sleep between tests: as COMMRT_WAIT says, and
/// under Auto where `comm` is recorded as crossing the network.
bool sleepsOn(MPI_Comm comm, const WaitPolicy &policy) {
  if (policy.mode != WaitPolicy::Mode::Auto)
    return policy.mode == WaitPolicy::Mode::Sleep;
  void *value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, transportKeyval(), &value, &found);
  return found && value == &kNetwork;
}

} // namespace

commrt_status commrt::waitPolicy(const WaitPolicy *&policy) {
  static WaitPolicy read;
  static commrt_status status = COMMRT_SUCCESS;
  static std::string message;
  static std::once_flag once;
  std::call_once(once, [] {
    status = policyFromEnvironment(read);
    if (status != COMMRT_SUCCESS)
      message = commrt_last_error();
  });
  if (status != COMMRT_SUCCESS)
    return setLastError(status, message);
  policy = &read;
  return COMMRT_SUCCESS;
}

commrt_status commrt::findNodeRanks(MPI_Comm comm, int &localRank,
                                    int &localSize) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node;
  if (int error = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                      MPI_INFO_NULL, &node))
    return failMpi("MPI_Comm_split_type (node)", error);
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_size(node, &localSize);
  MPI_Comm_free(&node);
  return COMMRT_SUCCESS;
}

commrt_status commrt::recordTransport(MPI_Comm comm) {
  int size, localRank, localSize;
  MPI_Comm_size(comm, &size);
  COMMRT_TRY(findNodeRanks(comm, localRank, localSize));
  const int *transport = localSize == size ? &kSharedMemory : &kNetwork;
  if (int error = MPI_Comm_set_attr(comm, transportKeyval(),
                                    const_cast<int *>(transport)))
    return failMpi("MPI_Comm_set_attr (transport)", error);
  return COMMRT_SUCCESS;
}

double commrt::expectedFirstSleepUs(int64_t bytes, double usPerByte,
                                    double shortestUs) {
  double expectedUs = static_cast<double>(bytes) * usPerByte;
  return expectedUs > shortestUs ? 0.75 * expectedUs : 0;
}

commrt_status commrt::waitAll(MPI_Comm comm, int count, MPI_Request *requests,
                              const char *call, int64_t bytes) {
  const WaitPolicy *policy;
  COMMRT_TRY(waitPolicy(policy));
  if (!sleepsOn(comm, *policy)) {
    if (int error = MPI_Waitall(count, requests, MPI_STATUSES_IGNORE))
      return failMpi(call, error);
    return COMMRT_SUCCESS;
  }
  auto test = [&](bool &done) -> commrt_status {
    int flag = 0;
    if (int error = MPI_Testall(count, requests, &flag, MPI_STATUSES_IGNORE))
      return failMpi(call, error);
    done = flag != 0;
    return COMMRT_SUCCESS;
  };
  const Clock::time_point start = Clock::now();
  double &recentUs = recentWaitUs[bytes > 0 ? 1 : 0];
  const WaitShape shape = shapeWait(*policy, recentUs, bytes > 0);
  auto finished = [&] {
    std::chrono::duration<double, std::micro> waited = Clock::now() - start;
    recentUs = 0.75 * recentUs + 0.25 * waited.count();
    if (bytes > 0) {
      double usPerByte = waited.count() / static_cast<double>(bytes);
      recentUsPerByte =
          recentUsPerByte == 0
              ? usPerByte
              : 0.75 * recentUsPerByte +
                    0.25 * std::min(usPerByte, 2 * recentUsPerByte);
    }
    return COMMRT_SUCCESS;
  };
  bool done = false;
  const Clock::time_point spinEnd =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double, std::micro>(shape.spinUs));
  do {
    COMMRT_TRY(test(done));
    if (done)
      return finished();
  } while (Clock::now() < spinEnd);

  // Sleeps that double up to the longest: each test costs a pass of
  // OpenMPI's progress engine and a wake-up, and a wait that ends overruns
  // by one sleep at most.
  TimerSlack slack(/*nanoseconds=*/1000);
  double sleepUs = std::min(kFirstSleepUs, shape.maxSleepUs);
  if (double firstUs = bytes > 0 ? expectedFirstSleepUs(bytes, recentUsPerByte,
                                                        shape.maxSleepUs)
                                 : 0) {
    // Most of the expected time at once; the rest in sleeps from a
    // sixteenth of the first, which overrun the end by as much at most.
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::micro>(firstUs));
    COMMRT_TRY(test(done));
    if (done)
      return finished();
    sleepUs = std::min(std::max(kFirstSleepUs, firstUs / 16), shape.maxSleepUs);
  }
  while (true) {
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::micro>(sleepUs));
    COMMRT_TRY(test(done));
    if (done)
      return finished();
    sleepUs = std::min(2 * sleepUs, shape.maxSleepUs);
  }
}
