//===- Watchdog.cpp - Bounded waits, and ranks that end early -------------===//

#include "Watchdog.h"
#include "Backend.h"
#include "Validation.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace commrt;

namespace {

using Clock = std::chrono::steady_clock;

/// How often the watchdog's thread looks at the calls in progress and at
/// the end notices that arrived: the delay between a notice and the abort.
constexpr std::chrono::milliseconds kPollInterval{50};

/// The default of COMMRT_TIMEOUT_S: PyTorch's default for NCCL process
/// groups. A first collective may wait for a rank that prepares data or
/// compiles for minutes.
constexpr double kDefaultTimeoutSeconds = 600.0;

/// A call into the runtime in progress.
struct Call {
  bool active = false;
  std::thread::id thread;
  const char *name = "";
  Clock::time_point since;
  /// The collective it waits on, numbered from 1; 0 for none.
  int64_t collective = 0;
  /// Whether it waits for the other ranks to end (COMMRT_EXIT_TIMEOUT_S).
  bool waitsForEnd = false;
};

/// The watchdog's state, shared by the calling threads and its own.
struct State {
  std::mutex mutex;
  std::condition_variable wake;
  /// Slots of calls; a finished call's slot is reused.
  std::vector<Call> calls;
  bool shuttingDown = false;
  /// The collectives this rank has begun.
  int64_t collectives = 0;

  /// The rank of the earliest end notice received (-1: none yet), and the
  /// number of collectives that rank ran.
  int endedRank = -1;
  int64_t endedAfter = 0;
  /// The ranks whose end notice arrived, and how many did.
  std::vector<char> heard;
  int heardCount = 0;

  double timeoutSeconds = kDefaultTimeoutSeconds;
  /// 0: the end waits for the other ranks as long as they take.
  double exitTimeoutSeconds = 0.0;
  bool started = false;
  bool endNotices = false;
  /// Whether the watchdog's thread receives end notices; the shutdown takes
  /// them over.
  bool threadReceives = false;
  bool stop = false;
  std::thread thread;
  int rank = -1;
  int size = 1;
};

/// Never destroyed: the exit-time shutdown runs after static destructors may
/// have.
State &state() {
  static State &instance = *new State;
  return instance;
}

/// Reads the environment variable `name` as a number of seconds >= 0 into
/// `seconds` when it is set.
commrt_status secondsFromEnvironment(const char *name, double &seconds) {
  return nonNegativeFromEnvironment(
      name, seconds, "a number of seconds (0 or more; 0 waits for ever)");
}

/// Prints `message` as this rank's reason and ends the whole job with
/// `status` as its exit code.
[[noreturn]] void abortJob(int rank, commrt_status status,
                           const std::string &message) {
  std::fprintf(stderr, "commrt: rank %d: %s: %s; aborting the job\n", rank,
               commrt_status_string(status), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

/// Records that `rank` ended its runtime after `collectives` collectives.
/// The caller holds the mutex.
void recordEndNotice(State &s, int rank, int64_t collectives) {
  if (rank < 0 || rank >= s.size || s.heard[rank])
    return;
  s.heard[rank] = 1;
  ++s.heardCount;
  if (s.endedRank < 0 || collectives < s.endedAfter) {
    s.endedRank = rank;
    s.endedAfter = collectives;
  }
}

/// Receives the end notices that have arrived. The caller holds the mutex.
void receiveEndNotices(State &s) {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kEndNoticeTag, MPI_COMM_WORLD, &arrived,
                   &status) != MPI_SUCCESS ||
        !arrived)
      return;
    int64_t collectives = 0;
    MPI_Recv(&collectives, 1, MPI_INT64_T, status.MPI_SOURCE, kEndNoticeTag,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    recordEndNotice(s, status.MPI_SOURCE, collectives);
  }
}

/// Whether the call `call` can never complete: if so, sets `why` and returns
/// the failure (PEER_ENDED or TIMED_OUT).
commrt_status whyStuck(const State &s, const Call &call, Clock::time_point now,
                       std::string &why) {
  if (s.endedRank >= 0 && call.collective > s.endedAfter) {
    why = std::string(call.name) + " cannot complete: rank " +
          std::to_string(s.endedRank) +
          " ended its runtime (commrt_finalize, exit() or the end of main) "
          "after " +
          std::to_string(s.endedAfter) +
          " collectives, and this rank waits in collective " +
          std::to_string(call.collective);
    return COMMRT_ERROR_PEER_ENDED;
  }
  double timeout = call.waitsForEnd ? s.exitTimeoutSeconds : s.timeoutSeconds;
  if (timeout <= 0.0 ||
      std::chrono::duration<double>(now - call.since).count() <= timeout)
    return COMMRT_SUCCESS;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout);
  if (call.waitsForEnd)
    why = std::string(call.name) + ": the other ranks did not end within " +
          seconds + " s (COMMRT_EXIT_TIMEOUT_S)";
  else
    why = std::string(call.name) + " did not complete within " + seconds +
          " s (COMMRT_TIMEOUT_S): another rank has died or hangs, or the "
          "ranks run different collectives";
  return COMMRT_ERROR_TIMED_OUT;
}

/// The watchdog's thread.
void watch() {
  State &s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stop) {
    s.wake.wait_for(lock, kPollInterval);
    if (s.stop)
      break;
    if (s.threadReceives)
      receiveEndNotices(s);
    Clock::time_point now = Clock::now();
    for (const Call &call : s.calls) {
      std::string why;
      if (call.active)
        if (commrt_status status = whyStuck(s, call, now, why))
          abortJob(s.rank, status, why);
    }
  }
}

/// Stops the watchdog's thread unless the caller is that thread.
void stopThread() {
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = true;
    s.threadReceives = false;
  }
  s.wake.notify_all();
  if (s.thread.joinable() && s.thread.get_id() != std::this_thread::get_id())
    s.thread.join();
}

} // namespace

CallGuard::CallGuard(const char *call) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  shuttingDown = s.shuttingDown;
  slot = 0;
  while (slot < static_cast<int>(s.calls.size()) && s.calls[slot].active)
    ++slot;
  if (slot == static_cast<int>(s.calls.size()))
    s.calls.emplace_back();
  Call &entry = s.calls[slot];
  entry.active = true;
  entry.thread = std::this_thread::get_id();
  entry.name = call;
  entry.since = Clock::now();
  entry.collective = 0;
  entry.waitsForEnd = false;
}

CallGuard::~CallGuard() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls[slot].active = false;
}

commrt_status CallGuard::admitted() const {
  if (shuttingDown)
    return fail(COMMRT_ERROR_NOT_INITIALIZED,
                "the runtime is being finalised (commrt_finalize or the end "
                "of the process) on another thread");
  return COMMRT_SUCCESS;
}

commrt_status CallGuard::beginCollective(int64_t &number) {
  State &s = state();
  int endedRank;
  int64_t endedAfter;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    number = ++s.collectives;
    s.calls[slot].collective = number;
    endedRank = s.endedRank;
    endedAfter = s.endedAfter;
  }
  if (endedRank >= 0 && number > endedAfter)
    return fail(COMMRT_ERROR_PEER_ENDED, "rank ", endedRank,
                " ended its runtime (commrt_finalize, exit() or the end of "
                "main) after ",
                endedAfter, " collectives; this would be collective ", number,
                ", which it will never join");
  return COMMRT_SUCCESS;
}

void CallGuard::waitOn(int64_t number) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls[slot].collective = number;
}

void CallGuard::waitForEnd() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls[slot].collective = 0;
  s.calls[slot].waitsForEnd = true;
  s.calls[slot].since = Clock::now();
}

commrt_status commrt::startWatchdog(bool endNotices) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.started)
    return COMMRT_SUCCESS;
  double timeout = s.timeoutSeconds, exitTimeout = s.exitTimeoutSeconds;
  COMMRT_TRY(secondsFromEnvironment("COMMRT_TIMEOUT_S", timeout));
  COMMRT_TRY(secondsFromEnvironment("COMMRT_EXIT_TIMEOUT_S", exitTimeout));
  s.timeoutSeconds = timeout;
  s.exitTimeoutSeconds = exitTimeout;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  s.heard.assign(s.size, 0);
  s.endNotices = endNotices && s.size > 1;
  s.threadReceives = s.endNotices;
  s.started = true;
  s.thread = std::thread(watch);
  return COMMRT_SUCCESS;
}

void commrt::beginShutdown() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.shuttingDown = true;
  for (const Call &call : s.calls)
    if (call.active && call.thread != std::this_thread::get_id())
      abortJob(s.rank, COMMRT_ERROR_PEER_ENDED,
               std::string("the runtime is shut down (commrt_finalize, exit() "
                           "or the end of main) while ") +
                   call.name +
                   " runs on another thread of this process, which the other "
                   "ranks cannot complete without it");
}

commrt_status commrt::exchangeEndNotices(CallGuard &guard) {
  State &s = state();
  bool endNotices;
  int64_t collectives;
  {
    // From here on this thread receives the notices, not the watchdog's.
    std::lock_guard<std::mutex> lock(s.mutex);
    s.threadReceives = false;
    endNotices = s.endNotices;
    collectives = s.collectives;
  }
  commrt_status result = COMMRT_SUCCESS;
  if (endNotices) {
    guard.waitForEnd();
    std::vector<MPI_Request> sends;
    for (int rank = 0; rank < s.size; ++rank) {
      if (rank == s.rank)
        continue;
      sends.emplace_back();
      if (int error = MPI_Isend(&collectives, 1, MPI_INT64_T, rank,
                                kEndNoticeTag, MPI_COMM_WORLD, &sends.back()))
        return failMpi("MPI_Isend (end notice)", error);
    }
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.heardCount == s.size - 1)
          break;
      }
      int64_t theirs = 0;
      MPI_Status status;
      if (int error = MPI_Recv(&theirs, 1, MPI_INT64_T, MPI_ANY_SOURCE,
                               kEndNoticeTag, MPI_COMM_WORLD, &status)) {
        result = failMpi("MPI_Recv (end notice)", error);
        break;
      }
      std::lock_guard<std::mutex> lock(s.mutex);
      recordEndNotice(s, status.MPI_SOURCE, theirs);
    }
    if (int error = MPI_Waitall(static_cast<int>(sends.size()), sends.data(),
                                MPI_STATUSES_IGNORE))
      if (result == COMMRT_SUCCESS)
        result = failMpi("MPI_Waitall (end notices)", error);
  }
  stopThread();
  return result;
}

void commrt::stopWatchdog() { stopThread(); }
