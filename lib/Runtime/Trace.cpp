//===- Trace.cpp - Recording the phases of collectives --------------------===//

#include "Trace.h"
#include "Backend.h"

#include <algorithm>
#include <ctime>
#include <deque>
#include <mutex>

using namespace commrt;

std::atomic<bool> commrt::detail::tracing{false};

namespace {

/// The recorded events, waiting to be read.
struct Recorder {
  std::mutex mutex;
  std::deque<commrt_trace_event> events;
  int64_t capacity = 0;
  int64_t dropped = 0;
};

/// Never destroyed: channel threads may record while the process exits.
Recorder &recorder() {
  static Recorder &instance = *new Recorder;
  return instance;
}

thread_local int64_t currentTag = 0;

} // namespace

TraceContext commrt::makeTraceContext(int64_t elements, int32_t kind,
                                      int32_t channel) {
  TraceContext context;
  context.tag = currentTag;
  context.elements = elements;
  context.kind = kind;
  context.channel = channel;
  if (channel >= 0 && isTracing())
    context.startedUs = commrt_time_us();
  return context;
}

double commrt::threadCpuUs() {
  timespec now;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
    return 0;
  return static_cast<double>(now.tv_sec) * 1e6 +
         static_cast<double>(now.tv_nsec) * 1e-3;
}

void commrt::recordTraceEvent(const TraceContext &context,
                              commrt_trace_phase phase, double beginUs,
                              double endUs, int ranks, double cpuUs,
                              int64_t selected, int64_t received) {
  commrt_trace_event event;
  event.begin_us = beginUs;
  event.end_us = endUs;
  event.tag = context.tag;
  event.elements = context.elements;
  event.selected = selected;
  event.received = received;
  event.phase = phase;
  event.kind = context.kind;
  event.channel = context.channel;
  event.ranks = ranks;
  event.cpu_us = cpuUs;
  Recorder &r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (static_cast<int64_t>(r.events.size()) >= r.capacity) {
    ++r.dropped;
    return;
  }
  r.events.push_back(event);
}

TracePhase::TracePhase(const TraceContext &context, commrt_trace_phase phase,
                       int ranks)
    : context(context), phase(phase), ranks(ranks) {
  if (isTracing()) {
    beginUs = commrt_time_us();
    beginCpuUs = threadCpuUs();
  }
}

TracePhase::~TracePhase() {
  if (beginUs < 0)
    return;
  // The CPU clock is read inside the wall clock's interval (after it at
  // the start, before it at the end), so that the phase's CPU time never
  // spans more reads than its wall time does.
  double cpuUs = threadCpuUs() - beginCpuUs;
  recordTraceEvent(context, phase, beginUs, commrt_time_us(), ranks, cpuUs,
                   selected, received);
}

extern "C" {

int32_t commrt_trace_start(int64_t capacity) {
  if (capacity <= 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                "commrt_trace_start: capacity must be positive, not ",
                capacity);
  Recorder &r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.capacity = capacity;
  }
  detail::tracing.store(true);
  return COMMRT_SUCCESS;
}

int32_t commrt_trace_stop(void) {
  detail::tracing.store(false);
  return COMMRT_SUCCESS;
}

int32_t commrt_trace_tag(int64_t tag) {
  currentTag = tag;
  return COMMRT_SUCCESS;
}

int32_t commrt_trace_read(commrt_trace_event *events, int64_t capacity,
                          int64_t *count) {
  if (count)
    *count = 0;
  if (!count || (!events && capacity > 0) || capacity < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                "commrt_trace_read: events and count must not be null, and "
                "capacity not negative");
  Recorder &r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t moved = std::min<int64_t>(capacity, r.events.size());
  std::copy(r.events.begin(), r.events.begin() + moved, events);
  r.events.erase(r.events.begin(), r.events.begin() + moved);
  *count = moved;
  return COMMRT_SUCCESS;
}

int64_t commrt_trace_dropped(void) {
  Recorder &r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.dropped;
}

} // extern "C"
