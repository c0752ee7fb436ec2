#!/usr/bin/env python3
# ===- report.py - The sharded benchmark's section of BENCHMARKS.md -----=== #
#
# Reads what bench/sharded/run.sh wrote under OUT (each architecture's runs
# and the model's estimate of the sharded step) and writes the section
# "Sharded data parallelism" of BENCHMARKS.md.
#
#   report.py OUT BENCHMARKS.md
#
# Every figure is measured in the same run of the benchmark: median steps,
# the bytes each rank's emulated link sent per step (its tx_bytes, TCP and
# IP headers included) and each rank's optimizer state. The model's bytes
# are the ring's: (p - 1) / p of the flat parameters per pass, two passes.
#
# ===------------------------------------------------------------------=== #

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Sharded data parallelism"
RUNS = (("commopt-sharded", "commopt sharded (ZeRO-2)"),
        ("zero", "ZeroRedundancyOptimizer over DDP (ZeRO-1)"),
        ("ddp", "DDP (gloo)"),
        ("local", "compute only"))
ARCHITECTURES = {"cnn": "FashionNet", "transformer": "patch transformer"}
# The bound on predictions.
PREDICTION_BOUND = 0.15


def load(path):
    with open(path) as handle:
        return json.load(handle)


def met(ok):
    return "met" if ok else "**missed**"


def megabytes(value):
    return "-" if value is None else f"{value / 1e6:.2f}"


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: report.py OUT BENCHMARKS.md")
    out, benchmarks = argv
    cluster = load(os.path.join(out, "cluster.json"))
    lines = [HEADING, "",
             "examples/fashion_mnist trained with SGD (momentum 0.9) on the "
             f"emulated cluster ({cluster['name']}: "
             "bench/cluster/emulate.sh, one rank per host), every run in the "
             "same run of the benchmark: commopt's sharded optimizer (a "
             "reduce-scatter of the gradients, each rank's shard of the "
             "optimizer, an all-gather of the parameters), torch's "
             "ZeroRedundancyOptimizer over DDP (DDP's allreduce, each "
             "rank's share of the optimizer by whole parameters, a "
             "broadcast of every share), DDP, and the "
             "compute-only step. Sent: the bytes each rank's link sent per "
             "step (the link's counter, TCP/IP headers included), the mean "
             "over the ranks; the model's: the ring's two passes over the "
             "flat parameters, 2 (p - 1) / p of them. Optimizer state: "
             "elements of momentum per rank, the largest rank's. Predicted: "
             "the compute-only step plus the reduce-scatter and the "
             "all-gather of the flat parameters as comm-estimate prices them "
             "on the cluster commopt-calibrate measured in the same run.", ""]
    targets = []
    for model, title in ARCHITECTURES.items():
        folder = os.path.join(out, model)
        if not os.path.isdir(folder):
            continue
        runs = {comm: load(os.path.join(folder, f"{comm}.json"))
                for comm, _ in RUNS
                if os.path.exists(os.path.join(folder, f"{comm}.json"))}
        if "commopt-sharded" not in runs or "zero" not in runs:
            continue
        first = runs["commopt-sharded"]
        ranks, parameters = first["ranks"], first["parameters"]
        step = {comm: figures["epochs"][0]["step_ms_median"]
                for comm, figures in runs.items()}
        estimate = load(os.path.join(folder, "estimate.json"))
        predicted = estimate["functions"][0]["step_us"] / 1e3
        model_sent = 2 * (ranks - 1) / ranks * parameters * 4
        lines += [f"**{title}** ({parameters:,} parameters, {ranks} ranks, "
                  f"batch {first['batch_size']} per rank, median steps):",
                  "",
                  "| run | step (ms) | vs ZeroRedundancyOptimizer | vs DDP "
                  "| sent per step (MB) | optimizer state per rank "
                  "(elements) |",
                  "|---|---|---|---|---|---|"]
        for comm, label in RUNS:
            if comm not in runs:
                continue
            figures = runs[comm]
            states = figures.get("optimizer_state_elements") or [0]
            lines.append(
                f"| {label} | {step[comm]:.1f} | "
                f"{step[comm] / step['zero']:.2f}x | "
                + (f"{step[comm] / step['ddp']:.2f}x" if "ddp" in step
                   else "-") +
                f" | {megabytes(figures.get('sent_bytes_per_step'))} | "
                f"{int(max(states)):,} |")
        measured = step["commopt-sharded"]
        off = (predicted - measured) / measured
        sent = runs["commopt-sharded"].get("sent_bytes_per_step")
        lines += ["", f"The model: {predicted:.1f} ms for the sharded step "
                  f"({off:+.1%} of the measured {measured:.1f} ms), "
                  f"{model_sent / 1e6:.2f} MB sent per step"
                  + (f" (measured {sent / 1e6:.2f} MB)" if sent else "")
                  + ".", ""]
        states = runs["commopt-sharded"]["optimizer_state_elements"]
        ddp_states = runs.get("ddp", {}).get("optimizer_state_elements",
                                             [parameters])
        share = max(states) / max(ddp_states)
        targets += [
            f"| {title}: the sharded step no slower than "
            f"ZeroRedundancyOptimizer's | "
            f"{measured / step['zero']:.2f}x | "
            f"{met(measured <= step['zero'])} |",
            f"| {title}: optimizer state per rank 1/{ranks} (+ padding) of "
            f"DDP's | {share:.4f} (1/{ranks} = {1 / ranks:.4f}) | "
            f"{met(max(states) <= -(-parameters // ranks))} |",
            f"| {title}: the sharded step predicted within "
            f"{PREDICTION_BOUND:.0%} | {off:+.1%} | "
            f"{met(abs(off) <= PREDICTION_BOUND)} |"]
    lines += ["Targets:", "", "| target | result | |", "|---|---|---|"] + \
        targets + [""]
    write_section(benchmarks, HEADING, lines, "bench/sharded/run.sh")


if __name__ == "__main__":
    main(sys.argv[1:])
