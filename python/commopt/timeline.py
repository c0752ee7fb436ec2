"""The measured timeline of training steps, as Horovod's timeline is: with
COMMOPT_TIMELINE=PATH, DistributedOptimizer records what each step did and
writes it as a Chrome trace (chrome://tracing, https://ui.perfetto.dev),
one file per rank: PATH with "{rank}" replaced by the rank, or, without
it, PATH with ".rank<R>" before its extension.

A step runs from the end of the previous step() (or from the optimizer's
creation) to the end of its own. Per step, on the thread "step":

    step            the whole step; its args carry the CPU time the
                    process (every thread) used in it, "cpu_us"
    ready NAME      the moment a gradient's hook fired (an instant event)
    hook NAME       the hook's own work: bookkeeping, momentum correction,
                    the collectives it issued
    momentum NAME   momentum correction of a sparse gradient (in its hook)
    issue #I        the bridge issuing plan collective I to the runtime
    wait #I         step() (or synchronize()) waiting for collective I
    mask NAME       momentum factor masking after the wait
    optimizer       the wrapped optimizer's step()

and the runtime's phases of every collective (commrt_trace_*: call,
queued, accumulate, select, exchange, scatter, pack, unpack), on the thread
of the channel that ran it ("channel C") or on "step" for a blocking one;
every phase but "queued" carries the CPU time that thread used in it
("cpu_us": its own work, MPI's and the kernel's on its behalf).
Every event's args carry the step, and a collective's its plan index
("collective"). Times are microseconds from the rank's first step.
The trace's otherData carries commrt_time_us() at ts 0 ("origin_us": ranks
on one machine share that clock, so their traces align), and says the
host's cores this rank may run on and the
ranks that share them ("host_cores", "host_ranks": the ranks on its node,
or COMMOPT_HOST_RANKS where ranks on several MPI nodes share one machine).
`commopt-timeline compare` sets such traces beside the plan's predicted
timeline, and `commopt-timeline fit` calibrates the cost model from them
(tools/commopt-timeline).
"""

import atexit
import json
import os
import time

from . import runtime
from .errors import CommoptError

FORMAT = "commopt-measured-timeline"
VERSION = 1
# Runtime events kept between two reads (a step's); more are counted as
# dropped, and the trace says so.
_RUNTIME_CAPACITY = 1 << 16
# The thread of the step and of blocking collectives; a channel's is
# _CHANNEL_TID + channel.
_STEP_TID = 0
_CHANNEL_TID = 10


def timeline_path(pattern, rank):
    """The file rank `rank` writes for COMMOPT_TIMELINE=`pattern`."""
    if "{rank}" in pattern:
        return pattern.replace("{rank}", str(rank))
    root, extension = os.path.splitext(pattern)
    return f"{root}.rank{rank}{extension or '.json'}"


def _host_ranks():
    """The ranks that share this rank's machine: COMMOPT_HOST_RANKS, else
    the ranks on its node."""
    text = os.environ.get("COMMOPT_HOST_RANKS")
    if not text:
        return runtime.local_size()
    try:
        ranks = int(text)
    except ValueError:
        ranks = 0
    if ranks < 1:
        raise CommoptError(f"COMMOPT_HOST_RANKS={text!r}: expected a "
                           "positive number of ranks")
    return ranks


class Timeline:
    """Records the steps of one rank and writes them at close() (at the
    latest when the process exits)."""

    def __init__(self, path, rank, size, plan):
        self.path = path
        self.rank = rank
        self.size = size
        self.plan = plan
        self.step = 0
        # The cores this rank may run on and the ranks on its node, which
        # share them where the node gives each fewer cores; where ranks
        # that MPI sees on several nodes share one machine (an emulated
        # cluster), COMMOPT_HOST_RANKS says how many.
        self.host_cores = len(os.sched_getaffinity(0))
        self.host_ranks = _host_ranks()
        self._events = []
        self._closed = False
        runtime.trace_start(_RUNTIME_CAPACITY)
        self._origin = runtime.time_us()
        self._step_start = self._origin
        self._step_cpu = time.process_time()
        atexit.register(self.close)

    @staticmethod
    def from_environment(plan):
        """A Timeline when COMMOPT_TIMELINE is set, else None."""
        pattern = os.environ.get("COMMOPT_TIMELINE")
        if not pattern:
            return None
        rank = runtime.rank()
        return Timeline(timeline_path(pattern, rank), rank, runtime.size(),
                        plan)

    def now(self):
        return runtime.time_us()

    def span(self, title, category, begin_us, end_us, tid=_STEP_TID,
             **args):
        """A complete event of the current step."""
        self._events.append({
            "name": title, "cat": category, "ph": "X", "pid": self.rank,
            "tid": tid, "ts": begin_us - self._origin,
            "dur": max(0.0, end_us - begin_us),
            "args": dict(args, step=self.step)})

    def instant(self, title, category, at_us, **args):
        """An instant event of the current step."""
        self._events.append({
            "name": title, "cat": category, "ph": "i", "s": "t",
            "pid": self.rank, "tid": _STEP_TID, "ts": at_us - self._origin,
            "args": dict(args, step=self.step)})

    def end_step(self):
        """Ends the current step: records it and the runtime's phases of its
        collectives."""
        end = self.now()
        for event in runtime.trace_read():
            phase = runtime.TRACE_PHASES[event.phase]
            tid = _STEP_TID if event.channel < 0 else \
                _CHANNEL_TID + event.channel
            sparse = event.kind >= runtime.TRACE_SPARSE
            # The CPU of the thread that ran the phase, where one did.
            cpu = {"cpu_us": event.cpu_us} if event.cpu_us >= 0 else {}
            self.span(phase, "commrt", event.begin_us, event.end_us, tid=tid,
                      collective=event.tag, phase=phase,
                      elements=event.elements, selected=event.selected,
                      received=event.received, channel=event.channel,
                      ranks=event.ranks, sparse=sparse,
                      kind=(event.kind - runtime.TRACE_SPARSE) if sparse
                      else event.kind, **cpu)
        cpu = time.process_time()
        self.span("step", "step", self._step_start, end,
                  cpu_us=(cpu - self._step_cpu) * 1e6)
        self.step += 1
        self._step_start = end
        self._step_cpu = cpu

    def close(self):
        """Writes the trace (once)."""
        if self._closed:
            return
        self._closed = True
        runtime.trace_stop()
        channels = sorted({e["tid"] for e in self._events
                           if e["tid"] >= _CHANNEL_TID})
        metadata = [{"name": "process_name", "ph": "M", "pid": self.rank,
                     "args": {"name": f"rank {self.rank}"}},
                    {"name": "thread_name", "ph": "M", "pid": self.rank,
                     "tid": _STEP_TID, "args": {"name": "step"}}]
        metadata += [{"name": "thread_name", "ph": "M", "pid": self.rank,
                      "tid": tid,
                      "args": {"name": f"channel {tid - _CHANNEL_TID}"}}
                     for tid in channels]
        document = {
            "displayTimeUnit": "ms",
            "otherData": {
                "format": FORMAT, "version": VERSION, "rank": self.rank,
                "world_size": self.size, "steps": self.step,
                "host_cores": self.host_cores,
                "host_ranks": self.host_ranks,
                "plan": self.plan.source, "model": self.plan.model,
                "dropped_runtime_events": runtime.trace_dropped(),
                # commrt_time_us() at ts 0: the steady clock, which ranks on
                # one machine share, so that their traces can be aligned.
                "origin_us": self._origin,
                "collectives": [
                    {"index": c.index, "kind": c.kind, "names": c.names,
                     "elements": sum(g.count for g in c.gradients),
                     "channel": c.channel} for c in self.plan.collectives]},
            "traceEvents": metadata + self._events}
        try:
            with open(self.path, "w") as handle:
                json.dump(document, handle)
                handle.write("\n")
        except OSError as error:
            raise CommoptError(
                f"COMMOPT_TIMELINE: cannot write {self.path}: {error}") \
                from None
