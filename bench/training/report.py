#!/usr/bin/python3
# ===- report.py - The training benchmark's section of BENCHMARKS.md ----=== #
#
# Reads what bench/training/run.sh wrote under OUT (fidelity/*.json and
# fidelity/transformer/*.json: test accuracy per epoch of FashionNet and of
# the patch transformer, plotted into docs/images/ beside BENCHMARKS.md;
# speed/b<B>/*.json: step and CPU times on the emulated
# cluster at batch B per rank, and each commopt run's comparison with its
# predicted timeline; plans/b<B>/*.json: each commopt plan made for batch B
# with the calibrated model, with its estimate, and plans/b<B>/before/ as
# planned before calibration) and replaces the section
# "Training on Fashion-MNIST" of BENCHMARKS.md with the tables and the
# targets of the training issue, each judged against what was measured in
# the same run.
#
#   report.py OUT BENCHMARKS.md
#
# ===------------------------------------------------------------------=== #

import glob
import itertools
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Training on Fashion-MNIST"
ORDER = ["ddp", "ddp-fp16", "ddp-powersgd-2", "ddp-frozen", "commopt-f32",
         "commopt-f16", "commopt-threshold-0.01", "commopt-threshold-0.001",
         "commopt-topk-0.001", "commopt-chunk-0.01", "commopt-chunk-0.001",
         "commopt-threshold-0.001-mc", "commopt-topk-0.001-mc",
         "commopt-chunk-0.001-mc", "commopt-threshold-0.001-warmup",
         "commopt-chunk-0.001-warmup", "commopt-chunk-0.001-c512",
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


def load_plans(folder):
    """{run label: plan} of the plans in `folder` (commopt-NAME for
    NAME.json)."""
    plans = {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        with open(path) as handle:
            plan = json.load(handle)
        if not isinstance(plan, dict) or plan.get("format") != "commopt-plan":
            continue
        plans["commopt-" + os.path.basename(path)[:-5]] = plan
    return plans


def predicted_ms(plans, label, key="step_us"):
    """The plan's estimate of `key` (the step; cpu_us: a rank's CPU) in
    milliseconds, or None."""
    plan = plans.get(label)
    value = plan["estimate"].get(key) if plan else None
    return value / 1e3 if value is not None else None


def furthest_off(speed_folder, label):
    """The first row of the run's comparison with its predicted timeline
    (commopt-timeline compare), or ""."""
    path = os.path.join(speed_folder, f"{label}.compare.txt")
    if not os.path.exists(path):
        return ""
    with open(path) as handle:
        lines = handle.read().splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith("what") and index + 1 < len(lines):
            row = lines[index + 1].split()
            # "WHAT... PREDICTED ms MEASURED ms ERROR ms"
            return " ".join(row[:-6]) + f" ({row[-2]} ms)"
    return ""


def kendall_tau(first, second):
    """Kendall's tau-a of two equally long lists of values."""
    pairs = list(itertools.combinations(range(len(first)), 2))
    if not pairs:
        return None
    def sign(x):
        return (x > 0) - (x < 0)
    score = sum(sign(first[i] - first[j]) * sign(second[i] - second[j])
                for i, j in pairs)
    return score / len(pairs)


def batches(out):
    """The batch sizes with speed runs, largest first."""
    sizes = [int(os.path.basename(d)[1:])
             for d in glob.glob(os.path.join(out, "speed", "b*"))]
    return sorted(sizes, reverse=True)


def load_fidelity(pattern):
    """{label: [run, ...]} of the accuracy runs, one per seed, by seed."""
    runs = {}
    for path in glob.glob(pattern):
        with open(path) as handle:
            run = json.load(handle)
        runs.setdefault(run["label"], []).append(run)
    for seeded in runs.values():
        seeded.sort(key=lambda run: run.get("seed", 0))
    return runs


def mean_sd(values):
    """"84.10 +- 0.35" (mean and sample standard deviation), or the one
    value."""
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.fmean(values):.2f} +- {statistics.stdev(values):.2f}"


def accuracy_lines(fidelity, title="Accuracy", plot=None):
    epochs = max(len(run["epochs"]) for runs in fidelity.values()
                 for run in runs)
    seeds = sorted({run.get("seed", 0) for runs in fidelity.values()
                    for run in runs})
    samples = sorted({run.get("train_samples") for runs in fidelity.values()
                      for run in runs if run.get("train_samples")})
    lines = [f"### {title} (shared memory, batch 16 per rank)", "",
             f"Test accuracy in %, mean +- standard deviation over the "
             f"seeds {', '.join(map(str, seeds))} (each seed: the model's "
             "initialisation and the data order)" +
             (f", {', '.join(map(str, samples))} training samples an epoch"
              if samples else "") + "; *minutes*: one run's training, the "
             "mean over its seeds.", ""]
    lines.append("| run | what synchronises | seeds | " + " | ".join(
        f"epoch {e + 1}" for e in range(epochs)) + " | final loss | "
        "minutes |")
    lines.append("|---|---|---:|" + "---:|" * (epochs + 2))
    for label in ordered(fidelity):
        runs = fidelity[label]
        accuracies = []
        for e in range(epochs):
            values = [run["epochs"][e]["test_accuracy"] for run in runs
                      if e < len(run["epochs"])]
            accuracies.append(mean_sd(values) if values else "")
        losses = [run["epochs"][-1]["train_loss"] for run in runs]
        minutes = [run["seconds"] / 60 for run in runs if "seconds" in run]
        # Plans by file name: their folder is the run's.
        description = re.sub(r"commopt \S*/([^/\s]+): ", r"commopt \1: ",
                             runs[0]["description"])
        lines.append(f"| {label} | {description} | {len(runs)} | " +
                     " | ".join(accuracies) +
                     f" | {statistics.fmean(losses):.4f} | " +
                     (f"{statistics.fmean(minutes):.1f}" if minutes else "") +
                     " |")
    if plot:
        name = title.split(" (")[0].removeprefix("Accuracy: ")
        lines += ["", f"![{name}: mean test accuracy per epoch]({plot})"]
    return lines + [""]


# Line colours of the accuracy plots, one per run, in table order.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
           "#8c6d31", "#843c39", "#7b4173", "#3182bd")


def accuracy_svg(fidelity, title):
    """An SVG plot of each run's mean test accuracy per epoch (its seeds'
    mean), one line per run in table order, with a legend."""
    labels = ordered(fidelity)
    curves = {}
    for label in labels:
        runs = fidelity[label]
        epochs = min(len(run["epochs"]) for run in runs)
        curves[label] = [statistics.fmean(run["epochs"][e]["test_accuracy"]
                                          for run in runs)
                         for e in range(epochs)]
    values = [v for curve in curves.values() for v in curve]
    low, high = math.floor(min(values)) - 1, math.ceil(max(values)) + 1
    epochs = max(len(curve) for curve in curves.values())
    width, height, left, top, plot_w, plot_h = 760, 420, 60, 40, 440, 320

    def x(epoch):
        return left + (plot_w * epoch / max(epochs - 1, 1))

    def y(value):
        return top + plot_h * (high - value) / (high - low)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{title}: mean test '
           'accuracy per epoch (%)</text>',
           f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
           f'y2="{top + plot_h}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" '
           'stroke="black"/>']
    for tick in range(low, high + 1):
        out.append(f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" '
                   f'text-anchor="end">{tick}</text>')
        out.append(f'<line x1="{left}" y1="{y(tick):.1f}" '
                   f'x2="{left + plot_w}" y2="{y(tick):.1f}" '
                   'stroke="#eeeeee"/>')
    for epoch in range(epochs):
        out.append(f'<text x="{x(epoch):.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle">epoch {epoch + 1}</text>')
    for index, label in enumerate(labels):
        colour = PALETTE[index % len(PALETTE)]
        points = " ".join(f"{x(e):.1f},{y(v):.1f}"
                          for e, v in enumerate(curves[label]))
        out.append(f'<polyline points="{points}" fill="none" '
                   f'stroke="{colour}" stroke-width="2"/>')
        legend_y = top + 14 * index
        out.append(f'<line x1="{left + plot_w + 20}" y1="{legend_y}" '
                   f'x2="{left + plot_w + 40}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + plot_w + 46}" y="{legend_y + 4}">'
                   f'{label}</text>')
    return "\n".join(out + ["</svg>", ""])


def write_accuracy_svg(fidelity, title, benchmarks, name):
    """Writes accuracy_svg(...) as docs/images/NAME beside BENCHMARKS.md
    and returns the path to link from it."""
    relative = os.path.join("docs", "images", name)
    path = os.path.join(os.path.dirname(os.path.abspath(benchmarks)),
                        relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(accuracy_svg(fidelity, title))
    return relative


def speed_lines(batch, speed, plans, before, folder):
    lines = [f"### Step time on the emulated 4 x 1 Gbit/s cluster, batch "
             f"{batch} per rank", ""]
    lines.append("| run | step (ms) | vs DDP/gloo | CPU per step (ms) | CPU "
                 "vs DDP | CPU predicted (ms) | predicted before (ms) | "
                 "error before | predicted (ms) | error | furthest off "
                 "(predicted - measured) |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    ddp, ddp_cpu = step_ms(speed, "ddp"), cpu_ms(speed, "ddp")

    def error(predicted, step):
        return f"{(predicted - step) / step * 100:+.1f}%" if predicted else ""

    for label in ordered(speed):
        step, cpu = step_ms(speed, label), cpu_ms(speed, label)
        versus = f"{ddp / step:.2f}x" if ddp else ""
        cpu_text = f"{cpu:.1f}" if cpu is not None else ""
        cpu_versus = f"{cpu / ddp_cpu:.2f}x" if cpu and ddp_cpu else ""
        old, new = predicted_ms(before, label), predicted_ms(plans, label)
        cpu_new = predicted_ms(plans, label, "cpu_us")
        lines.append(
            f"| {label} | {step:.1f} | {versus} | {cpu_text} | {cpu_versus} "
            f"| {f'{cpu_new:.1f}' if cpu_new else ''} "
            f"| {f'{old:.1f}' if old else ''} | {error(old, step)} | "
            f"{f'{new:.1f}' if new else ''} | {error(new, step)} | "
            f"{furthest_off(folder, label)} |")
    return lines + [""]


def step_ms(speed, label):
    run = speed.get(label)
    return run["epochs"][0]["step_ms_median"] if run else None


def cpu_ms(speed, label):
    run = speed.get(label)
    return run["epochs"][0].get("cpu_ms_median") if run else None


def final_accuracies(fidelity, label):
    """{seed: final test accuracy} of run `label`."""
    return {run.get("seed", 0): run["epochs"][-1]["test_accuracy"]
            for run in fidelity.get(label, [])}


def paired_differences(fidelity, label, base):
    """The final accuracy of run `label` minus that of `base`, seed by seed
    (each seed pairs the same initialisation and data order), over the
    seeds both ran."""
    mine, theirs = final_accuracies(fidelity, label), \
        final_accuracies(fidelity, base)
    return [mine[seed] - theirs[seed]
            for seed in sorted(set(mine) & set(theirs))]


# Student's t distribution's 97.5% quantiles for 1..30 degrees of freedom:
# two standard errors would call a difference over 3 seeds at about 82%
# confidence, where these give 95% at any number of seeds.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
         2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
         2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
         2.048, 2.045, 2.042)


def t_975(freedom):
    """The 97.5% quantile of Student's t with `freedom` degrees of freedom
    (Cornish-Fisher's expansion beyond the table, within 0.001 there)."""
    if freedom <= len(T_975):
        return T_975[freedom - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * freedom) + \
        (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * freedom ** 2)


def seeds_to_resolve(differences, bound, most=1000):
    """How many seeds, at the mean and spread of `differences`, would put
    the mean's 95% interval clear of -`bound` on one side; None beyond
    `most`."""
    margin = abs(statistics.fmean(differences) + bound)
    spread = statistics.stdev(differences)
    for seeds in range(len(differences) + 1, most + 1):
        if t_975(seeds - 1) * spread / math.sqrt(seeds) < margin:
            return seeds
    return None


def accuracy_target(fidelity, label, base, bound, what, note=""):
    """The row of "`label` within `bound` points of `base`": the mean of
    the differences seed by seed and its standard error; met where the
    mean's 95% interval (Student's t) lies above -bound, missed where it
    lies below, else within the noise of these seeds (and how many seeds
    would resolve it at this spread), then `note`."""
    differences = paired_differences(fidelity, label, base)
    if not differences:
        return None
    mean = statistics.fmean(differences)
    seeds = len(differences)
    if seeds == 1:
        verdict, spread = check(mean >= -bound), ""
    else:
        error = statistics.stdev(differences) / math.sqrt(seeds)
        spread = f" +- {error:.2f}"
        half = t_975(seeds - 1) * error
        verdict = "met" if mean - half >= -bound else \
            "**missed**" if mean + half < -bound else "within the noise"
        if verdict == "within the noise":
            needed = seeds_to_resolve(differences, bound)
            verdict += (f" (about {needed} seeds would resolve it)"
                        if needed else
                        " (no practical number of seeds resolves it)")
    return (f"| {what} within {bound} points of {base} | {mean:+.2f}"
            f"{spread} ({seeds} seed{'s' if seeds > 1 else ''}) "
            f"| {verdict}{note} |")


def accuracy_targets(fidelity, architecture=""):
    at = f" ({architecture})" if architecture else ""
    rows = [accuracy_target(fidelity, "commopt-f32", "ddp", 0.2,
                            "dense f32 accuracy" + at),
            accuracy_target(fidelity, "commopt-f16", "ddp", 0.3,
                            "f16 wire accuracy" + at)]
    sparsest = [label for label in ordered(fidelity) if "0.001" in label]
    rows += [accuracy_target(fidelity, label, "commopt-f32", 0.5, label + at)
             for label in sparsest]
    # The target names the best sparse plan: the one closest to dense.
    closeness = {}
    for label in sparsest:
        differences = paired_differences(fidelity, label, "commopt-f32")
        if differences:
            closeness[label] = statistics.fmean(differences)
    best = max(closeness, key=closeness.get) if closeness else None
    if len(closeness) > 1:
        rows.append(accuracy_target(
            fidelity, best, "commopt-f32", 0.5,
            f"the best sparse plan at density 0.001 ({best}){at}"))
    # The floor: the sparse gradients' parameters never moved. A sparse
    # plan no better than it passes the target without its sparse layers
    # having learnt anything.
    floor = paired_differences(fidelity, "ddp-frozen", "commopt-f32")
    if floor:
        note = f"; {best} is not above it: at this length the target does " \
            "not test what the sparse plans train" \
            if best and statistics.fmean(floor) >= closeness[best] else ""
        rows.append(accuracy_target(
            fidelity, "ddp-frozen", "commopt-f32", 0.5,
            "the floor: the sparse layers frozen (ddp-frozen)" + at, note))
    return [row for row in rows if row]


def speed_targets(batch, speed, plans):
    targets = []
    base = step_ms(speed, "ddp")
    if not base:
        return targets
    at = f" (batch {batch})"
    ddp_cpu = cpu_ms(speed, "ddp")
    if cpu_ms(speed, "commopt-f32") and ddp_cpu:
        ratio = cpu_ms(speed, "commopt-f32") / ddp_cpu
        targets.append(f"| commopt-f32's CPU per step at most DDP's + 5%{at} "
                       f"| {ratio:.2f}x | {check(ratio <= 1.05)} |")
    measured = [label for label in plans if step_ms(speed, label)]
    if len(measured) >= 2:
        model_first = min(measured, key=lambda label: predicted_ms(plans,
                                                                   label))
        fastest = min(measured, key=lambda label: step_ms(speed, label))
        gap = step_ms(speed, model_first) / step_ms(speed, fastest) - 1
        targets.append(f"| the model's fastest plan ({model_first}) within 3% "
                       f"of the measured fastest ({fastest}){at} | "
                       f"{gap * 100:+.1f}% | {check(gap <= 0.03)} |")
        tau = kendall_tau([predicted_ms(plans, label) for label in measured],
                          [step_ms(speed, label) for label in measured])
        targets.append(f"| the model orders the plans as measured (Kendall "
                       f"tau >= 0.8){at} | {tau:.2f} | {check(tau >= 0.8)} |")
    if step_ms(speed, "commopt-f32"):
        ratio = base / step_ms(speed, "commopt-f32")
        targets.append(f"| dense f32 no slower than DDP/gloo{at} | "
                       f"{ratio:.2f}x | {check(ratio >= 1.0)} |")
    if step_ms(speed, "commopt-f16"):
        ratio = base / step_ms(speed, "commopt-f16")
        targets.append(f"| f16 at least 1.6x DDP/gloo{at} | {ratio:.2f}x | "
                       f"{check(ratio >= 1.6)} |")
    sparse = [label for label in speed
              if label.startswith("commopt-") and label not in
              ("commopt-f32", "commopt-f16")]
    if sparse:
        best = min(sparse, key=lambda label: step_ms(speed, label))
        ratio = base / step_ms(speed, best)
        powersgd = step_ms(speed, "ddp-powersgd-2")
        faster = powersgd is None or step_ms(speed, best) < powersgd
        versus = f"; PowerSGD {base / powersgd:.2f}x" if powersgd else ""
        targets.append(f"| best sparse ({best}) at least 4x DDP/gloo and "
                       f"faster than PowerSGD{at} | {ratio:.2f}x{versus} | "
                       f"{check(ratio >= 4.0 and faster)} |")
    bound = step_ms(speed, "compute-only")
    if bound:
        targets.append(f"| (the bound: compute-only step{at}) | "
                       f"{base / bound:.2f}x DDP/gloo | |")
    errors = [abs(predicted_ms(plans, label) - step_ms(speed, label)) /
              step_ms(speed, label) for label in plans
              if step_ms(speed, label)]
    if errors:
        targets.append(f"| every prediction within 10%{at} | worst "
                       f"{max(errors) * 100:.1f}% | "
                       f"{check(max(errors) <= 0.10)} |")
    return targets


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: report.py OUT BENCHMARKS.md")
    out = argv[1]
    fidelity = load_fidelity(os.path.join(out, "fidelity", "*.json"))

    lines = [HEADING, ""]
    lines.append(
        "`examples/fashion_mnist` (FashionNet: two 5x5 convolutions and a "
        "1568x2048 classifier, 3.27 M parameters, 12.5 MiB of f32 gradients) "
        "trained on 4 ranks (SGD, lr 0.05, momentum 0.9), every run with "
        "the same seeds (initialisation and data order), on this 2-core "
        "machine (4 ranks share its cores). commopt's plans were made by "
        "`comm-optimize` for "
        "`bench/cluster/emulated-4x1gbit.json` and executed by "
        "`python/commopt`; sparse plans keep a residual per parameter, and "
        "the `-mc` runs add Deep Gradient Compression's momentum correction "
        "(planned with it). *Predicted before*: planned as before "
        "calibration, from the profile `commopt-export.py` measured under 4 "
        "ranks' load, for the default device. *Predicted*: planned from "
        "the calibrated model: short runs of four plans (dense f32, "
        "threshold with momentum correction, top-k, chunk) on the same "
        "cluster wrote their measured timelines, and `commopt-timeline fit` "
        "made of them the device description (the host's local-work rates, "
        "the bridge's costs, how fast collectives progress while the ranks "
        "compute, the host CPU a step costs beyond the modelled work), "
        "what a collective costs within the step beyond the cluster's "
        "calibration, and the profile's compute. Step times are medians of "
        "the measured steps (forward, backward, synchronisation, update); "
        "CPU: each rank's CPU seconds per step, every thread, averaged over "
        "the ranks; *CPU predicted*: a rank's CPU per step as the "
        "calibrated model prices it (docs/CostModel.md, section 3.1: 4 "
        "ranks on 2 cores bound the step at twice it); *furthest off*: the "
        "first row of `commopt-timeline "
        "compare` of the run's measured timeline against its plan's "
        "predicted one.")
    lines.append("")
    targets = []
    if fidelity:
        plot = write_accuracy_svg(fidelity, "FashionNet", argv[2],
                                  "training-accuracy-cnn.svg")
        lines += accuracy_lines(fidelity, "Accuracy: FashionNet", plot)
        targets += accuracy_targets(fidelity)
    transformer = load_fidelity(os.path.join(out, "fidelity", "transformer",
                                             "*.json"))
    if transformer:
        plot = write_accuracy_svg(transformer, "Patch transformer", argv[2],
                                  "training-accuracy-transformer.svg")
        lines += accuracy_lines(
            transformer, "Accuracy: patch transformer (a ViT-style model "
            "over 7x7 patches, 0.34 M parameters; its plans are exactly the "
            "options given, search=false, with every gradient of 64 KiB or "
            "more sparse in the sparse plans, sparse-all=true)", plot)
        targets += accuracy_targets(transformer, "transformer")
    for batch in batches(out):
        folder = os.path.join(out, "speed", f"b{batch}")
        speed = load_runs(os.path.join(folder, "*.json"))
        plans = load_plans(os.path.join(out, "plans", f"b{batch}"))
        before = load_plans(os.path.join(out, "plans", f"b{batch}", "before"))
        if speed:
            lines += speed_lines(batch, speed, plans, before, folder)
            targets += speed_targets(batch, speed, plans)
    if targets:
        lines.append("### Targets")
        lines.append("")
        lines.append("| target | measured | |")
        lines.append("|---|---|---|")
        lines.extend(targets)
        lines.append("")
    lines.append("Reproduce (root, for the emulated cluster):")
    lines.append("")
    write_section(argv[2], HEADING, lines,
                  "bench/training/run.sh            # fidelity and speed")


if __name__ == "__main__":
    main(sys.argv)
