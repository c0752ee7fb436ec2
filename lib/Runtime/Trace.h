//===- Trace.h - Recording the phases of collectives -------------*- C++
//-*-===//
//
// The recorder behind commrt_trace_*: a process-wide list of
// commrt_trace_events that the backends append to while tracing is on, and
// the context each collective carries from its call (or start) to the
// thread that runs it.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_TRACE_H
#define COMMRT_TRACE_H

#include "commrt/commrt.h"

#include <atomic>
#include <cstdint>

namespace commrt {

/// What every event of one collective says about it, set where it is called
/// or started.
struct TraceContext {
  /// The calling thread's tag.
  int64_t tag = 0;
  /// The collective's elements.
  int64_t elements = 0;
  /// commrt_trace_event::kind.
  int32_t kind = COMMRT_WIRE_NONE;
  /// The channel of a started collective, -1 for a blocking one.
  int32_t channel = -1;
  /// commrt_time_us() at the start of a started collective.
  double startedUs = 0;
};

namespace detail {
extern std::atomic<bool> tracing;
} // namespace detail

/// Whether events are being recorded.
inline bool isTracing() {
  return detail::tracing.load(std::memory_order_relaxed);
}

/// The context of a collective of `elements` elements of kind `kind`
/// called now by this thread, on `channel` (-1: blocking).
TraceContext makeTraceContext(int64_t elements, int32_t kind, int32_t channel);

/// The CPU time the calling thread has used, in microseconds.
double threadCpuUs();

/// Records a phase of the collective `context`, run among `ranks` ranks,
/// in which the thread that ran it used `cpuUs` of CPU time (-1: no thread
/// ran it).
void recordTraceEvent(const TraceContext &context, commrt_trace_phase phase,
                      double beginUs, double endUs, int ranks, double cpuUs,
                      int64_t selected = 0, int64_t received = 0);

/// Records the phase `phase` of the collective `context` from its
/// construction to its destruction, when tracing is on at construction;
/// `selected` and `received` may be set before it ends.
class TracePhase {
public:
  TracePhase(const TraceContext &context, commrt_trace_phase phase, int ranks);
  ~TracePhase();
  TracePhase(const TracePhase &) = delete;
  TracePhase &operator=(const TracePhase &) = delete;

  int64_t selected = 0;
  int64_t received = 0;

private:
  const TraceContext &context;
  commrt_trace_phase phase;
  int ranks;
  /// The begin time, or a negative value when not recording.
  double beginUs = -1;
  /// The thread's CPU time at the begin.
  double beginCpuUs = 0;
};

} // namespace commrt

#endif // COMMRT_TRACE_H
