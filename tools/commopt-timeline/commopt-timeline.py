#!/usr/bin/python3
"""commopt-timeline: measured training steps beside the cost model's.

The training bridge writes each rank's measured timeline with
COMMOPT_TIMELINE=PATH (python/commopt/timeline.py): every step's gradient
hooks, collectives, the runtime's phases of each (accumulate, select,
exchange and a sparse exchange's own passes within it, scatter, pack,
unpack), the waits and the optimizer's step.

    commopt-timeline compare PREDICTED.json TRACE...
        Sets the traces beside the plan's predicted timeline
        (commopt-translate --export-timeline of the planned module) and
        prints where the step's time goes, the rows whose prediction is
        furthest off first: the step, its compute, and each collective's
        issue, end, local work and exchange; and the host CPU a rank took
        per step beside the model's.

    commopt-timeline fit TRACE... -o DEVICE.json [--base DEVICE.json]
                         [--profile PROFILE.json --profile-output OUT.json]
                         [--predicted PREDICTED.json
                          [--cluster-base CLUSTER.json
                           --cluster-output OUT.json]]
        Calibrates the cost model from the traces: the local-work rates of
        the device description (docs/Cluster.md, section 4: `local_work`)
        and the bridge's costs (`bridge`), written over --base (a file;
        default: a description of the host with nothing else measured);
        with --profile, that gradient profile with each layer's forward and
        backward time and the update's as the traces measured them; with
        --predicted (the traces' plan's timeline, predicted at full
        overlap), how fast the exchanges progress while the ranks compute
        (`compute_overlap`) and what the host's CPU spends beyond the
        modelled work, per step and per byte sent (`host_cpu`, from the
        CPU time each traced step took), and with --cluster-output, the
        cluster the plan was made for with what a collective costs within
        the step beyond its prediction added to its
        `collective_overhead_us`.

    commopt-timeline merge TRACE... -o MERGED.json
        One Chrome trace of every rank's (a process per rank).

Medians are taken over every rank's steps after the first --skip-steps
(default 2: the first steps warm up the allocator and the runtime).
"""

import argparse
import collections
import json
import os
import statistics
import sys

# The runtime's phases that are a collective's local work, and its exchange.
# A sparse exchange's own passes between its messages, nested in its
# "exchange" phase (an event each pass): local work, not the messages'.
EXCHANGE_PASSES = ("exchange_pack", "exchange_unpack", "exchange_reduce")
LOCAL_PHASES = ("accumulate", "select", "scatter", "pack", "unpack") + \
    EXCHANGE_PASSES
MEASURED_FORMAT = "commopt-measured-timeline"
# A selection's commrt_select, in the runtime's trace (kind - 100).
SELECTS = {0: "topk", 1: "threshold", 2: "chunk"}
# The least spread, max / min, of a sparse result's entries per element
# over the events for the fit to tell its per-entry cost from its
# per-element cost.
ENTRY_SPREAD = 1.5


class ToolError(Exception):
    pass


# -- reading measured traces --------------------------------------------------


def read_json(path, what=""):
    """The JSON object in the file at `path`; errors name it, after `what`
    (an option, say)."""
    try:
        with open(path) as handle:
            value = json.load(handle)
    except OSError as error:
        raise ToolError(f"cannot read {what}{path}: {error.strerror}") \
            from None
    except json.JSONDecodeError as error:
        raise ToolError(f"{what}{path} is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ToolError(f"{what}{path} is not a JSON object")
    return value


def load_trace(path):
    """The description and every event of a measured timeline."""
    document = read_json(path)
    info = document.get("otherData", {})
    if info.get("format") != MEASURED_FORMAT:
        raise ToolError(f"{path} is not a measured timeline (otherData.format "
                        f"is {info.get('format')!r}, expected "
                        f"'{MEASURED_FORMAT}'; write one with "
                        "COMMOPT_TIMELINE)")
    return info, document.get("traceEvents", [])


class Step:
    """What one rank did in one step, in microseconds from its start."""

    def __init__(self, rank, index, events, plan=""):
        self.rank, self.index = rank, index
        # The plan the bridge ran ("plan PATH"), as the trace names it.
        self.plan = plan
        step = [e for e in events if e["name"] == "step"]
        if len(step) != 1:
            raise ToolError(f"rank {rank}, step {index}: {len(step)} step "
                            "events")
        origin = step[0]["ts"]
        self.duration = step[0]["dur"]
        # The process's CPU time in the step (every thread), if traced.
        self.cpu = step[0]["args"].get("cpu_us")

        def at(event):
            return event["ts"] - origin

        self.ready = {e["args"]["name"]: at(e) for e in events
                      if e["cat"] == "ready"}
        self.hooks = [(at(e), e["dur"], e["args"]["name"]) for e in events
                      if e["cat"] == "hook"]
        self.issues = {e["args"]["collective"]: (at(e), e["dur"])
                       for e in events if e["cat"] == "issue"}
        self.waits = [e["dur"] for e in events if e["cat"] == "wait"]
        self.wait_spans = [(at(e), at(e) + e["dur"]) for e in events
                           if e["cat"] == "wait"]
        self.momentum = [(at(e), e["dur"], e["args"]["elements"])
                         for e in events if e["cat"] == "momentum"]
        self.masks = [(at(e), e["dur"], e["args"]["elements"])
                      for e in events if e["cat"] == "mask"]
        optimizer = [e for e in events if e["cat"] == "optimizer"]
        self.optimizer = optimizer[0]["dur"] if optimizer else 0.0
        # {collective: {phase: (begin, duration, args)}}; an exchange's
        # passes of one kind as one, their durations added up.
        self.phases = {}
        for e in events:
            if e["cat"] != "commrt":
                continue
            phases = self.phases.setdefault(e["args"]["collective"], {})
            earlier = phases.get(e["name"])
            if earlier is not None and e["name"] in EXCHANGE_PASSES:
                phases[e["name"]] = (earlier[0], earlier[1] + e["dur"],
                                     earlier[2])
            else:
                phases[e["name"]] = (at(e), e["dur"], e["args"])

    def compute(self):
        """The step thread's time not spent waiting for collectives, nor in
        blocking ones."""
        blocking = sum(phases["call"][1] for phases in self.phases.values()
                       if "call" in phases and
                       phases["call"][2]["channel"] < 0)
        return self.duration - sum(self.waits) - blocking

    def computing_within(self, begin, end):
        """How much of [begin, end) the step thread computed (did not
        wait, nor run a blocking collective)."""
        blocking = [(call[0], call[0] + call[1])
                    for call in (phases.get("call")
                                 for phases in self.phases.values())
                    if call is not None and call[2]["channel"] < 0]
        waited = sum(max(0.0, min(end, b) - max(begin, a))
                     for a, b in self.wait_spans + blocking)
        return max(0.0, min(end, self.duration) - max(begin, 0.0) - waited)


def load_steps(paths, skip):
    """Every rank's steps after the first `skip`, and the traces' common
    description (collectives, world size)."""
    steps, info = [], None
    for path in paths:
        trace_info, events = load_trace(path)
        info = info or trace_info
        by_step = {}
        for e in events:
            if e.get("ph") in ("X", "i"):
                by_step.setdefault(e["args"]["step"], []).append(e)
        for index in sorted(by_step):
            if index >= skip:
                steps.append(Step(trace_info["rank"], index, by_step[index],
                                  trace_info.get("plan", "")))
    if not steps:
        raise ToolError(f"no step after the first {skip} in "
                        f"{', '.join(paths)} (--skip-steps)")
    return info, steps


def median(values):
    values = list(values)
    return statistics.median(values) if values else None


# -- compare ------------------------------------------------------------------


# A predicted step: its time and compute, {collective: args and times},
# and the host's figures (cpu_us, host_bound_us, ...; empty without).
Prediction = collections.namedtuple(
    "Prediction", ["step", "compute", "collectives", "host"])


def load_predicted(path, function):
    """The Prediction of `function` (or the only one) in an
    --export-timeline trace."""
    document = read_json(path)
    events = document.get("traceEvents", [])
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    if not names:
        raise ToolError(f"{path} is no --export-timeline trace (no "
                        "process names)")
    pids = [pid for pid, name in names.items()
            if function is None or name.endswith("@" + function)]
    if len(pids) != 1:
        raise ToolError(f"{path} holds the functions "
                        f"{', '.join(sorted(names.values()))}; name one with "
                        "--function" if function is None else
                        f"{path} has no function @{function}")
    mine = [e for e in events if e.get("pid") == pids[0] and
            e.get("ph") == "X"]
    if any("iteration" in e.get("args", {}) for e in mine):
        raise ToolError(f"{path} simulates the steady state; export the "
                        "timeline of one step (--timeline-mode=step)")
    step = max(e["ts"] + e["dur"] for e in mine)
    # Where the host's CPU bounds the step, it ends after its events.
    host = document.get("otherData", {}).get("steps", {}).get(
        "@" + names[pids[0]].split("@")[-1], {})
    step = max(step, host.get("step_us", 0.0))
    compute = sum(e["dur"] for e in mine if e["cat"] == "compute")
    collectives = {}
    for e in mine:
        if e["cat"] == "communication":
            args = e["args"]
            collectives[args["collective"]] = {
                "members": args["members"], "issue": args["issue_us"],
                "start": e["ts"], "end": e["ts"] + e["dur"],
                "local": args.get("local_us", 0.0),
                "sent": args.get("sent_bytes", 0.0),
                "exchange": e["dur"] - args.get("local_us", 0.0)}
    return Prediction(step, compute, collectives, host)


def messages_us(phases):
    """A collective's exchange phase less its own passes (EXCHANGE_PASSES):
    the time of its messages, as the model's exchange is; 0 without one."""
    if "exchange" not in phases:
        return 0.0
    return max(0.0, phases["exchange"][1] -
               sum(phases[p][1] for p in EXCHANGE_PASSES if p in phases))


def measured_collective(steps, index):
    """Medians of collective `index` over the steps that ran it."""
    issues, starts, ends, locals_, exchanges = [], [], [], [], []
    for step in steps:
        phases = step.phases.get(index)
        if not phases or "call" not in phases:
            continue
        begin, duration, _ = phases["call"]
        issue = step.issues.get(index)
        issues.append(issue[0] if issue else begin)
        starts.append(begin)
        ends.append(begin + duration)
        locals_.append(sum(phases[p][1] for p in LOCAL_PHASES if p in phases))
        exchanges.append(messages_us(phases))
    if not ends:
        return None
    return {"issue": median(issues), "start": median(starts),
            "end": median(ends), "local": median(locals_),
            "exchange": median(exchanges)}


def compare(args):
    step_us, compute_us, predicted, host = load_predicted(args.predicted,
                                                          args.function)
    info, steps = load_steps(args.traces, args.skip_steps)
    ranks = sorted({s.rank for s in steps})
    rows = [("step", step_us, median(s.duration for s in steps)),
            ("compute (the step thread, not in collectives)", compute_us,
             median(s.compute() for s in steps))]
    planned = {c["index"]: c["names"] for c in info.get("collectives", [])}
    for index in sorted(predicted):
        mine = predicted[index]
        measured = measured_collective(steps, index)
        names = mine["members"]
        what = f"#{index} " + (names[0] if len(names) == 1 else
                               f"bucket of {len(names)}: {names[0]} ..")
        if names and index in planned and planned[index] != names:
            raise ToolError(f"collective #{index} carries {', '.join(names)} "
                            "in the prediction but "
                            f"{', '.join(planned[index])} in the traces: are "
                            "they of this plan?")
        if measured is None:
            raise ToolError(f"collective #{index} ({what}) of the prediction "
                            "never ran in the traces: are they of this plan?")
        for key, label in (("issue", "issued at"), ("end", "ends at"),
                           ("local", "local work"),
                           ("exchange", "exchange")):
            rows.append((f"{what}: {label}", mine[key], measured[key]))
    print(f"commopt-timeline compare: {args.predicted} against "
          f"{len(ranks)} rank(s) x {len(steps) // len(ranks)} step(s) (after "
          f"the first {args.skip_steps}) of {info.get('plan', 'the traces')}")
    print(f"step: predicted {step_us / 1e3:.2f} ms, measured "
          f"{rows[0][2] / 1e3:.2f} ms (median), "
          f"{(step_us - rows[0][2]) / rows[0][2] * 100:+.1f}%")
    cpu = median(s.cpu for s in steps if s.cpu is not None)
    if host.get("cpu_us") and cpu:
        print(f"host CPU a rank: predicted {host['cpu_us'] / 1e3:.2f} ms, "
              f"measured {cpu / 1e3:.2f} ms (median), "
              f"{(host['cpu_us'] - cpu) / cpu * 100:+.1f}%; the host bounds "
              f"the step at {host.get('host_bound_us', 0.0) / 1e3:.2f} ms "
              f"({host.get('network_idle_us', 0.0) / 1e3:.2f} ms of it idle "
              "on the network)")
    print("furthest off first (times from the step's start, medians over "
          "ranks and steps):")
    width = max(len(row[0]) for row in rows)
    print(f"  {'what':<{width}}  {'predicted':>10}  {'measured':>10}  "
          f"{'error':>10}")
    rows.sort(key=lambda row: -abs(row[1] - row[2]))
    for what, predicted_us, measured_us in rows[:args.top]:
        print(f"  {what:<{width}}  {predicted_us / 1e3:>7.2f} ms  "
              f"{measured_us / 1e3:>7.2f} ms  "
              f"{(predicted_us - measured_us) / 1e3:>+7.2f} ms")


# -- fit ----------------------------------------------------------------------


def rate(samples):
    """The median of time / amount over (time, amount) samples."""
    return median(t / n for t, n in samples if n > 0)


def fit_two(samples):
    """(a, b) of t = a n + b m over (t, n, m) samples, with neither
    negative: least squares, then again without the samples more than 25%
    off the first fit (a phase the scheduler preempted); None where the
    samples cannot tell the two apart."""
    ratios = [m / n for _, n, m in samples if n > 0]
    if len(samples) < 3 or not ratios or min(ratios) <= 0 or \
            max(ratios) / min(ratios) < ENTRY_SPREAD:
        return None
    first = least_squares_two(samples)
    if first is None:
        return None
    a, b = first
    kept = [(t, n, m) for t, n, m in samples
            if abs(t - (a * n + b * m)) <= 0.25 * (a * n + b * m)]
    if len(kept) < 3:
        return first
    return least_squares_two(kept) or first


def least_squares_two(samples):
    """The least-squares (a, b) of t = a n + b m, neither negative."""
    snn = sum(n * n for _, n, _ in samples)
    smm = sum(m * m for _, _, m in samples)
    snm = sum(n * m for _, n, m in samples)
    stn = sum(t * n for t, n, _ in samples)
    stm = sum(t * m for t, _, m in samples)
    determinant = snn * smm - snm * snm
    if determinant <= 0:
        return None
    a = (stn * smm - stm * snm) / determinant
    b = (stm * snn - stn * snm) / determinant
    if a < 0:
        return 0.0, stm / smm
    if b < 0:
        return stn / snn, 0.0
    return a, b


def fit_local_work(steps):
    """{device field: rate in ns} from the runtime's phases, and how many
    events each came from; phases run on a channel and blocking ones
    apart: ({"channel": ..., "blocking": ...})."""
    samples = {}

    def add(key, channel, sample):
        samples.setdefault(key, {}).setdefault(
            "channel" if channel else "blocking", []).append(sample)

    for step in steps:
        for phases in step.phases.values():
            call = phases.get("call")
            if call is None:
                continue
            args = call[2]
            on_channel = args["channel"] >= 0
            n = args["elements"]
            if args["sparse"]:
                if "accumulate" in phases:
                    add("accumulate", on_channel,
                        (phases["accumulate"][1] * 1e3, n))
                if "select" in phases:
                    add("select." + SELECTS.get(args["kind"], "?"),
                        on_channel, (phases["select"][1] * 1e3, n))
                if "scatter" in phases:
                    scatter = phases["scatter"]
                    entries = scatter[2]["received"] or \
                        scatter[2]["selected"]
                    add("scatter", on_channel,
                        (scatter[1] * 1e3, n, entries))
            elif args["kind"] < 0 and ("pack" in phases or
                                       "unpack" in phases):
                # No wire type: the passes beside the reduction, where the
                # runtime did not reduce the buffer in place.
                local = sum(phases[p][1] for p in ("pack", "unpack")
                            if p in phases)
                add("dense", on_channel, (local * 1e3, n))
    return samples


def fit_device(args, steps):
    base = load_device(args.base)
    slowdown = base.get("channel_slowdown", 1.0)
    samples = fit_local_work(steps)
    local = base.setdefault("local_work", {})
    select = local.setdefault("select_ns_per_element", {})
    notes = []
    fitted_slowdowns = []

    def single(key):
        """A per-element rate of `key`, as run blocking."""
        kinds = samples.get(key, {})
        blocking = rate(kinds.get("blocking", []))
        channel = rate(kinds.get("channel", []))
        if blocking is not None and channel is not None and blocking > 0:
            fitted_slowdowns.append(channel / blocking)
        count = sum(len(v) for v in kinds.values())
        if blocking is not None:
            notes.append(f"{key} {blocking:.3g} ns ({count} events)")
            return blocking
        if channel is not None:
            notes.append(f"{key} {channel / slowdown:.3g} ns ({count} events "
                         f"on channels, / slowdown {slowdown:g})")
            return channel / slowdown
        return None

    value = single("accumulate")
    if value is not None:
        local["accumulate_ns_per_element"] = value
    for kind in ("threshold", "topk", "chunk"):
        value = single("select." + kind)
        if value is not None:
            select[kind] = value
    value = single("dense")
    if value is not None:
        local["dense_ns_per_element"] = value
    scatter = [s for kinds in samples.get("scatter", {}).items()
               for s in (kinds[1] if kinds[0] == "blocking" else
                         [(t / slowdown, n, m) for t, n, m in kinds[1]])]
    if scatter:
        both = fit_two(scatter)
        if both is not None:
            local["scatter_ns_per_element"], local["scatter_ns_per_entry"] = \
                both
            notes.append(f"scatter {both[0]:.3g} ns/element + {both[1]:.3g} "
                         f"ns/entry ({len(scatter)} events)")
        else:
            # One kind of result: its entries cannot be told from its
            # elements, so they are priced together, per element.
            local["scatter_ns_per_element"] = rate(
                [(t, n) for t, n, _ in scatter])
            local["scatter_ns_per_entry"] = 0.0
            notes.append(f"scatter {local['scatter_ns_per_element']:.3g} "
                         f"ns/element ({len(scatter)} events, entries not "
                         "told apart)")
    if fitted_slowdowns:
        base["channel_slowdown"] = max(1.0, median(fitted_slowdowns))

    bridge = base.setdefault("bridge", {})
    hooks = [us for step in steps for us in hook_work(step)]
    if hooks:
        bridge["hook_us"] = median(hooks)
        notes.append(f"hook {bridge['hook_us']:.3g} us ({len(hooks)})")
    momentum = rate([(d * 1e3, n) for s in steps for _, d, n in s.momentum])
    if momentum is not None:
        bridge["momentum_ns_per_element"] = momentum
        notes.append(f"momentum {momentum:.3g} ns")
    mask = rate([(d * 1e3, n) for s in steps for _, d, n in s.masks])
    if mask is not None:
        bridge["mask_ns_per_element"] = mask
        notes.append(f"mask {mask:.3g} ns")
    handoffs = [us for step in steps for us in blocking_handoffs(step)]
    if handoffs:
        bridge["blocking_call_us"] = median(handoffs)
        notes.append(f"blocking call {bridge['blocking_call_us']:.3g} us "
                     f"({len(handoffs)})")
    ranks = sorted({s.rank for s in steps})
    source = (f"commopt-timeline fit of {len(ranks)} rank(s) x "
              f"{len(steps) // len(ranks)} step(s) of "
              f"{', '.join(os.path.basename(p) for p in args.traces)}: "
              f"{'; '.join(notes)}")
    base["source"] = (base.get("source", "") + "; " if base.get("source")
                      else "") + source
    return base, notes


def load_json(path, option):
    """The JSON object in the file `path`, given as `option`."""
    if path is None:
        raise ToolError(f"{option} is needed")
    return read_json(path, option + " ")


def load_device(spec):
    """The base description: a file, or the host with nothing measured."""
    if spec is None:
        return {"format": "commopt-device", "version": 1, "name": "host",
                "peak_tflops": 0.05, "memory_gbps": 10}
    device = load_json(spec, "--base")
    if device.get("format", "commopt-device") != "commopt-device":
        raise ToolError(f"--base {spec} is not a commopt-device description")
    return device


def fit_profile(path, steps):
    """The gradient profile at `path` with the compute the traces measured:
    each layer's backward from the gaps between its gradients' hooks, the
    forward (and the first layer's backward) from the step's start to the
    first hook, split as the profile splits them, the update from the
    optimizer's step."""
    profile = read_json(path, "--profile ")
    layers = profile.get("layers", [])
    if not layers:
        raise ToolError(f"--profile {path} has no layers")
    backward = {i: [] for i in range(len(layers))}
    heads = []
    for step in steps:
        hook_end = {}
        for begin, duration, name in step.hooks:
            hook_end[name] = begin + duration
        previous_end = None
        for i, layer in enumerate(layers):
            names = [p["name"] for p in layer["params"]]
            times = [step.ready[n] for n in names if n in step.ready]
            if not times:
                continue
            ready = min(times)
            if previous_end is None:
                heads.append(ready)
            else:
                backward[i].append(max(0.0, ready - previous_end))
            previous_end = max(hook_end.get(n, ready) for n in names)
    if not heads:
        raise ToolError("the traces have no gradient of the profile's layers "
                        f"({layers[0]['params'][0]['name']}, ...): are they "
                        "of this model?")
    first = layers[0]
    head = median(heads)
    forward = profile.get("forward_us") or \
        sum(layer.get("forward_us", 0) for layer in layers)
    share = forward / (forward + first.get("backward_us", 0)) \
        if forward + first.get("backward_us", 0) > 0 else 1.0
    fitted_forward = head * share
    scale = fitted_forward / forward if forward > 0 else 1.0
    profile["forward_us"] = fitted_forward
    for layer in layers:
        if "forward_us" in layer:
            layer["forward_us"] *= scale
    first["backward_us"] = head - fitted_forward
    for i, times in backward.items():
        if times:
            layers[i]["backward_us"] = median(times)
    profile["update_us"] = median(s.optimizer for s in steps)
    return profile


def exchanges(predicted_of, steps):
    """Every traced exchange of a collective its step's prediction has
    (`predicted_of(step)`, or None for none): (its predicted time at full
    rate, its measured time, the part of that the step thread computed)."""
    for step in steps:
        prediction = predicted_of(step)
        if prediction is None:
            continue
        predicted = prediction.collectives
        for index, phases in step.phases.items():
            exchange = phases.get("exchange")
            if exchange is None or index not in predicted:
                continue
            begin = exchange[0]
            duration = messages_us(phases)
            if duration > 0:
                yield (predicted[index]["exchange"], duration,
                       step.computing_within(begin, begin + duration))


def fit_in_step(predicted_of, steps):
    """What a collective costs within the step beyond its prediction, from
    the exchanges that ran mostly while the step thread did not compute:
    the median of measured - predicted (ranks that reach it at different
    times, and whatever else a step adds), or None without such exchanges;
    and compute_overlap from those that ran mostly beside compute, with
    that extra: predicted S + extra took D, of which O beside compute, so
    S + extra = rho O + (D - O); the median rho, or None."""
    apart, beside = [], []
    for full, duration, overlap in exchanges(predicted_of, steps):
        (beside if overlap >= 0.5 * duration else apart).append(
            (full, duration, overlap))
    extra = median(duration - full for full, duration, _ in apart)
    rho = median((full + (extra or 0.0) - duration + overlap) / overlap
                 for full, duration, overlap in beside)
    return extra, len(apart), \
        None if rho is None else min(1.0, max(0.01, rho)), len(beside)


def nested_us(begin, duration, spans):
    """The time of the (start, duration, ...) `spans` that lie within
    [begin, begin + duration]."""
    return sum(span[1] for span in spans
               if begin <= span[0] and
               span[0] + span[1] <= begin + duration + 1e-6)


def hook_work(step):
    """Each hook's own work in `step`: its span without the collectives it
    issued and the momentum correction it ran."""
    nested = list(step.issues.values()) + step.momentum
    for begin, duration, _ in step.hooks:
        yield max(0.0, duration - nested_us(begin, duration, nested))


def blocking_handoffs(step):
    """What each blocking collective of `step` took the step thread beyond
    the runtime's call: its issue's span without the call and the momentum
    correction and masking the bridge ran within it."""
    for index, phases in step.phases.items():
        call = phases.get("call")
        if call is None or call[2]["channel"] >= 0 or \
                index not in step.issues:
            continue
        begin, duration = step.issues[index]
        inner = nested_us(begin, duration, step.momentum + step.masks)
        yield max(0.0, duration - call[1] - inner)


def bridge_us(step):
    """The bridge's work in `step` on the step thread that the cost model
    prices apart from compute (DeviceModel::bridge): the hooks' own work,
    momentum correction and masking."""
    return sum(hook_work(step)) + sum(d for _, d, _ in step.momentum) + \
        sum(d for _, d, _ in step.masks)


def local_us(step):
    """The local work of `step`'s collectives (their runtime phases, on
    channels or blocking)."""
    return sum(phases[p][1] for phases in step.phases.values()
               for p in LOCAL_PHASES if p in phases)


def profile_compute_us(profile):
    """A gradient profile's compute per step: its forward (the profile's
    or its layers'), every layer's backward and the update."""
    layers = profile.get("layers", [])
    forward = profile.get("forward_us") or \
        sum(layer.get("forward_us", 0) for layer in layers)
    return forward + sum(layer.get("backward_us", 0) for layer in layers) + \
        profile.get("update_us", 0)


def fit_host_cpu(predicted_of, steps, info, host, compute=None):
    """The host's CPU beyond the modelled work (`host_cpu` of the device
    description, over `host`): each traced step's CPU time, less the part
    of a core its busy time had (the model's compute per step: `compute`,
    the fitted profile's, else the traced steps' median; plus the step's
    own bridge work and its collectives' local work), is step_us +
    ns_per_sent_byte x the bytes its plan sends (the prediction's
    sent_bytes). Returns (host, note), or (None, why) where the traces
    cannot tell."""
    cores, ranks = info.get("host_cores"), info.get("host_ranks")
    if not cores or not ranks:
        return None, "the traces do not say the host's cores and ranks"
    timed = [s for s in steps if s.cpu is not None]
    if not timed:
        return None, "the traces have no CPU time per step"
    # The part of a core the busy time had, as the model takes it
    # (HostCpu::busyShare): the traced steps' durations were timed with
    # these ranks sharing the cores, unless the device says otherwise.
    share = min(1.0, cores / (host.get("timed_ranks") or ranks))
    # The model's compute of a step, one figure for every plan: `compute`
    # (the fitted profile's), else the traced steps' median, without the
    # bridge's work that the model prices apart.
    if compute is None:
        compute = median(s.compute() - bridge_us(s) for s in timed)
    samples = []
    for step in timed:
        prediction = predicted_of(step)
        if prediction is None:
            continue
        sent = sum(c["sent"] for c in prediction.collectives.values())
        busy = compute + bridge_us(step) + local_us(step)
        samples.append((step.cpu - share * busy, 1.0, sent))
    if not samples:
        return None, "no traced step has its plan's prediction (--predicted)"
    both = fit_two(samples)
    if both is None:
        # One plan's bytes: they cannot be told from the step's own cost.
        per_byte = host.get("ns_per_sent_byte", 0.0) * 1e-3
        both = (max(0.0, median(t - per_byte * m for t, _, m in samples)),
                per_byte)
    host = dict(host, cores=cores, ranks=ranks, step_us=both[0],
                ns_per_sent_byte=both[1] * 1e3)
    return host, (f"host CPU {ranks} rank(s) on {cores} core(s): "
                  f"{both[0]:.0f} us a step + {both[1] * 1e3:.3g} ns per "
                  f"byte sent ({len(samples)} steps)")


def match_predictions(paths, function):
    """A function from a step to the prediction of its plan: the only one
    given, or the one named after the plan's file (PLAN.timeline.json for
    PLAN.json)."""
    predictions = {}
    for path in paths:
        stem = os.path.basename(path)
        for suffix in (".timeline.json", ".json"):
            if stem.endswith(suffix):
                stem = stem[:-len(suffix)]
                break
        predictions[stem] = load_predicted(path, function)
    if len(predictions) == 1:
        only = next(iter(predictions.values()))
        return lambda step: only

    def predicted_of(step):
        plan = os.path.basename(step.plan.split(" ", 1)[-1])
        return predictions.get(plan[:-5] if plan.endswith(".json") else plan)
    return predicted_of


def fit(args):
    info, steps = load_steps(args.traces, args.skip_steps)
    device, notes = fit_device(args, steps)
    profile = None
    if args.profile:
        if not args.profile_output:
            raise ToolError("--profile needs --profile-output")
        profile = fit_profile(args.profile, steps)
    if args.predicted:
        predicted_of = match_predictions(args.predicted, args.function)
        extra, apart, overlap, beside = fit_in_step(predicted_of, steps)
        host, note = fit_host_cpu(
            predicted_of, steps, info, device.get("host_cpu", {}),
            profile_compute_us(profile) if profile else None)
        if host is not None:
            device["host_cpu"] = host
            device["source"] += "; " + note
        notes.append(note)
        if overlap is not None:
            device["compute_overlap"] = overlap
            notes.append(f"compute overlap {overlap:.3g} ({beside} exchanges "
                         "beside compute)")
            device["source"] += f"; compute overlap {overlap:.3g}"
        if args.cluster_output:
            if extra is None:
                raise ToolError("no traced exchange ran apart from compute: "
                                "nothing to fit the cluster's in-step cost "
                                "from")
            cluster = load_json(args.cluster_base, "--cluster-base")
            base = cluster.get("collective_overhead_us", 0.0)
            cluster["collective_overhead_us"] = max(0.0, base + extra)
            cluster["source"] = cluster.get("source", "") + \
                f"; in a training step each collective took {extra:.1f} us " \
                f"more than predicted ({apart} exchanges apart from " \
                "compute, commopt-timeline fit), added to " \
                "collective_overhead_us"
            write_json(args.cluster_output, cluster)
            notes.append(f"{args.cluster_output}: collective overhead "
                         f"{base:.0f} + {extra:.0f} us ({apart} exchanges)")
    elif args.cluster_output:
        raise ToolError("--cluster-output needs --predicted")
    write_json(args.output, device)
    print(f"commopt-timeline fit: {args.output}: " + "; ".join(notes))
    if profile:
        write_json(args.profile_output, profile)
        print(f"commopt-timeline fit: {args.profile_output}: the compute of "
              f"{args.profile} as measured")


def write_json(path, value):
    try:
        with open(path, "w") as handle:
            json.dump(value, handle, indent=1)
            handle.write("\n")
    except OSError as error:
        raise ToolError(f"cannot write {path}: {error.strerror}") from None


# -- merge ----------------------------------------------------------------------


def merge(args):
    events, ranks = [], []
    for path in args.traces:
        info, trace_events = load_trace(path)
        events += trace_events
        ranks.append(info["rank"])
    write_json(args.output, {"displayTimeUnit": "ms",
                             "otherData": {"format": "commopt-merged-timeline",
                                           "ranks": ranks},
                             "traceEvents": events})


def main(argv):
    parser = argparse.ArgumentParser(
        prog="commopt-timeline", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    commands = parser.add_subparsers(dest="command", required=True)
    compare_parser = commands.add_parser(
        "compare", help="set measured traces beside the predicted timeline")
    compare_parser.add_argument("predicted")
    compare_parser.add_argument("traces", nargs="+")
    compare_parser.add_argument("--function", help="the predicted function "
                                "(default: the only one)")
    compare_parser.add_argument("--top", type=int, default=20,
                                help="rows to print (default 20)")
    fit_parser = commands.add_parser(
        "fit", help="calibrate the device description from traces")
    fit_parser.add_argument("traces", nargs="+")
    fit_parser.add_argument("-o", "--output", required=True)
    fit_parser.add_argument("--base", help="the device description to "
                            "write the measured figures over")
    fit_parser.add_argument("--profile")
    fit_parser.add_argument("--profile-output")
    fit_parser.add_argument("--predicted", action="append",
                            help="the predicted timeline of the traces' "
                            "plan at full overlap, to fit compute_overlap "
                            "and the in-step cost of a collective; again "
                            "for each plan, PLAN.timeline.json for the "
                            "traces of PLAN.json")
    fit_parser.add_argument("--function", help="the predicted function "
                            "(default: the only one)")
    fit_parser.add_argument("--cluster-base", help="with --predicted and "
                            "--cluster-output: the cluster description the "
                            "traces' plan was made for")
    fit_parser.add_argument("--cluster-output", help="where to write that "
                            "cluster with the in-step cost of a collective "
                            "measured")
    merge_parser = commands.add_parser("merge", help="merge ranks' traces")
    merge_parser.add_argument("traces", nargs="+")
    merge_parser.add_argument("-o", "--output", required=True)
    for sub in (compare_parser, fit_parser):
        sub.add_argument("--skip-steps", type=int, default=2,
                         help="steps of each rank left out first (default 2)")
    args = parser.parse_args(argv)
    if getattr(args, "skip_steps", 0) < 0:
        parser.error("--skip-steps must not be negative")
    try:
        {"compare": compare, "fit": fit, "merge": merge}[args.command](args)
    except ToolError as error:
        print(f"commopt-timeline: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
