#!/usr/bin/env python3
# ===- report.py - The "Closing the loop" section of BENCHMARKS.md ------=== #
#
# Reads what bench/loop/run.sh left in OUT (every plan's comm-estimate JSON
# reports, <plan>.step.json and <plan>.steady.json, and its runs' logs,
# <plan>.log, with rank 0's "commrt: step S: T us" lines) and replaces the
# section "## Closing the loop" of BENCHMARKS.md (appending it when there is
# none). Hand-written notes after the "<!-- notes -->" marker survive.
#
# Usage: report.py OUT BENCHMARKS.md [--rate R --steps N --rounds K ...]
#
# ===------------------------------------------------------------------=== #

import argparse
import datetime
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

PLANS = [("optimized", "comm-optimize (cost-model plan)"),
         ("optimized-f16", "comm-optimize, f16 on the wire"),
         ("ddp", "DDP policy (25 MiB threshold buckets, 1 channel)"),
         ("sparse", "comm-optimize, sparse allowed (started sparse allreduces)"),
         ("sparse-blocking",
          "comm-optimize, sparse allowed (blocking sparse allreduces)"),
         ("zero2", "comm-optimize shard=grad (ZeRO-2)"),
         ("zero3", "comm-optimize shard=full (ZeRO-3, FSDP)"),
         ("zero3-limited", "comm-optimize shard=full within the limit")]
# The sharded plans, whose predictions the sharded-training target holds to
# 15%.
SHARDED = [("zero2", "ZeRO-2 plan"), ("zero3", "ZeRO-3 plan"),
           ("zero3-limited", "memory-limited ZeRO-3 plan")]
TITLE = "## Closing the loop"
STEP = re.compile(r"^round (\d+): commrt: step (\d+): ([0-9.]+) us$")


def estimate(path):
    with open(path) as f:
        report = json.load(f)
    (function,) = [f for f in report["functions"] if f["function"] == "train_step"]
    return function


def measured(path):
    """Timed steps (step 0 of every run is the warm-up), in us."""
    warmups, timed = [], []
    with open(path) as f:
        for line in f:
            match = STEP.match(line.strip())
            if match:
                value = float(match.group(3))
                (warmups if int(match.group(2)) == 0 else timed).append(value)
    if not timed:
        sys.exit(f"report.py: no timed steps in {path}")
    return warmups, timed


def ms(us):
    return f"{us / 1000:.1f}"


def mib(size):
    return f"{size / (1024 * 1024):.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("benchmarks")
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--steps", default="5")
    parser.add_argument("--rounds", default="4")
    parser.add_argument("--cluster", default="bench/cluster/emulated-4x1gbit.json")
    parser.add_argument("--device", default="bench/cluster/host-2core-4ranks.json")
    # The device the plans were priced on, when run.sh measured it.
    parser.add_argument("--measured-device")
    parser.add_argument("--profile",
                        default="../shared/profiles/pipedream/resnet50.graph.txt")
    parser.add_argument("--shard-limit-mb", default="100")
    args = parser.parse_args()

    rows, results = [], {}
    for plan, label in PLANS:
        step = estimate(f"{args.out}/{plan}.step.json")
        steady = estimate(f"{args.out}/{plan}.steady.json")
        warmups, timed = measured(f"{args.out}/{plan}.log")
        median = statistics.median(timed)
        error = (step["step_us"] - median) / median * 100
        results[plan] = (step, median, error)
        rows.append(
            f"| {label} | {len(step['collectives'])} | {ms(step['compute_us'])} "
            f"| {ms(step['step_us'])} | {ms(steady['step_us'])} "
            f"| {ms(median)} ({ms(min(timed))}..{ms(max(timed))}, {len(timed)} steps) "
            f"| {ms(statistics.median(warmups))} | {error:+.1f}% "
            f"| {mib(step['peak_memory_bytes'])} |")

    ddp_step, ddp_measured, ddp_error = results["ddp"]
    device_text = f"device={args.device}`"
    if args.measured_device:
        with open(args.measured_device) as handle:
            measured_device = json.load(handle)
        device_text = (
            f"device=FILE`, `{args.device}` with its `memory_gbps` "
            f"({measured_device['memory_gbps']:.2f} GB/s) and "
            f"`channel_slowdown` ({measured_device['channel_slowdown']:.2f}) "
            "measured by `commrt-in-step-bench` on the same cluster at the "
            "start of the run")

    limited_peak = results["zero3-limited"][0]["peak_memory_bytes"]

    def speedup(plan):
        """Measured and predicted speedup of `plan` over the DDP policy."""
        step, measured_us, _ = results[plan]
        return ddp_measured / measured_us, ddp_step["step_us"] / step["step_us"]

    def verdict(ok):
        return "met" if ok else "missed"

    lines = [
        TITLE, "",
        f"Measured on this 2-core Debian VM on {datetime.date.today()} (OpenMPI 4.1.4, "
        "Release build with clang-22) by `bench/loop/run.sh`. "
        f"pipedream's ResNet-50 profile (`{args.profile}`, imported with "
        "`commopt-translate --import-pipedream`) is planned by `comm-optimize` "
        f"for the calibrated cluster `{args.cluster}` eight times: the "
        "cost-model plan (`cluster=FILE`, defaults), the same with f16 on the "
        "wire (`wire=f16`: precision lowering, prescale 1/p), DDP's policy (`cluster=FILE "
        "fusion=threshold bucket-cap-mb=25 channels=1 priorities=false`) "
        "and a sparse plan (`cluster=FILE sparse=true search=false "
        f"{device_text}: comm-sparsify's choice of gradients, "
        "densities and exchanges, its local steps priced on the host CPU, "
        "its sparse allreduces started on channels, `comm.sparse_start`), "
        "also with them blocking (`sparse-overlap=false`), and sharded "
        "data parallelism (`shard=grad`, ZeRO-2; `shard=full`, ZeRO-3/FSDP; "
        f"`shard=full shard-memory-limit-mb={args.shard_limit_mb}`: "
        "comm-shard-data-parallel's units, prefetch depth and reduce-scatter "
        "waits of least simulated step within the limit; its shards are "
        "the step's arguments, filled by the driver). "
        "`comm-estimate` predicts each plan's step (`estimate=step`, one step "
        "from a cold start, which is what the driver times: `@train_step` waits "
        "for every gradient before it returns) and, for reference, the steady "
        "state. Each plan is lowered with `--commopt-lower-to-llvm=\"compute-delay\"` "
        "(every `comm.compute` fills its gradients with synthetic values and sleeps the rest of its profiled cost) under a `@main` "
        "(`comm-add-step-driver`) that runs one warm-up step and "
        f"{args.steps} timed steps, each after `commrt_barrier`, timed with "
        "`commrt_time_us`, the slowest rank's time reported by "
        "`commrt_report_step_us`; it runs in `mlir-runner` on 4 ranks of "
        f"`bench/cluster/emulate.sh` at {args.rate} ({args.rounds} rounds, the "
        "plans alternating). Times in ms; measured is the median of the timed "
        "steps of all rounds (min..max); error = (predicted - measured) / "
        "measured; "
        "peak memory: what the plan holds at once per rank as `comm-estimate` "
        "counts it (parameters, gradients, shards, gathered parameters; not "
        "activations or optimizer state).",
        "",
        "| Plan | collectives | compute | predicted step | predicted steady | "
        "measured step | warm-up step | error (step) | peak memory (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        *[f"- Measured speedup of the {name} over the DDP-policy plan: "
          f"{speedup(plan)[0]:.2f}x (predicted {speedup(plan)[1]:.2f}x)."
          for plan, name in [("optimized", "cost-model plan"),
                             ("optimized-f16", "f16-wire plan"),
                             ("sparse", "sparse plan"),
                             ("sparse-blocking", "blocking sparse plan")]
          + SHARDED],
        "",
        "| Target | result |",
        "|---|---|",
        *[f"| {name}: predicted step within 5% of measured | "
          f"{results[plan][2]:+.1f}%, {verdict(abs(results[plan][2]) <= 5)} |"
          for plan, name in [("optimized", "cost-model plan"),
                             ("optimized-f16", "f16-wire plan"),
                             ("ddp", "DDP-policy plan"),
                             ("sparse", "sparse plan"),
                             ("sparse-blocking", "blocking sparse plan")]],
        *[f"| {name}: predicted step within 15% of measured | "
          f"{results[plan][2]:+.1f}%, {verdict(abs(results[plan][2]) <= 15)} |"
          for plan, name in SHARDED],
        f"| memory-limited ZeRO-3 plan holds at most "
        f"{args.shard_limit_mb} MiB a rank | {mib(limited_peak)} MiB, "
        f"{verdict(limited_peak <= float(args.shard_limit_mb) * 2**20)} |",
        *[f"| {name} beats DDP (measured) | {speedup(plan)[0]:.2f}x, "
          f"{verdict(results[plan][1] < ddp_measured)} |"
          for plan, name in [("optimized", "cost-model plan"),
                             ("optimized-f16", "f16-wire plan"),
                             ("sparse", "sparse plan"),
                             ("sparse-blocking", "blocking sparse plan")]],
        "",
        "Command (as root, after `ninja -C build commopt-opt commopt-translate "
        "commrt`; modules, estimates and logs in `build/loop/`):",
        "",
    ]
    write_section(args.benchmarks, TITLE, lines, "bench/loop/run.sh")


if __name__ == "__main__":
    main()
