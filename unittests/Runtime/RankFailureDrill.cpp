//===- RankFailureDrill.cpp - Ranks that exit, hang or end early ----------===//
//
// A program for test/Runtime/rank-failure.test: run under mpirun, one rank
// misbehaves as the scenario in argv[1] says, and the job must end (or not)
// as Watchdog.h promises. Every rank prints what it does, so that the test
// can tell the runtime's messages from the program's.
//
//   exit-before-collective  rank 1 calls exit(0) after one allreduce; the
//                           others call a second
//   exit-from-thread        a thread of rank 1 calls exit(0) while its main
//                           thread runs allreduces with the others
//   hang                    rank 1 sleeps for an hour instead of joining an
//                           allreduce
//   skewed-end              every rank ends normally after one allreduce,
//                           rank 0 six seconds after the others
//   wait-after-end          rank 1 waits its asynchronous allreduce and
//                           returns from main; the others start a second
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

int rank = -1;

/// Prints a line of this rank's, flushed at once.
__attribute__((format(printf, 1, 2))) void say(const char *format, ...) {
  std::printf("drill: rank %d: ", rank);
  va_list arguments;
  va_start(arguments, format);
  std::vprintf(format, arguments);
  va_end(arguments);
  std::printf("\n");
  std::fflush(stdout);
}

/// Reports a failed call and ends this rank the normal way, with status 1.
[[noreturn]] void failed(const char *call, int32_t status) {
  say("%s failed: %s: %s", call, commrt_status_string(status),
      commrt_last_error());
  std::exit(1);
}

/// An allreduce of `count` ones, checked when it succeeds.
void allreduceOnes(int64_t count) {
  std::vector<float> buffer(count, 1.0f);
  if (int32_t status =
          commrt_allreduce(buffer.data(), count, COMMRT_F32, COMMRT_SUM))
    failed("commrt_allreduce", status);
  if (buffer[0] != static_cast<float>(commrt_size()))
    say("allreduce gave %g", buffer[0]);
}

void sleepSeconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

int exitBeforeCollective() {
  allreduceOnes(1024);
  if (rank == 1) {
    say("calling exit(0) after one allreduce");
    std::exit(0);
  }
  say("calling a second allreduce");
  allreduceOnes(1024);
  say("the second allreduce returned");
  return 0;
}

int exitFromThread() {
  if (rank == 1)
    std::thread([] {
      sleepSeconds(0.5);
      say("calling exit(0) on another thread");
      std::exit(0);
    }).detach();
  // 4 MiB allreduces, long enough to be inside one when exit() comes. When
  // it comes between two, the next fails (the runtime is shutting down) and
  // this thread waits for the exit to end the process: a second exit() would
  // be undefined.
  std::vector<float> buffer(1 << 20, 1.0f);
  for (int i = 0; i < 100000; ++i)
    if (int32_t status = commrt_allreduce(buffer.data(), 1 << 20, COMMRT_F32,
                                          COMMRT_SUM)) {
      say("commrt_allreduce failed: %s: %s", commrt_status_string(status),
          commrt_last_error());
      sleepSeconds(3600);
    }
  say("all allreduces returned");
  return 0;
}

int hang() {
  allreduceOnes(16);
  if (rank == 1) {
    say("hanging for an hour");
    sleepSeconds(3600);
  }
  allreduceOnes(16);
  say("the second allreduce returned");
  return 0;
}

int skewedEnd() {
  allreduceOnes(1024);
  if (rank == 0) {
    say("working six seconds more before the end");
    // Twice COMMRT_TIMEOUT_S in the test, which leaves the allreduce before
    // it that timeout's margin under sanitizers on a loaded machine.
    sleepSeconds(6);
  }
  say("ending");
  return 0;
}

int waitAfterEnd() {
  std::vector<float> buffer(1024, 1.0f);
  int64_t handle = 0;
  if (int32_t status = commrt_allreduce_start(buffer.data(), 1024, COMMRT_F32,
                                              COMMRT_SUM, 0, &handle))
    failed("commrt_allreduce_start", status);
  if (int32_t status = commrt_wait(handle))
    failed("commrt_wait", status);
  if (rank == 1) {
    say("returning from main after one asynchronous allreduce");
    return 0;
  }
  say("starting a second asynchronous allreduce");
  if (int32_t status = commrt_allreduce_start(buffer.data(), 1024, COMMRT_F32,
                                              COMMRT_SUM, 0, &handle))
    failed("commrt_allreduce_start", status);
  if (int32_t status = commrt_wait(handle))
    failed("commrt_wait", status);
  say("the second asynchronous allreduce completed");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SCENARIO (see the source)\n", argv[0]);
    return 2;
  }
  if (int32_t status = commrt_init())
    failed("commrt_init", status);
  rank = commrt_rank();
  const char *scenario = argv[1];
  if (!std::strcmp(scenario, "exit-before-collective"))
    return exitBeforeCollective();
  if (!std::strcmp(scenario, "exit-from-thread"))
    return exitFromThread();
  if (!std::strcmp(scenario, "hang"))
    return hang();
  if (!std::strcmp(scenario, "skewed-end"))
    return skewedEnd();
  if (!std::strcmp(scenario, "wait-after-end"))
    return waitAfterEnd();
  std::fprintf(stderr, "%s: unknown scenario '%s'\n", argv[0], scenario);
  return 2;
}
