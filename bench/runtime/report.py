#!/usr/bin/env python3
# ===- report.py - The runtime benchmark's section of BENCHMARKS.md -------=== #
#
# Reads the RESULT lines run.sh collected (commrt-bench and ddp_gloo.py,
# prefixed with setting=shm|10gbit|1gbit) and replaces the section
# "## Runtime on the emulated cluster" of BENCHMARKS.md (appending it when
# absent) with the times, the four target ratios and whether each is met.
#
# Usage: report.py RESULTS BENCHMARKS.md
#
# ===----------------------------------------------------------------------=== #

import datetime
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Runtime on the emulated cluster"
SETTING_NAMES = {"shm": "shared memory, 4 ranks",
                 "10gbit": "4 x 10 Gbit/s (emulated)",
                 "1gbit": "4 x 1 Gbit/s (emulated)"}
PLANS = ["per-tensor-mpi", "per-tensor", "fused-f32", "fused-f16",
         "sparse-allgather", "sparse-hash", "sparse-chunk", "ddp-gloo"]


def parse(path):
    results = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            results[(fields["setting"], fields["label"], fields["plan"])] = \
                fields
    return results


def main(argv):
    if len(argv) != 3:
        print("usage: report.py RESULTS BENCHMARKS.md", file=sys.stderr)
        return 2
    results = parse(argv[1])
    settings = [s for s in ["shm", "10gbit", "1gbit"]
                if any(k[0] == s for k in results)]
    models = [m for m in ["resnet50", "vgg16"]
              if any(k[1] == m for k in results)]

    def t(setting, model, plan):
        r = results.get((setting, model, plan))
        return float(r["median_s"]) if r else None

    lines = [HEADING, ""]
    lines.append(
        "Measured on this 2-core Debian VM on %s (OpenMPI 4.1.4, Release "
        "build with clang-22; PyTorch 1.13 from Debian, CPU, gloo) by "
        "`bench/runtime/run.sh`. Gradients are the real "
        "parameter sizes of torchvision's ResNet-50 (161 tensors, 25.6 M "
        "elements, 102 MB f32) and VGG-16 (32 tensors, 138.4 M elements, "
        "553 MB), in backward order (`model_sizes.py`, `weights=None`). "
        "4 ranks; shared memory is `mpirun --oversubscribe` with the vader "
        "BTL, the emulated settings are `bench/cluster/emulate.sh` (one rank "
        "per tbf-shaped namespace, TCP; section above). Every time is the "
        "median of %s timed runs after 1 warm-up, each after a barrier, "
        "slowest rank." % (datetime.date.today().isoformat(),
                           next(iter(results.values()))["reps"]
                           if results else "?"))
    lines.append("")
    lines.append(
        "Plans (`commrt-bench`): per-tensor-mpi = one plain `MPI_Allreduce` "
        "per gradient (OpenMPI's own algorithm choice; the baseline without "
        "commrt); per-tensor = one `commrt_allreduce` per gradient (commrt's "
        "pipelined ring from 1 MiB on, `MPI_Allreduce` below); fused-f32 = "
        "one `commrt_fused_allreduce` of all (the ring over the buffers "
        "themselves, no packing); "
        "fused-f16 = the same with `COMMRT_F16` on the wire and prescale "
        "1/4 (packed, then the ring over f16); sparse-* = `commrt_sparse_allreduce` at density 0.001 for every "
        "gradient of at least 65536 elements (42 of ResNet-50's, 13 of "
        "VGG-16's, 99.0% / 99.98% of the elements), the smaller ones in one "
        "fused f32 allreduce after them; sparse-allgather and sparse-hash "
        "select by threshold, sparse-chunk selects and exchanges chunks of "
        "4096 elements. Values are integers in [-32768, 32767] that differ "
        "per rank; the first run of every plan is checked (dense f32 sums "
        "exact, f16 within 2^-8 relative, sparse results equal to the sum of "
        "what the ranks sent, by a weighted checksum); all passed unless "
        "marked. ddp-gloo = PyTorch DDP, gloo, default 25 MiB buckets, one "
        "flat `nn.Parameter` per gradient, loss whose gradients are "
        "constants: its time is the median `loss.backward()` under DDP minus "
        "the median under `no_sync()` (the same backward without allreduce), "
        "so it is DDP's communication, including what it overlaps with the "
        "(near-empty) backward.")
    lines.append("")
    lines.append("Times in seconds (ratio to fused-f32 in parentheses):")
    lines.append("")
    header = "| Setting | Model | " + " | ".join(PLANS) + " |"
    lines.append(header)
    lines.append("|---|---|" + "---:|" * len(PLANS))
    for s in settings:
        for m in models:
            base = t(s, m, "fused-f32")
            cells = []
            for p in PLANS:
                v = t(s, m, p)
                r = results.get((s, m, p))
                if v is None:
                    cells.append("-")
                    continue
                cell = "%.3f" % v
                if base and p != "fused-f32":
                    cell += " (%.2f)" % (v / base)
                if r.get("check") != "ok":
                    cell += " FAILED"
                cells.append(cell)
            lines.append("| %s | %s | %s |" % (SETTING_NAMES[s], m,
                                                " | ".join(cells)))
    lines.append("")
    densities = sorted({(k[1], k[2], v["sent_density"])
                        for k, v in results.items()
                        if k[2].startswith("sparse") and k[0] == "shm"})
    if densities:
        lines.append(
            "Density actually sent by the sparse plans (entries sent / "
            "elements of the sparse gradients, per rank): " + "; ".join(
                "%s %s %.4f%%" % (m, p, float(d) * 100)
                for m, p, d in densities) + ".")
        lines.append("")

    lines.append("Targets (time ratios; met / missed per setting):")
    lines.append("")
    lines.append("| Target | " + " | ".join(SETTING_NAMES[s]
                                           for s in settings) + " |")
    lines.append("|---|" + "---:|" * len(settings))

    def row(name, f, goal, better_high):
        cells = []
        for s in settings:
            v = f(s)
            if v is None:
                cells.append("-")
                continue
            met = v >= goal if better_high else v <= goal
            cells.append("%.2fx %s" % (v, "met" if met else "missed"))
        lines.append("| %s | %s |" % (name, " | ".join(cells)))

    def ratio(a, b):
        return a / b if a is not None and b else None

    row("ResNet-50: per-tensor-mpi / fused-f32 (>= 1.3x)",
        lambda s: ratio(t(s, "resnet50", "per-tensor-mpi"),
                        t(s, "resnet50", "fused-f32")), 1.3, True)
    row("ResNet-50: per-tensor (commrt) / fused-f32 (>= 1.3x)",
        lambda s: ratio(t(s, "resnet50", "per-tensor"),
                        t(s, "resnet50", "fused-f32")), 1.3, True)
    row("VGG-16: fused-f16 / fused-f32 (<= 0.6x)",
        lambda s: ratio(t(s, "vgg16", "fused-f16"),
                        t(s, "vgg16", "fused-f32")), 0.6, False)

    def best_sparse(s, m):
        v = [t(s, m, p) for p in PLANS if p.startswith("sparse")]
        v = [x for x in v if x is not None]
        return min(v) if v else None

    row("VGG-16: fused-f32 / fastest sparse 0.1% (>= 5x)",
        lambda s: ratio(t(s, "vgg16", "fused-f32"), best_sparse(s, "vgg16")),
        5.0, True)
    row("VGG-16: fused-f32 / sparse-allgather 0.1% (>= 5x)",
        lambda s: ratio(t(s, "vgg16", "fused-f32"),
                        t(s, "vgg16", "sparse-allgather")), 5.0, True)
    row("ResNet-50: ddp-gloo / fused-f32 (>= 1x)",
        lambda s: ratio(t(s, "resnet50", "ddp-gloo"),
                        t(s, "resnet50", "fused-f32")), 1.0, True)
    row("VGG-16: ddp-gloo / fused-f32 (>= 1x)",
        lambda s: ratio(t(s, "vgg16", "ddp-gloo"),
                        t(s, "vgg16", "fused-f32")), 1.0, True)
    lines.append("")
    lines.append("Command (as root, after `ninja -C build commrt-bench`; "
                 "raw RESULT lines in `build/rtbench/results.txt`):")
    lines.append("")
    write_section(argv[2], HEADING, lines, "bench/runtime/run.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv))
