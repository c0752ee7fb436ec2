#!/usr/bin/python3
# ===- report.py - The training benchmark's section of BENCHMARKS.md ----=== #
#
# Reads what bench/training/run.sh wrote under OUT (fidelity/*.json: test
# accuracy per epoch; speed/*.json: step times on the emulated cluster;
# plans/*.json: each commopt plan with its estimate) and replaces the section
# "Training on Fashion-MNIST" of BENCHMARKS.md with the tables and the
# targets of the training issue, each judged against what was measured in
# the same run.
#
#   report.py OUT BENCHMARKS.md
#
# ===------------------------------------------------------------------=== #

import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import NOTES, replace_section  # noqa: E402

HEADING = "## Training on Fashion-MNIST"
ORDER = ["ddp", "ddp-fp16", "ddp-powersgd-2", "commopt-f32", "commopt-f16",
         "commopt-threshold-0.01", "commopt-threshold-0.001",
         "commopt-topk-0.001", "commopt-chunk-0.01", "commopt-chunk-0.001",
         "compute-only"]


def load_runs(pattern):
    runs = {}
    for path in glob.glob(pattern):
        with open(path) as handle:
            run = json.load(handle)
        runs[run["label"]] = run
    return runs


def ordered(runs):
    known = [label for label in ORDER if label in runs]
    return known + sorted(set(runs) - set(known))


def check(ok):
    return "met" if ok else "**missed**"


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: report.py OUT BENCHMARKS.md")
    out = argv[1]
    fidelity = load_runs(os.path.join(out, "fidelity", "*.json"))
    speed = load_runs(os.path.join(out, "speed", "*.json"))
    plans = {}
    for path in glob.glob(os.path.join(out, "plans", "*.json")):
        with open(path) as handle:
            plans["commopt-" + os.path.basename(path)[:-5]] = json.load(handle)

    lines = [HEADING, ""]
    lines.append(
        "`examples/fashion_mnist` (FashionNet: two 5x5 convolutions and a "
        "1568x2048 classifier, 3.27 M parameters, 12.5 MiB of f32 gradients) "
        "trained on 4 ranks of batch 16 (SGD, lr 0.05, momentum 0.9), every "
        "run with the same seeds and data order, on this 2-core machine "
        "(4 ranks share its cores). commopt's plans were made by "
        "`comm-optimize` for `bench/cluster/emulated-4x1gbit.json` from a "
        "profile exported by `commopt-export.py` under 4 ranks' load, and "
        "executed by `python/commopt`; sparse plans keep a residual per "
        "parameter and no momentum correction.")
    lines.append("")
    if fidelity:
        epochs = max(len(r["epochs"]) for r in fidelity.values())
        lines.append("### Accuracy (shared memory)")
        lines.append("")
        header = "| run | what synchronises | " + " | ".join(
            f"epoch {e + 1}" for e in range(epochs)) + " | final loss |"
        lines.append(header)
        lines.append("|---|---|" + "---:|" * (epochs + 1))
        for label in ordered(fidelity):
            run = fidelity[label]
            accuracies = [f"{e['test_accuracy']:.2f}%" for e in run["epochs"]]
            accuracies += [""] * (epochs - len(accuracies))
            lines.append(f"| {label} | {run['description']} | " +
                         " | ".join(accuracies) +
                         f" | {run['epochs'][-1]['train_loss']:.4f} |")
        lines.append("")
    if speed:
        lines.append("### Step time on the emulated 4 x 1 Gbit/s cluster")
        lines.append("")
        lines.append("Median step (forward, backward, synchronisation, "
                     "update) over the measured steps; speedup over DDP/gloo "
                     "measured in the same run; predicted: the plan's "
                     "`comm-estimate` step.")
        lines.append("")
        lines.append("| run | step (ms) | vs DDP/gloo | predicted (ms) | "
                     "prediction error |")
        lines.append("|---|---:|---:|---:|---:|")
        ddp = speed.get("ddp", {}).get("epochs", [{}])[0].get(
            "step_ms_median")
        for label in ordered(speed):
            step = speed[label]["epochs"][0]["step_ms_median"]
            versus = f"{ddp / step:.2f}x" if ddp else ""
            predicted = error = ""
            if label in plans:
                predicted_ms = plans[label]["estimate"]["step_us"] / 1e3
                predicted = f"{predicted_ms:.1f}"
                error = f"{(predicted_ms - step) / step * 100:+.1f}%"
            lines.append(f"| {label} | {step:.1f} | {versus} | {predicted} | "
                         f"{error} |")
        lines.append("")

    targets = []

    def accuracy(label):
        run = fidelity.get(label)
        return run["epochs"][-1]["test_accuracy"] if run else None

    def step_ms(label):
        run = speed.get(label)
        return run["epochs"][0]["step_ms_median"] if run else None

    if accuracy("ddp") is not None:
        base = accuracy("ddp")
        for label, bound, name in [("commopt-f32", 0.2, "dense f32"),
                                   ("commopt-f16", 0.5, "f16 wire")]:
            if accuracy(label) is not None:
                gap = base - accuracy(label)
                targets.append(f"| {name} accuracy within {bound} points of "
                               f"DDP | {gap:+.2f} points below | "
                               f"{check(gap <= bound)} |")
        dense = accuracy("commopt-f32")
        for label in ["commopt-threshold-0.001", "commopt-topk-0.001",
                      "commopt-chunk-0.001"]:
            if dense is not None and accuracy(label) is not None:
                gap = dense - accuracy(label)
                targets.append(f"| {label} within 1 point of dense | "
                               f"{gap:+.2f} points below | "
                               f"{check(gap <= 1.0)} |")
    if step_ms("ddp"):
        base = step_ms("ddp")
        if step_ms("commopt-f32"):
            ratio = base / step_ms("commopt-f32")
            targets.append(f"| dense f32 no slower than DDP/gloo | {ratio:.2f}x "
                           f"| {check(ratio >= 1.0)} |")
        if step_ms("commopt-f16"):
            ratio = base / step_ms("commopt-f16")
            targets.append(f"| f16 at least 1.6x DDP/gloo | {ratio:.2f}x | "
                           f"{check(ratio >= 1.6)} |")
        sparse = [label for label in speed if "threshold" in label or
                  "topk" in label or "chunk" in label]
        if sparse:
            best = min(sparse, key=step_ms)
            ratio = base / step_ms(best)
            powersgd = step_ms("ddp-powersgd-2")
            faster = powersgd is None or step_ms(best) < powersgd
            targets.append(f"| best sparse ({best}) at least 4x DDP/gloo and "
                           f"faster than PowerSGD | {ratio:.2f}x; PowerSGD "
                           f"{base / powersgd:.2f}x |"
                           if powersgd else
                           f"| best sparse ({best}) at least 4x DDP/gloo | "
                           f"{ratio:.2f}x |")
            targets[-1] += f" {check(ratio >= 4.0 and faster)} |"
        errors = [abs(plans[label]["estimate"]["step_us"] / 1e3 -
                      step_ms(label)) / step_ms(label)
                  for label in plans if step_ms(label)]
        if errors:
            targets.append(f"| every prediction within 15% | worst "
                           f"{max(errors) * 100:.1f}% | "
                           f"{check(max(errors) <= 0.15)} |")
    if targets:
        lines.append("### Targets")
        lines.append("")
        lines.append("| target | measured | |")
        lines.append("|---|---|---|")
        lines.extend(targets)
        lines.append("")
    lines.append("Reproduce (root, for the emulated cluster):")
    lines.append("")
    lines.append("```sh")
    lines.append("bench/training/run.sh            # fidelity and speed")
    lines.append("```")
    lines.append("")
    lines.append(NOTES)
    section = "\n".join(lines) + "\n"

    replace_section(argv[2], HEADING, section)
    print(section)


if __name__ == "__main__":
    main(sys.argv)
