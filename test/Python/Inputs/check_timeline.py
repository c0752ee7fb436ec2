"""Checks the measured timelines (COMMOPT_TIMELINE) of a training run: one
file per rank, each a Chrome trace of every step with the bridge's events
and the runtime's phases of every collective of the plan, present and in
the order they happen, and each step's CPU time.

    check_timeline.py --host-ranks=N PLAN.json TRACE.rank0.json ...

N: the ranks the traces must say share the host. Prints one line per rank and exits non-zero on the first problem.
"""

import json
import sys

# The phases of each kind of collective, in the order they run.
SPARSE = ["accumulate", "select", "exchange", "scatter"]
DENSE = ["exchange"]
# Float slack for times written in microseconds.
SLACK_US = 1.0


def fail(where, message):
    sys.exit(f"{where}: {message}")


def check_rank(plan, path, host_ranks):
    with open(path) as handle:
        document = json.load(handle)
    info = document["otherData"]
    if info["format"] != "commopt-measured-timeline":
        fail(path, f"format {info['format']}")
    collectives = plan["collectives"]
    parameters = [g["name"] for c in collectives for g in c["gradients"]]
    events = [e for e in document["traceEvents"] if e["ph"] != "M"]
    steps = sorted({e["args"]["step"] for e in events})
    if steps != list(range(info["steps"])) or not steps:
        fail(path, f"steps {steps}, expected 0..{info['steps'] - 1}")
    # The steady clock at ts 0, shared by the ranks on one machine.
    if not info.get("origin_us", 0) > 0:
        fail(path, f"origin_us {info.get('origin_us')}")
    if info["dropped_runtime_events"]:
        fail(path, f"{info['dropped_runtime_events']} runtime events lost")
    if info.get("host_cores", 0) < 1 or \
            info.get("host_ranks") != host_ranks:
        fail(path, f"host_cores {info.get('host_cores')}, host_ranks "
             f"{info.get('host_ranks')}: expected at least 1 core and "
             f"{host_ranks} ranks")
    momentum = plan.get("momentum_correction", False)
    for step in steps:
        where = f"{path}, step {step}"
        mine = [e for e in events if e["args"]["step"] == step]

        def named(name):
            found = [e for e in mine if e["name"] == name]
            if len(found) != 1:
                fail(where, f"{len(found)} events named '{name}'")
            return found[0]

        span = named("step")
        begin, end = span["ts"], span["ts"] + span["dur"]
        # The process's CPU time: positive, and no more than every core
        # busy for the whole step.
        cpu = span["args"].get("cpu_us", 0)
        if not 0 < cpu <= info["host_cores"] * span["dur"] + SLACK_US:
            fail(where, f"cpu_us {cpu} for a step of {span['dur']} us")
        for event in mine:
            at = event["ts"]
            until = at + event.get("dur", 0)
            if at < begin - SLACK_US or until > end + SLACK_US:
                fail(where, f"'{event['name']}' ({at}..{until}) is outside "
                     f"the step ({begin}..{end})")
        ready = {name: named(f"ready {name}")["ts"] for name in parameters}
        for name in parameters:
            named(f"hook {name}")
        optimizer = named("optimizer")
        # The plan's collectives in issue order, as the bridge indexes them.
        for index, collective in enumerate(collectives):
            issue = named(f"issue #{index}")
            last_ready = max(ready[g["name"]] for g in collective["gradients"])
            if issue["ts"] < last_ready - SLACK_US:
                fail(where, f"collective #{index} was issued before its "
                     "last gradient was ready")
            phases = {e["name"]: e for e in mine if e["cat"] == "commrt" and
                      e["args"]["collective"] == index}
            expected = SPARSE if collective["kind"] == "sparse" else DENSE
            for phase in ["call"] + expected:
                if phase not in phases:
                    fail(where, f"collective #{index} has no '{phase}' "
                         f"phase (has {sorted(phases)})")
            call = phases["call"]
            previous = call["ts"]
            # Every phase a thread ran carries that thread's CPU time in
            # it, no more than its wall time up to the two clocks'
            # disagreement (a microsecond in 277 has been seen, and on this
            # VM 20.7 us of CPU in a phase of 8.5 us, the thread's CPU
            # clock running on the scheduler's per-CPU clock); the queued
            # wait none.
            for phase, event in phases.items():
                spent = event["args"].get("cpu_us")
                if phase == "queued":
                    if spent is not None:
                        fail(where, f"collective #{index}: 'queued' has "
                             f"cpu_us {spent}")
                elif spent is None or \
                        not 0 <= spent <= 1.05 * event["dur"] + 25:
                    fail(where, f"collective #{index}: '{phase}' has "
                         f"cpu_us {spent} in {event['dur']} us")
            for phase in expected:
                event = phases[phase]
                if event["ts"] < previous - SLACK_US or \
                        event["ts"] + event["dur"] > \
                        call["ts"] + call["dur"] + SLACK_US:
                    fail(where, f"collective #{index}: '{phase}' is out of "
                         "order or outside its call")
                previous = event["ts"] + event["dur"]
            if call["ts"] < issue["ts"] - SLACK_US:
                fail(where, f"collective #{index} ran before it was issued")
            if collective.get("channel") is not None:
                queued = phases.get("queued")
                if queued is None:
                    fail(where, f"started collective #{index} was never "
                         "queued")
                wait = named(f"wait #{index}")
                if wait["ts"] + wait["dur"] < \
                        call["ts"] + call["dur"] - SLACK_US:
                    fail(where, f"the wait for collective #{index} ended "
                         "before the collective")
                if call["tid"] != 10 + collective["channel"]:
                    fail(where, f"collective #{index} ran on thread "
                         f"{call['tid']}, not its channel's")
            if collective["kind"] == "sparse":
                name = collective["gradients"][0]["name"]
                sent = phases["exchange"]["args"]["selected"]
                if sent <= 0:
                    fail(where, f"collective #{index} sent nothing")
                if momentum:
                    correction = named(f"momentum {name}")
                    mask = named(f"mask {name}")
                    if correction["ts"] > issue["ts"] + issue["dur"] or \
                            mask["ts"] < phases["call"]["ts"]:
                        fail(where, f"momentum correction of '{name}' is "
                             "not around its collective")
            if optimizer["ts"] < call["ts"] + call["dur"] - SLACK_US:
                fail(where, "the optimizer stepped before collective "
                     f"#{index} ended")
    print(f"rank {info['rank']}: {len(steps)} steps, {len(collectives)} "
          f"collectives each, every phase present and in order")


def main(argv):
    host_ranks = int(argv[1].removeprefix("--host-ranks="))
    with open(argv[2]) as handle:
        plan = json.load(handle)
    for path in argv[3:]:
        check_rank(plan, path, host_ranks)


if __name__ == "__main__":
    main(sys.argv)
