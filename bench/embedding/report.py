#!/usr/bin/env python3
# ===- report.py - The embedding benchmark's section of BENCHMARKS.md ---=== #
#
# Reads what bench/embedding/run.sh wrote under OUT (the profile, each rank
# count's plans with their estimates and each run's figures) and writes the
# section "Embedding gradients: the rows exchange" of BENCHMARKS.md.
#
#   report.py OUT BENCHMARKS.md
#
# A run's step is its wall time per step until every rank has ended its
# steps: the time training takes a step, which the model predicts. Ranks
# that share the cores are descheduled now and then, and a rank's median
# step leaves out the slow steps that follow (8 ranks, the hash plan:
# 42.19 ms rank 0's median step, 49.67 ms the wall time per step); it is
# shown beside. The communication of a run is its step less the
# compute-only run's (no communication) at the same rank count, both
# measured in the same run of the benchmark. The model's is
# its plan's predicted step (comm-estimate, estimate=step) less the
# model's compute-only step: the profile's compute, run as the ranks share
# the cores, or their CPU for it where that bounds the step
# (docs/CostModel.md, section 3.1). The exchanges timed alone
# (exchange_alone.py) stand beside the model's price of each: its time in
# the plan's timeline, or the host's bound on ranks in step where that is
# longer.
#
# ===------------------------------------------------------------------=== #

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Embedding gradients: the rows exchange"
EXCHANGES = ("dense", "allgather", "hash")
# The targets: Zen's exchange at least this many times faster than
# the allgather in communication at 16 ranks; predictions within this
# fraction of the measured communication.
HASH_OVER_ALLGATHER = 2.0
PREDICTION_BOUND = 0.15


def compute_only_us(profile, device):
    """The model's compute-only step: the profile's forward, every layer's
    backward and the update, as commopt-export timed them, run as the
    device's host_cpu says its ranks share the cores (HostCpu's lockstep
    stretch), or the cores' time for every rank's CPU for it (scaled by
    cpu_scale) where there are more ranks than cores and that is longer:
    the step model's bounds with no collective."""
    compute = (profile["forward_us"] + profile["update_us"] +
               sum(layer["backward_us"] for layer in profile["layers"]))
    host = device.get("host_cpu", {})
    cores, ranks = host.get("cores", 0), host.get("ranks", 0)
    if cores <= 0 or ranks <= 0:
        return compute
    timed = host.get("timed_ranks") or ranks
    busy_share = min(1.0, cores / timed)
    timeline = compute * busy_share * max(1.0, ranks / cores)
    cpu = compute * busy_share * host.get("cpu_scale", 1.0)
    return max(timeline, cpu * ranks / cores if ranks > cores else 0.0)


def profile_compute_ms(host, profile):
    """The profile's compute the fit took from the CPU (runs fitted before
    the fit counted it had the compute-only runs' CPU there instead)."""
    if "profile_compute_us" in host:
        return host["profile_compute_us"] / 1e3
    return compute_only_us(profile, {}) / 1e3


def fit_rest(host, profile, compute_scale):
    """The rest of the step_us fit as the report says it: the exchange's
    modelled local work taken off at its own scale before the compute's
    (where the calibration measured local_cpu_scale), or with the profile's
    compute after it."""
    local = f"the exchange's modelled local work " \
        f"({host['local_work_us'] / 1e3:.2f} ms)"
    compute = (f"the profile's compute "
               f"({profile_compute_ms(host, profile):.2f} ms, timed with the "
               "optimizer the model trains with: SGD without momentum)")
    if "local_cpu_scale" in host:
        return (f", less {local} at local_cpu_scale "
                f"{host['local_cpu_scale']:.2f}, over cpu_scale "
                f"{compute_scale:.2f}, less {compute}: ")
    return f", over cpu_scale {compute_scale:.2f}, less {compute} and {local}: "


def figures_steps(runs):
    """The timed steps of the runs that communicate, as the report says
    them: one count, or the rows plans' and the dense plan's apart."""
    rows = next((figures["steps"] for label, figures in runs.items()
                 if label not in ("compute-only", "commopt-dense")), 0)
    dense = runs.get("commopt-dense", {}).get("steps", rows)
    if dense == rows:
        return f"runs of {rows} timed steps"
    return f"runs of {rows} timed steps ({dense} of the dense plan)"


def over_rounds(rounds):
    """One run's figures over its rounds: the median of the rounds' wall
    time per step (what training takes a step, the slow steps of a rank
    that is descheduled included), the range of it, and the median of
    rank 0's median steps and CPU."""
    # Runs made before train.py measured the wall time have the median
    # step only.
    walls = [r.get("wall_step_ms", r["step_ms"]) for r in rounds]
    figures = dict(rounds[0])
    figures["step_ms"] = statistics.median(walls)
    figures["step_range"] = (min(walls), max(walls))
    figures["median_step_ms"] = statistics.median(r["step_ms"]
                                                  for r in rounds)
    figures["cpu_ms"] = statistics.median(r["cpu_ms"] for r in rounds)
    figures["rounds"] = len(rounds)
    return figures


def step_cell(figures):
    """A run's step, with its rounds' range where it had several."""
    low, high = figures["step_range"]
    if figures["rounds"] < 2:
        return f"{figures['step_ms']:.2f}"
    return f"{figures['step_ms']:.2f} ({low:.2f}-{high:.2f})"


def choice_verdict(chosen, fastest, runs):
    """Whether the planner's choice is the measured fastest and, where it
    is not, whether its rounds' range reaches the fastest's: a miss within
    the rounds' spread, one the benchmark cannot tell from noise."""
    if chosen == fastest:
        return met(True)
    mine = runs.get(f"commopt-{chosen}")
    best = runs.get(f"commopt-{fastest}")
    if mine and best and mine["rounds"] > 1 and \
            mine["step_range"][0] <= best["step_range"][1]:
        return (f"{met(False)}, within the rounds' spread "
                f"({step_cell(mine)} against {step_cell(best)} ms)")
    return met(False)


def load(path):
    with open(path) as handle:
        return json.load(handle)


def rank_counts(out):
    return sorted(int(name[1:]) for name in os.listdir(out)
                  if name.startswith("r") and name[1:].isdigit())


def plan_exchange(plan):
    """The exchange a plan gives the embedding: dense, allgather or hash."""
    for collective in plan["collectives"]:
        if any(g["name"] == "embedding.weight"
               for g in collective["gradients"]):
            sparse = collective.get("sparse")
            return sparse["exchange"] if sparse else "dense"
    raise SystemExit("report.py: no plan carries embedding.weight")


def model_exchange_alone(folder, exchange):
    """The model's figures for `exchange` alone at the folder's rank count:
    its time in the plan's timeline (the link's, the ranks' arrival and its
    local work: CollectiveCost) and the host's bound on it for ranks in step
    with nothing else in the step, as commopt-translate --export-timeline
    writes it (alone_host_bound_us: StepModel's getAloneHostBoundUs; 0
    where the device describes no host)."""
    timeline = load(os.path.join(folder, f"{exchange}.timeline.json"))
    event = next(e for e in timeline["traceEvents"]
                 if e.get("args", {}).get("op") == "comm.sparse_start")
    return (event["dur"] / 1e3,
            event["args"].get("alone_host_bound_us", 0.0) / 1e3)


def exchange_alone_lines(folder):
    """The table of the exchanges timed alone (exchange_alone.py), with the
    model's figures beside them; empty for runs made before they were."""
    rounds = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("exchange-") and name.endswith(".json"):
            figures = load(os.path.join(folder, name))
            rounds.setdefault(figures["exchange"], []).append(figures)
    if not rounds:
        return [], []
    first = next(iter(rounds.values()))
    lines = [f"The exchanges alone (exchange_alone.py: the same batches' "
             "rows, a barrier before each exchange and nothing else in the "
             f"step, {first[0]['steps']} exchanges a round, {len(first)} "
             "rounds: the median over the ranks and the exchanges, the "
             "median of the rounds; the model's, its time in the plan's "
             "timeline, or the host's bound on it where that is longer: the "
             "cores' time for the ranks' CPU in it, plus its time on the "
             "network less the cores' time for the transport in that, as "
             "the step model bounds ranks in step):", "",
             "| exchange | measured (ms) | slowest rank (ms) | CPU per rank "
             "(ms) | model's time (ms) | model's host bound (ms) | off by |",
             "|---|---|---|---|---|---|---|"]
    offs = []
    for exchange in ("allgather", "hash"):
        each = rounds.get(exchange)
        if not each:
            continue
        measured = statistics.median(r["exchange_ms"] for r in each)
        slowest = statistics.median(r["slowest_ms"] for r in each)
        cpu = statistics.median(r["cpu_ms"] for r in each)
        time_ms, bound_ms = model_exchange_alone(folder, exchange)
        off = max(time_ms, bound_ms) / measured - 1
        offs.append((off, exchange))
        bound = f"{bound_ms:.2f}" if bound_ms else "-"
        lines.append(f"| {exchange} | {measured:.2f} | {slowest:.2f} | "
                     f"{cpu:.2f} | {time_ms:.2f} | {bound} | {off:+.1%} |")
    return lines + [""], offs


def met(ok):
    return "met" if ok else "**missed**"


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: report.py OUT BENCHMARKS.md")
    out, benchmarks = argv
    profile = load(os.path.join(out, "profile.json"))
    sparse = next(p["sparse"] for layer in profile["layers"]
                  for p in layer["params"] if "sparse" in p)
    touched = sparse["rows_touched"]
    lines = [HEADING, "",
             "A bag-of-words model (examples/zipf_embedding: an embedding of "
             "100,000 rows of 64 f32, sparse COO gradients, a linear "
             "classifier) on Zipf token data (exponent 1.1, 32 tokens a "
             "sample), trained on the emulated cluster "
             "(bench/cluster/emulate.sh, one rank per host, 1 Gbit/s links) "
             "at each rank count, its embedding gradient reduced dense, by "
             "the allgather of the touched rows, by Zen's hash exchange, and "
             "by PyTorch DDP over gloo with sparse gradients (its sparse "
             "allreduce), all in the same run. A run's step is its wall time "
             "per step until every rank has ended its steps, the time "
             "training takes a step (the ranks start together and share the "
             "cores, and are descheduled now and then: a rank's median step, "
             "shown beside, leaves out the slow steps that follow). "
             "Communication is the step less the compute-only step (no "
             "communication) of the same rank count; the model's is "
             "the plan's predicted step "
             "(comm-optimize rows-exchange=..., estimate=step) less the "
             "profile's compute run on that share of the cores (or their "
             "CPU for it, where that bounds the step), on the "
             "cluster commopt-calibrate measured at that rank count "
             "(its allreduces, and the CPU of an allreduce and an allgather: "
             "nothing of the rows exchanges is fitted, so "
             "every prediction is held out). The "
             "rows a rank's batch touches, as the exporter sampled them on "
             "1, 2, 4, 8 and 16 ranks: " +
             ", ".join(f"{f:.2%}" for f in touched) + ".", ""]
    host = load(os.path.join(out, "host", "host.json"))
    scale = host.get("cpu_scale", {})
    alone = host.get("compute_only_by_ranks_us", {})
    sharing = ""
    if scale:
        sharing = (
            "The same work takes more CPU the more ranks share the cores "
            "(they share the caches and the memory's bandwidth too): "
            f"{host.get('runs', 1)} compute-only runs of "
            "each rank count (ranks started together), the least CPU per "
            "step of each, " +
            ", ".join(f"{float(us) / 1e3:.2f} ms at {r} "
                      f"rank{'s' if r != '1' else ''}"
                      for r, us in alone.items()) +
            ": host_cpu.cpu_scale " +
            ", ".join(f"{s:.2f} at {r}" for r, s in scale.items()
                      if r != "1") +
            ", each rank count's over the one rank's, which scales the "
            "CPU the profile's compute" +
            (" and step_us need (timed or fitted as one rank alone has "
             "them; the exchanges' local work scales by "
             "host_cpu.local_cpu_scale, the CPU a pass over rows took "
             "while all ranks ran it over what it took alone, as "
             "commopt-calibrate measured it at each rank count, below)"
             if "local_cpu_scale" in host else
             ", the exchanges' local work and step_us need (timed or "
             "fitted as one rank alone has them)") +
            ", and so the cores' bound on the step, not the timeline. ")
    first = rank_counts(out)[0]
    lines += ["The host's CPU: the ranks share 2 cores, so a rank's CPU per "
              "step bounds the step once there are more ranks than cores. " +
              sharing +
              f"The rest was fitted once, at {first} ranks, from "
              f"{host.get('runs', 1)} runs of the hash plan, the least "
              "of their CPU per step: "
              f"{host['cpu_us'] / 1e3:.2f} ms with the hash plan, less the "
              "transport's CPU for the "
              f"{host['sent_bytes'] / 1e6:.2f} MB it sends, "
              f"{host['ns_per_sent_byte']:.3f} ns a byte through the "
              "runtime's ring and "
              f"{host.get('ns_per_gathered_byte', host['ns_per_sent_byte']):.3f}"
              " through MPI's own collectives (the rows exchange's "
              f"{host.get('gathered_bytes', 0) / 1e6:.2f} MB" +
              (f", and {host['us_per_gathered_collective']:.0f} us for each "
               f"of the {host.get('gathered_collectives', 0):.0f} "
               "collectives MPI runs for it"
               if host.get("us_per_gathered_collective") else "") +
              "; commopt-calibrate measured them at that rank count)" +
              fit_rest(host, profile, scale.get(str(first), 1.0)) +
              "host_cpu.step_us = "
              f"{host['step_us'] / 1e3:.2f} ms, in every rank count's device "
              "with its own rank count, the transport's CPU per byte that "
              "commopt-calibrate measured at that rank count (its 32 MiB "
              "allreduce and allgather), and its durations taken as CPU time "
              "(timed_ranks 1: the profile's compute was timed by one "
              "process alone): the model runs the compute of ranks in step "
              "on their share of the 2 cores, max(1, ranks / 2) times as "
              "long as timed, and the step thread's step_us likewise "
              "(docs/CostModel.md, section 3.1). Every figure below is "
              "measured in other runs than those.", ""]
    rows_of_targets = []
    worst = (0.0, "")
    worst_step = (0.0, "")
    worst_alone = (0.0, "")
    for ranks in rank_counts(out):
        folder = os.path.join(out, f"r{ranks}")
        rounds = {}
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".json"):
                continue
            figures = load(os.path.join(folder, name))
            # The runs' figures; not the plans, timelines, cluster, device.
            if isinstance(figures, dict) and "step_ms" in figures:
                rounds.setdefault(figures["label"], []).append(figures)
        runs = {label: over_rounds(each) for label, each in rounds.items()}
        compute = runs.get("compute-only")
        if compute is None:
            continue
        base = compute["step_ms"]
        model_compute_only = compute_only_us(
            profile, load(os.path.join(folder, "device.json")))
        plans = {x: load(os.path.join(folder, f"{x}.plan.json"))
                 for x in EXCHANGES + ("auto",)}
        transport = os.path.join(folder, "transport-cpu.json")
        per_byte = ""
        if os.path.exists(transport):
            rates = load(transport)
            per_byte = (f"transport CPU {rates['ns_per_sent_byte']:.3f} ns "
                        "per sent byte in the ring")
            if "ns_per_gathered_byte" in rates:
                per_byte += (f", {rates['ns_per_gathered_byte']:.3f} in "
                             "MPI's allgather")
            if "us_per_gathered_collective" in rates:
                per_byte += (" beyond "
                             f"{rates['us_per_gathered_collective']:.0f} us "
                             "for each of its collectives")
            if "local_cpu_scale" in rates:
                per_byte += (", a pass over rows "
                             f"{rates.get('local_ns_per_byte', 0):.3f} ns a "
                             "byte (alone "
                             f"{rates.get('local_ns_per_byte_alone', 0):.3f})"
                             ": local_cpu_scale "
                             f"{rates['local_cpu_scale']:.2f} against the "
                             "compute's cpu_scale "
                             f"{scale.get(str(ranks), 1.0):.2f}")
            per_byte += ", "
        lines += [f"**{ranks} ranks** ({per_byte}compute-only step "
                  f"{base:.2f} ms of wall time over {compute['steps']} steps "
                  f"per run, {figures_steps(runs)}, "
                  "batch "
                  f"{compute['batch_size']} per rank, "
                  f"{compute['rounds']} rounds: the step is the median of "
                  "the rounds' wall time per step, the range theirs; rank "
                  "0's median step and the CPU, the medians of the "
                  "rounds'):",
                  "",
                  "| run | step (ms) | rank 0's median step (ms) | "
                  "CPU per rank (ms) | communication "
                  "(ms) | model's communication (ms) | model off by | "
                  "model's step (ms) | off by | step vs DDP |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        ddp = runs.get("ddp-sparse")
        measured = {}
        for exchange in EXCHANGES:
            figures = runs.get(f"commopt-{exchange}")
            if figures is None:
                continue
            comm = figures["step_ms"] - base
            measured[exchange] = comm
            predicted_step = plans[exchange]["estimate"]["step_us"] / 1e3
            predicted = predicted_step - model_compute_only / 1e3
            off = (predicted - comm) / comm if comm > 0 else float("inf")
            if abs(off) > abs(worst[0]):
                worst = (off, f"{exchange} at {ranks} ranks")
            step_off = predicted_step / figures["step_ms"] - 1
            if abs(step_off) > abs(worst_step[0]):
                worst_step = (step_off, f"{exchange} at {ranks} ranks")
            versus = f"{figures['step_ms'] / ddp['step_ms']:.2f}x" \
                if ddp else "-"
            lines.append(f"| commopt {exchange} | {step_cell(figures)} | "
                         f"{figures['median_step_ms']:.2f} | "
                         f"{figures['cpu_ms']:.2f} | {comm:.2f} | "
                         f"{predicted:.2f} | {off:+.1%} | "
                         f"{predicted_step:.2f} | {step_off:+.1%} | "
                         f"{versus} |")
        if ddp:
            lines.append(f"| DDP sparse (gloo) | {step_cell(ddp)} | "
                         f"{ddp['median_step_ms']:.2f} | "
                         f"{ddp['cpu_ms']:.2f} | {ddp['step_ms'] - base:.2f} "
                         "| - | - | - | - | 1.00x |")
        alone_lines, alone_offs = exchange_alone_lines(folder)
        lines += [""] + alone_lines
        for off, exchange in alone_offs:
            if abs(off) > abs(worst_alone[0]):
                worst_alone = (off, f"{exchange} at {ranks} ranks")
        chosen = plan_exchange(plans["auto"])
        fastest = min(measured, key=measured.get) if measured else "-"
        lines += [f"The planner (rows-exchange=auto) chose **{chosen}**; "
                  f"the measured fastest was {fastest}.", ""]
        rows_of_targets.append(
            f"| the planner's choice is the measured fastest at {ranks} "
            f"ranks | {chosen} against {fastest} | "
            f"{choice_verdict(chosen, fastest, runs)} |")
        if ddp and measured:
            best = min(runs[f"commopt-{x}"]["step_ms"] for x in measured)
            rows_of_targets.append(
                f"| commopt's best step no slower than DDP's sparse allreduce "
                f"at {ranks} ranks | {best / ddp['step_ms']:.2f}x | "
                f"{met(best <= ddp['step_ms'])} |")
        if ranks == 16 and "hash" in measured and "allgather" in measured:
            ratio = measured["allgather"] / measured["hash"]
            rows_of_targets.insert(
                0, f"| Zen's exchange's communication at least "
                f"{HASH_OVER_ALLGATHER:g}x better than the allgather's at 16 "
                f"ranks | {ratio:.2f}x | "
                f"{met(ratio >= HASH_OVER_ALLGATHER)} |")
    rows_of_targets.append(
        f"| every prediction of communication within "
        f"{PREDICTION_BOUND:.0%} | worst {worst[0]:+.1%} ({worst[1]}) | "
        f"{met(abs(worst[0]) <= PREDICTION_BOUND)} |")
    rows_of_targets.append(
        f"| every prediction of the step within {PREDICTION_BOUND:.0%} | "
        f"worst {worst_step[0]:+.1%} ({worst_step[1]}) | "
        f"{met(abs(worst_step[0]) <= PREDICTION_BOUND)} |")
    if worst_alone[1]:
        rows_of_targets.append(
            f"| every prediction of an exchange alone within "
            f"{PREDICTION_BOUND:.0%} | worst {worst_alone[0]:+.1%} "
            f"({worst_alone[1]}) | "
            f"{met(abs(worst_alone[0]) <= PREDICTION_BOUND)} |")
    lines += ["Targets:", "", "| target | result | |", "|---|---|---|"] + \
        rows_of_targets + [""]
    write_section(benchmarks, HEADING, lines, "bench/embedding/run.sh")


if __name__ == "__main__":
    main(sys.argv[1:])
