#!/usr/bin/env python3
# ===- two_level_report.py - two_level.sh's section of BENCHMARKS.md -----=== #
#
# Reads the RESULT lines two_level.sh collected (OUT/results.txt: settings
# 4x1 and 2x2, commrt-bench and ddp_gloo.py), the link's limit from the
# gradient sizes and the rate, and, when OUT/emulated-2x2.json (the
# calibrated two-level description) exists, what commopt predicts for each
# algorithm on it and which one comm-select-algorithm picks; replaces the
# section "## Two levels on emulated nodes" of BENCHMARKS.md.
#
# Usage: two_level_report.py OUT BENCHMARKS.md
#
# ===----------------------------------------------------------------------=== #

import datetime
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Two levels on emulated nodes"
MODELS = ["resnet50", "vgg16"]
# TCP over Ethernet frames of the emulated links' MTU: payload per frame
# (MTU - 20 IP - 32 TCP with timestamps) over what tbf counts (MTU + 14).
ALGORITHMS = [("ring", "fused-f32-ring"),
              ("hierarchical", "fused-f32-hierarchical"),
              ("tree", "fused-f32-tree")]


def parse(path):
    results = {}
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                results[(fields["setting"], fields["label"],
                         fields["plan"])] = fields
    return results


def elements(out, model):
    with open(os.path.join(out, model + ".sizes")) as f:
        return sum(int(line.split()[0]) for line in f
                   if line.strip() and not line.startswith("#"))


def rate_bits(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", text)
    if not m:
        raise SystemExit("two_level_report.py: cannot read rate " + text)
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


def predictions(opt, cluster, count):
    """commopt's prices (us) of one f32 allreduce of `count` elements with
    each algorithm on `cluster`, and the algorithm comm-select-algorithm
    picks for it."""
    ops = []
    for name, _ in ALGORITHMS:
        ops.append('  %%%s = comm.allreduce %%g {name = "%s", algorithm = '
                   '#comm.algorithm<%s>} : tensor<%dxf32> -> tensor<%dxf32>'
                   % (name, name, name, count, count))
    ops.append('  %%auto = comm.allreduce %%g {name = "auto"} : '
               'tensor<%dxf32> -> tensor<%dxf32>' % (count, count))
    names = [n for n, _ in ALGORITHMS] + ["auto"]
    module = ("func.func @step(%%g: tensor<%dxf32>) -> (%s) {\n%s\n"
              "  return %s : %s\n}\n" % (
                  count, ", ".join(["tensor<%dxf32>" % count] * len(names)),
                  "\n".join(ops), ", ".join("%" + n for n in names),
                  ", ".join(["tensor<%dxf32>" % count] * len(names))))
    with tempfile.NamedTemporaryFile("w", suffix=".mlir",
                                     delete=False) as f:
        f.write(module)
    try:
        text = subprocess.run(
            [opt, f.name, "--comm-estimate=cluster=" + cluster,
             "-o", os.devnull], check=True, capture_output=True,
            text=True).stderr
        prices = {}
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] in names and len(fields) == 6:
                prices[fields[0]] = float(fields[5])
        planned = subprocess.run(
            [opt, f.name, "--comm-select-algorithm=cluster=" + cluster],
            check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    m = re.search(r'name = "auto"[^}]*algorithm = #comm.algorithm<(\w+)>|'
                  r'algorithm = #comm.algorithm<(\w+)>[^}]*name = "auto"',
                  planned)
    chosen = (m.group(1) or m.group(2)) if m else "?"
    return prices, chosen


def main(argv):
    if len(argv) != 3:
        print("usage: two_level_report.py OUT BENCHMARKS.md", file=sys.stderr)
        return 2
    out = argv[1]
    results = parse(os.path.join(out, "results.txt"))
    if not results:
        print("two_level_report.py: no RESULT lines in " + out,
              file=sys.stderr)
        return 1
    any_result = next(iter(results.values()))
    rate = any_result["rate"]
    bits = rate_bits(rate)
    mtu = int(os.environ.get("COMMOPT_CLUSTER_MTU", "1500"))
    payload = (mtu - 52) / (mtu + 14)
    models = [m for m in MODELS if any(k[1] == m for k in results)]

    def t(setting, model, plan):
        r = results.get((setting, model, plan))
        return float(r["median_s"]) if r else None

    def fmt(v, base=None):
        if v is None:
            return "-"
        return "%.3f" % v + (" (%.2fx)" % (base / v) if base else "")

    lines = [HEADING, ""]
    lines.append(
        "Measured on this 2-core Debian VM on %s (OpenMPI 4.1.4, Release "
        "build with clang-22; PyTorch 1.13 from Debian, CPU, gloo) by "
        "`bench/runtime/two_level.sh`, with nothing else running. The fused "
        "f32 allreduce of all of ResNet-50's (25.6 M elements, 102 MB) and "
        "VGG-16's (138.4 M, 553 MB) gradients, as `commrt-bench` runs it "
        "(section above; sums checked exact), on two emulated clusters of "
        "`bench/cluster/emulate.sh` with %s tbf-shaped links between hosts "
        "(MTU %d): **4x1**, four hosts of one rank, and **2x2**, two hosts "
        "of two ranks that share memory (OpenMPI's vader) as the GPUs of a "
        "node share NVLink. Median of %s runs after a warm-up, slowest rank, "
        "seconds. The algorithm is asked per call "
        "(`commrt_group_fused_allreduce`'s `algorithm`): ring = commrt's "
        "pipelined ring over all ranks; hierarchical = reduce-scatter in "
        "each node, the ring across nodes, allgather in each node; tree = "
        "`MPI_Allreduce` (OpenMPI's choice). On 4x1, fused-f32 is the "
        "default, the ring. gloo allreduce is `torch.distributed.all_reduce` "
        "over gloo of one flat f32 tensor of the same elements, the same "
        "operation as the ring's (`ddp_gloo.py`, sum checked exact); "
        "ddp-gloo is PyTorch DDP over gloo (section above), whose figure "
        "leaves out what of its bucket allreduces overlaps the backward. "
        "The link limit is 2(p-1)/p x bytes / rate for the flat "
        "ring (each host's link carries that), (m-1)/m x 2 x bytes / rate "
        "for the hierarchical one (m = 2 nodes); the payload limit divides "
        "it by %.3f, the share of TCP payload in a %d-byte frame as tbf "
        "counts it (%d - 52 header bytes of %d + 14)."
        % (datetime.date.today().isoformat(), rate, mtu, any_result["reps"],
           payload, mtu, mtu, mtu))
    lines.append("")
    lines.append("| Model | setting | ring | hierarchical | tree (MPI) | "
                 "gloo allreduce | ddp-gloo | ring link limit (payload) |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for m in models:
        nbytes = 4 * elements(out, m)
        limit = 2 * 3 / 4 * nbytes * 8 / bits
        for s in ["4x1", "2x2"]:
            ring = t(s, m, "fused-f32") if s == "4x1" else \
                t(s, m, "fused-f32-ring")
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %.3f (%.3f) |"
                         % (m, s, fmt(ring),
                            fmt(t(s, m, "fused-f32-hierarchical"), ring),
                            fmt(t(s, m, "fused-f32-tree"), ring),
                            fmt(t(s, m, "gloo-allreduce"), ring),
                            fmt(t(s, m, "ddp-gloo"), ring), limit,
                            limit / payload))
    lines.append("")
    lines.append("Ratios in parentheses: the ring's time over that plan's "
                 "(above 1, that plan is faster).")
    lines.append("")

    lines.append("Targets:")
    lines.append("")
    lines.append("| Target | Model | value | met |")
    lines.append("|---|---|---:|---|")

    def target(name, model, value, goal, high):
        if value is None:
            return
        met = value >= goal if high else value <= goal
        lines.append("| %s | %s | %.3f | %s |" % (
            name, model, value, "met" if met else "missed"))

    for m in models:
        nbytes = 4 * elements(out, m)
        limit = 2 * 3 / 4 * nbytes * 8 / bits
        ring41 = t("4x1", m, "fused-f32")
        for peer in ["gloo-allreduce", "ddp-gloo"]:
            gloo41 = t("4x1", m, peer)
            if ring41 and gloo41:
                target("4x1: %s / ring (>= 1)" % peer, m, gloo41 / ring41,
                       1.0, True)
        if ring41:
            target("4x1: ring at the link limit (>= 0.97)", m, limit / ring41,
                   0.97, True)
            target("4x1: ring at the payload limit (>= 0.97)", m,
                   limit / payload / ring41, 0.97, True)
        ring22 = t("2x2", m, "fused-f32-ring")
        hier22 = t("2x2", m, "fused-f32-hierarchical")
        if ring22 and hier22:
            target("2x2: ring / hierarchical (>= 1.3)", m, ring22 / hier22,
                   1.3, True)
        for peer in ["gloo-allreduce", "ddp-gloo"]:
            gloo22 = t("2x2", m, peer)
            if gloo22 and hier22:
                target("2x2: %s / hierarchical (>= 1)" % peer, m,
                       gloo22 / hier22, 1.0, True)
    lines.append("")

    cluster = os.path.join(out, "emulated-2x2.json")
    opt = os.path.join(os.environ.get("BUILD", "build"), "bin", "commopt-opt")
    if os.path.exists(cluster) and os.access(opt, os.X_OK):
        lines.append(
            "The model on the calibrated description "
            "(`commopt-calibrate --ranks-per-node=2` on 2x2: the inter-node "
            "level from the ring over all ranks, the intra-node level from "
            "the allreduce within each node), `comm-estimate` of one "
            "allreduce of the model's gradients with each algorithm, and "
            "what `comm-select-algorithm` picks on its own:")
        lines.append("")
        lines.append("| Model | algorithm | predicted (s) | measured (s) | "
                     "error | picked |")
        lines.append("|---|---|---:|---:|---:|---|")
        for m in models:
            prices, chosen = predictions(opt, cluster, elements(out, m))
            for name, plan in ALGORITHMS:
                measured = t("2x2", m, plan)
                predicted = prices.get(name)
                if predicted is None:
                    continue
                predicted /= 1e6
                error = ("%+.1f%%" % ((predicted - measured) / measured * 100)
                         if measured else "-")
                lines.append("| %s | %s | %.3f | %s | %s | %s |" % (
                    m, name, predicted, fmt(measured), error,
                    "yes" if name == chosen else ""))
            fastest = min((t("2x2", m, p), n) for n, p in ALGORITHMS
                          if t("2x2", m, p) is not None)[1]
            lines.append("| %s | | | | | picked %s, measured fastest %s |"
                         % (m, chosen, fastest))
        lines.append("")
    lines.append("Command (as root, after `ninja -C build commrt-bench "
                 "commopt-calibrate commopt-opt`; raw RESULT lines in "
                 "`build/rtbench-two-level/results.txt`):")
    lines.append("")
    write_section(argv[2], HEADING, lines, "bench/runtime/two_level.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
