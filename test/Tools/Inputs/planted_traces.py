"""Measured timelines with known contents, for commopt-timeline's tests.

    planted_traces.py fit DIR
        Writes DIR/fit.rank0.json and DIR/fit.rank1.json: steps of sparse
        allreduces of every selection and of several sizes and results,
        dense ones and bridge work, every duration made from the constants
        PLANTED (with a few percent of deterministic noise and a few
        outliers), and DIR/planted.json, the constants.

    planted_traces.py compare PREDICTED.json DIR
        Writes DIR/compare.rank0.json and DIR/compare.rank1.json: the
        predicted step as it would be measured, except that collective #0's
        exchange takes DELAY_US longer than predicted, and collective #1's
        exchange phase holds its own passes (PASSES_US), as a sparse
        exchange's packing and unpacking are, beside its messages.

    planted_traces.py host-cpu DIR PREDICTED.json...
        Writes DIR/STEM.rank0.json and DIR/STEM.rank1.json for each
        predicted plan STEM.timeline.json: its step as measured, on a host
        of HOST_CORES cores shared by HOST_RANKS ranks, each step's CPU
        time the part of a core its busy time had plus HOST_CPU's cost per
        step and per byte the plan sends (with a few percent of noise), and
        DIR/planted-host.json, those constants.

    planted_traces.py check DEVICE.json DIR/planted.json
        Exits non-zero unless every fitted figure of the device description
        is within 5% of its planted value.
"""

import json
import random
import sys

# Nanoseconds per element (per entry, per element of the bridge's work),
# microseconds per hook and per blocking call's handoff.
PLANTED = {
    "local_work": {"accumulate_ns_per_element": 0.8,
                   "select_ns_per_element": {"threshold": 2.5, "topk": 3.1,
                                             "chunk": 0.9},
                   "scatter_ns_per_element": 0.4,
                   "scatter_ns_per_entry": 35.0,
                   "dense_ns_per_element": 0.3},
    "bridge": {"hook_us": 12.0, "momentum_ns_per_element": 1.7,
               "mask_ns_per_element": 2.9, "blocking_call_us": 1800.0},
}
SELECTS = {"topk": 0, "threshold": 1, "chunk": 2}
DELAY_US = 20000.0
# Collective #1's passes within its exchange phase, in microseconds.
PASSES_US = (("exchange_pack", 200.0), ("exchange_pack", 100.0),
             ("exchange_unpack", 300.0))
HOST_CORES, HOST_RANKS = 2, 4
HOST_CPU = {"cores": HOST_CORES, "ranks": HOST_RANKS, "step_us": 3000.0,
            "ns_per_sent_byte": 0.4}
STEPS, RANKS = 8, 2


class Writer:
    """One rank's measured timeline (python/commopt/timeline.py's format)."""

    def __init__(self, rank, collectives):
        self.rank = rank
        self.collectives = collectives
        self.events = []
        self.step = 0

    def span(self, title, category, begin, duration, tid=0, **args):
        self.events.append({"name": title, "cat": category, "ph": "X",
                            "pid": self.rank, "tid": tid, "ts": begin,
                            "dur": duration,
                            "args": dict(args, step=self.step)})

    def instant(self, title, category, at, **args):
        self.events.append({"name": title, "cat": category, "ph": "i",
                            "s": "t", "pid": self.rank, "tid": 0, "ts": at,
                            "args": dict(args, step=self.step)})

    def phase(self, phase, collective, begin, duration, elements, channel,
              sparse, kind, selected=0, received=0):
        self.span(phase, "commrt", begin, duration,
                  tid=0 if channel < 0 else 10 + channel,
                  collective=collective, phase=phase, elements=elements,
                  selected=selected, received=received, channel=channel,
                  ranks=RANKS, sparse=sparse, kind=kind)

    def write(self, path, plan="planted", **info):
        with open(path, "w") as handle:
            json.dump({"otherData": dict({
                "format": "commopt-measured-timeline", "version": 1,
                "rank": self.rank, "world_size": RANKS, "steps": self.step,
                "plan": plan, "model": "planted",
                "dropped_runtime_events": 0,
                "collectives": self.collectives}, **info),
                "traceEvents": self.events}, handle)


def fit_traces(folder):
    rng = random.Random(7)

    def noisy(us):
        # A few percent of noise, and now and then a preempted phase.
        if rng.random() < 0.04:
            return us * 4
        return us * rng.uniform(0.97, 1.03)

    rates = PLANTED["local_work"]
    bridge = PLANTED["bridge"]
    # (select, elements, entries per element): results of several sizes,
    # so that a result's entries can be told from its elements.
    sparse = [("threshold", 3_000_000, 0.004), ("threshold", 500_000, 0.04),
              ("topk", 2_000_000, 0.008), ("topk", 800_000, 0.02),
              ("chunk", 1_500_000, 0.01), ("chunk", 600_000, 0.05)]
    for rank in range(RANKS):
        writer = Writer(rank, [{"index": i, "names": [f"p{i}"]}
                               for i in range(len(sparse) + 1)])
        for step in range(STEPS):
            writer.step = step
            t = 0.0
            for index, (select, n, density) in enumerate(sparse):
                entries = int(n * density * rng.uniform(0.8, 1.2))
                name = f"p{index}"
                hook_begin = t
                writer.instant(f"ready {name}", "ready", t, name=name)
                momentum = noisy(n * bridge["momentum_ns_per_element"] * 1e-3)
                writer.span(f"momentum {name}", "momentum", t, momentum,
                            name=name, elements=n)
                # The issue hands the blocking call to the bridge's thread,
                # which runs it, and the bridge masks the velocity before
                # the hook returns; the handoff costs the planted time,
                # half before the call and half after.
                issue_begin = t + momentum
                handoff = noisy(bridge["blocking_call_us"])
                begin = issue_begin + handoff / 2
                # As the bridge writes it: the commrt_select.
                kind = SELECTS[select]
                phases = [
                    ("accumulate", rates["accumulate_ns_per_element"] * n, 0,
                     0),
                    ("select", rates["select_ns_per_element"][select] * n,
                     entries, 0),
                    ("exchange", 2000 * 1e3, entries, entries),
                    ("scatter", rates["scatter_ns_per_element"] * n +
                     rates["scatter_ns_per_entry"] * entries, entries,
                     entries)]
                at = begin
                for phase, ns, selected, received in phases:
                    us = noisy(ns * 1e-3)
                    if select == "chunk":
                        received = 0
                    writer.phase(phase, index, at, us, n, -1, True, kind,
                                 selected, received)
                    at += us
                writer.phase("call", index, begin, at - begin, n, -1, True,
                             kind)
                mask = noisy(n * bridge["mask_ns_per_element"] * 1e-3)
                writer.span(f"mask {name}", "mask", at, mask, name=name,
                            elements=n)
                issue_end = at + mask + handoff / 2
                writer.span(f"issue #{index}", "issue", issue_begin,
                            issue_end - issue_begin, collective=index,
                            kind="sparse")
                hook = noisy(bridge["hook_us"])
                writer.span(f"hook {name}", "hook", hook_begin,
                            issue_end + hook - hook_begin, name=name)
                t = issue_end + hook + 100
            # A dense collective without a wire type: its division.
            n = 4_000_000
            index = len(sparse)
            writer.phase("exchange", index, t, 50000, n, 0, False, -1)
            unpack = noisy(n * rates["dense_ns_per_element"] * 1e-3)
            writer.phase("unpack", index, t + 50000, unpack, n, 0, False, -1)
            writer.phase("call", index, t, 50000 + unpack, n, 0, False, -1)
            t += 50000 + unpack
            writer.span("optimizer", "optimizer", t, 500)
            writer.span("step", "step", 0, t + 500)
            # Steps follow each other.
            for event in writer.events:
                if event["args"]["step"] == step:
                    event["ts"] += step * 1e6
        writer.step = STEPS
        writer.write(f"{folder}/fit.rank{rank}.json")
    with open(f"{folder}/planted.json", "w") as handle:
        json.dump(PLANTED, handle)


def compare_traces(predicted_path, folder, stem="compare", delay_us=DELAY_US,
                   host=None, passes=()):
    """The predicted step as measured, collective #0's exchange `delay_us`
    longer and collective #1's exchange phase longer by its `passes`
    (PASSES_US), nested in it; with `host` (HOST_CPU), each step's CPU time
    as that host spends it."""
    rng = random.Random(11)
    with open(predicted_path) as handle:
        predicted = json.load(handle)["traceEvents"]
    compute = sorted((e for e in predicted if e.get("cat") == "compute"),
                     key=lambda e: e["ts"])
    collectives = sorted((e for e in predicted
                          if e.get("cat") == "communication"),
                         key=lambda e: e["args"]["collective"])
    for rank in range(RANKS):
        writer = Writer(rank, [{"index": e["args"]["collective"],
                                "names": e["args"]["members"]}
                               for e in collectives])
        for step in range(4):
            writer.step = step
            origin = step * 1e6
            end = 0.0
            for task in compute:
                end = max(end, task["ts"] + task["dur"])
            # The step thread waits from the last issue on.
            computed = max(e["args"]["issue_us"] for e in collectives)
            for event in collectives:
                args = event["args"]
                index = args["collective"]
                name = args["members"][0]
                writer.instant(f"ready {name}", "ready",
                               origin + args["issue_us"], name=name)
                writer.span(f"hook {name}", "hook",
                            origin + args["issue_us"], 0.0, name=name)
                writer.span(f"issue #{index}", "issue",
                            origin + args["issue_us"], 0.0,
                            collective=index, kind="dense")
                delay = delay_us if index == 0 else 0.0
                nested = passes if index == 1 else ()
                duration = event["dur"] + delay + sum(us for _, us in nested)
                begin = origin + event["ts"]
                writer.phase("exchange", index, begin, duration, 1000, 0,
                             False, -1)
                at = begin
                for name, us in nested:
                    writer.phase(name, index, at, us, 1000, 0, False, -1)
                    at += us
                writer.phase("call", index, begin, duration, 1000, 0, False,
                             -1)
                end = max(end, event["ts"] + duration)
            writer.span("wait #0", "wait", origin + computed, end - computed,
                        collective=0)
            cpu = {}
            if host:
                # Busy while it computed, at its share of a core.
                sent = sum(e["args"]["sent_bytes"] for e in collectives)
                share = min(1.0, host["cores"] /
                            (host.get("timed_ranks") or host["ranks"]))
                cpu = {"cpu_us": (share * computed + host["step_us"] +
                                  host["ns_per_sent_byte"] * sent * 1e-3) *
                       rng.uniform(0.97, 1.03)}
            writer.span("step", "step", origin, end, **cpu)
        writer.step = 4
        info = {"host_cores": host["cores"], "host_ranks": host["ranks"]} \
            if host else {}
        writer.write(f"{folder}/{stem}.rank{rank}.json",
                     plan=f"plan {folder}/{stem}.json", **info)


def host_cpu_traces(folder, predicted_paths, timed_alone=False):
    """Traces of a host whose durations count at the ranks' share of a core
    or, `timed_alone`, whole (timed_ranks 1: a profile timed by one
    process)."""
    host = dict(HOST_CPU, timed_ranks=1) if timed_alone else HOST_CPU
    for path in predicted_paths:
        stem = path.rsplit("/", 1)[-1].removesuffix(".timeline.json")
        compare_traces(path, folder, stem, delay_us=0.0, host=host)
    with open(f"{folder}/planted-host.json", "w") as handle:
        json.dump({"host_cpu": host}, handle)


def check(device_path, planted_path):
    with open(device_path) as handle:
        device = json.load(handle)
    with open(planted_path) as handle:
        planted = json.load(handle)
    failures = []

    def walk(expected, fitted, where):
        for key, value in expected.items():
            if isinstance(value, dict):
                walk(value, fitted.get(key, {}), f"{where}.{key}")
                continue
            got = fitted.get(key)
            if got is None or abs(got - value) > 0.05 * value:
                failures.append(f"{where}.{key}: fitted {got}, planted "
                                f"{value}")
            else:
                print(f"{where}.{key}: fitted {got:.4g}, planted {value:g}: "
                      "within 5%")
    walk(planted, device, "device")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    if sys.argv[1] == "fit":
        fit_traces(sys.argv[2])
    elif sys.argv[1] == "compare":
        compare_traces(sys.argv[2], sys.argv[3], passes=PASSES_US)
    elif sys.argv[1] == "host-cpu":
        host_cpu_traces(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "host-cpu-alone":
        host_cpu_traces(sys.argv[2], sys.argv[3:], timed_alone=True)
    else:
        check(sys.argv[2], sys.argv[3])
