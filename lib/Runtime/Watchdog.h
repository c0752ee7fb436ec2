//===- Watchdog.h - Bounded waits, and ranks that end early -----*- C++ -*-===//
//
// A collective cannot complete when a rank that must join it has died, hangs,
// or has ended without joining it, and MPI cannot cancel one that has begun.
// The watchdog keeps the job from waiting for ever:
//
//  - Every call into the runtime registers itself (CallGuard) for as long as
//    it runs. A thread of the watchdog aborts the job (MPI_Abort) when a call
//    has run longer than COMMRT_TIMEOUT_S, naming the call.
//  - Ranks count their collectives alike: a correct program runs the same
//    collectives in the same order on every rank. A rank whose runtime ends
//    (commrt_finalize, or the exit-time shutdown after exit() or the end of
//    main) first completes its collectives in flight, then tells every other
//    rank how many collectives it ran (an end notice, over MPI_COMM_WORLD on
//    a tag of its own). A rank that waits in a later collective can never
//    finish it: its watchdog aborts the job at once, and a collective begun
//    after the notice arrived fails with COMMRT_ERROR_PEER_ENDED instead of
//    blocking. Ranks that end at different times after the same collectives
//    are a normal end: they wait for each other, as MPI_Finalize does.
//  - A process that exits while a call into the runtime runs on another of
//    its threads cannot take part in that call any more: the exit-time
//    shutdown aborts the job instead of finalising MPI under the call.
//
// The end notices need MPI_THREAD_MULTIPLE and an MPI that the runtime owns
// (it called MPI_Init_thread); where the program initialised MPI, only the
// timeout applies.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_WATCHDOG_H
#define COMMRT_WATCHDOG_H

#include "commrt/commrt.h"

#include <cstdint>

namespace commrt {

/// The MPI tag of end notices on MPI_COMM_WORLD (at most 32767, the least
/// MPI_TAG_UB that MPI guarantees).
constexpr int kEndNoticeTag = 32001;

/// Registers a call into the runtime with the watchdog while it lives.
class CallGuard {
public:
  /// `call` names the entry point and must outlive the guard.
  explicit CallGuard(const char *call);
  ~CallGuard();
  CallGuard(const CallGuard &) = delete;
  CallGuard &operator=(const CallGuard &) = delete;

  /// Fails with NOT_INITIALIZED when the runtime is being shut down (by
  /// another thread): the call must not touch MPI.
  commrt_status admitted() const;

  /// Gives the call the next collective number, the one it waits on from
  /// now. Fails with PEER_ENDED when another rank has already ended its
  /// runtime before that collective.
  commrt_status beginCollective(int64_t &number);

  /// The call waits on the collective `number` (one begun earlier), from now.
  void waitOn(int64_t number);

  /// The call waits for the other ranks to end: COMMRT_EXIT_TIMEOUT_S bounds
  /// it instead of COMMRT_TIMEOUT_S.
  void waitForEnd();

private:
  int slot;
  bool shuttingDown;
};

/// Reads COMMRT_TIMEOUT_S and COMMRT_EXIT_TIMEOUT_S and starts the watchdog's
/// thread, once MPI is up. `endNotices`: the runtime owns MPI at
/// MPI_THREAD_MULTIPLE, so the thread may receive end notices. Idempotent.
commrt_status startWatchdog(bool endNotices);

/// Marks the runtime as shutting down, so that calls beginning after it fail.
/// When a call into the runtime runs on another thread (the process exits
/// under it), prints why and aborts the job.
void beginShutdown();

/// Sends this rank's end notice to every other rank and receives theirs
/// (waiting, as MPI_Finalize would, for ranks that have not ended yet), when
/// end notices are on; then stops the watchdog's thread. Called by the
/// shutdown after the collectives in flight completed, before MPI_Finalize.
commrt_status exchangeEndNotices(CallGuard &guard);

/// Stops the watchdog's thread (MPI is being finalised by the program).
void stopWatchdog();

} // namespace commrt

#endif // COMMRT_WATCHDOG_H
