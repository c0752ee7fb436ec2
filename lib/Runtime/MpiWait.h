//===- MpiWait.h - Waiting for MPI requests without holding a core -*- C++ -*-//
//
// OpenMPI's blocking calls and MPI_Wait poll until the data is there: a rank
// that waits for its peers or for a slow link keeps a core busy the whole
// time, which on hosts where ranks share cores is taken from the ranks that
// compute. commrt's collectives therefore start their MPI operations
// nonblocking and complete them here. On a communicator whose ranks reach
// each other over the network, the wait tests in a tight loop for a while
// (a short collective completes within it), then tests between sleeps of
// growing length, so that a long wait costs some thousand wake-ups a second
// instead of a core; meanwhile the kernel's socket buffers keep the data
// moving. Over shared memory, OpenMPI moves a message only while both of
// its ranks call into MPI, so a sleeping rank would stall the transfer:
// there the wait polls, as MPI_Waitall does. recordTransport tells the two
// apart when a communicator is made.
//
// How long a wait spins and sleeps follows the thread's recent waits: where
// they were long, the next one skips the tight loop; where they were short
// (chains of small collectives), it spins, as their latency needs. A caller
// that knows how many bytes its wait awaits (a ring's pieces) says so: such
// a wait sleeps up to a tenth of the recent waits' length, and the thread
// keeps the recent time per byte of such waits, so that the next one sleeps
// most of its expected time in one sleep before it tests in short ones: a
// few wake-ups per message. Other waits (MPI's own nonblocking
// collectives, whose rounds move on only while the rank tests) sleep 100 us
// at most.
//
// COMMRT_WAIT=auto (the default) does so; poll polls everywhere, sleep
// sleeps everywhere (shared memory too: slower, but it leaves the cores to
// compute). COMMRT_WAIT_SPIN_US (default 1000) and COMMRT_WAIT_SLEEP_US
// (default 500) set how long the tight loop lasts and the longest sleep
// between tests.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_MPIWAIT_H
#define COMMRT_MPIWAIT_H

#include "commrt/commrt.h"

#include <mpi.h>

namespace commrt {

/// How a rank waits for MPI requests (from the environment, read once).
struct WaitPolicy {
  /// Where waits sleep between tests (COMMRT_WAIT).
  enum class Mode {
    /// On communicators whose ranks do not all share memory.
    Auto,
    /// Nowhere: MPI_Waitall polls.
    Poll,
    /// Everywhere.
    Sleep,
  };
  Mode mode = Mode::Auto;
  /// How long the tight loop of tests lasts, in microseconds.
  double spinUs = 1000;
  /// The longest sleep between two tests, in microseconds; after short
  /// waits, sleeps stay at kShortWaitSleepUs at most (MpiWait.cpp).
  double maxSleepUs = 500;
};

/// The policy of this process: COMMRT_WAIT, COMMRT_WAIT_SPIN_US and
/// COMMRT_WAIT_SLEEP_US as the environment had them at the first call.
/// Fails, naming the variable, on a value it cannot use.
commrt_status waitPolicy(const WaitPolicy *&policy);

/// Records on `comm` whether all its ranks share memory, which decides how
/// waits on it wait; MPI_Comm_dup copies the record, and a communicator
/// without one is waited on by polling. Collective over `comm`.
commrt_status recordTransport(MPI_Comm comm);

/// Sets `localRank` and `localSize` to this rank's rank among the ranks of
/// `comm` that share its node's memory (MPI_COMM_TYPE_SHARED), and their
/// number. Collective over `comm`.
commrt_status findNodeRanks(MPI_Comm comm, int &localRank, int &localSize);

/// Completes the `count` requests at `requests` (MPI_REQUEST_NULL entries
/// allowed) of operations on `comm` as MPI_Waitall does, waiting as the
/// policy and `comm`'s transport say; `call` names the MPI operation in the
/// error. `bytes` (0: unknown) is how much data the wait awaits.
commrt_status waitAll(MPI_Comm comm, int count, MPI_Request *requests,
                      const char *call, int64_t bytes = 0);

/// Completes `request` of an operation on `comm` (see waitAll).
inline commrt_status waitFor(MPI_Comm comm, MPI_Request &request,
                             const char *call, int64_t bytes = 0) {
  return waitAll(comm, 1, &request, call, bytes);
}

/// The first sleep of a wait for `bytes` (> 0) bytes when such waits took
/// `usPerByte` recently: three quarters of the expected time, so that a wait
/// as long as the recent ones ends in a few short sleeps after it; 0 when
/// there is no history (or it expects less than `shortestUs`).
double expectedFirstSleepUs(int64_t bytes, double usPerByte, double shortestUs);

} // namespace commrt

#endif // COMMRT_MPIWAIT_H
