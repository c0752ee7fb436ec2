# ===- report.py - The section "Consistency checks" of BENCHMARKS.md ---=== #
#
#   python3 bench/checks/report.py RESULTS BENCHMARKS.md
#
# RESULTS holds commrt-bench's RESULT lines, each prefixed with
# checks=<COMMRT_CHECK> by run.sh. Times are step medians of the slowest
# rank; ratios are against COMMRT_CHECK=0 of the same model and plan,
# measured in the same run.
#
# ===------------------------------------------------------------------=== #

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import benchmarks_md  # noqa: E402

HEADING = "## Consistency checks"
CHECKS = ["0", "first", "1"]


def parse(path):
    """{(label, plan, checks): median seconds}."""
    results = {}
    with open(path) as handle:
        for line in handle:
            fields = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
            key = (fields["label"], fields["plan"], fields["checks"])
            results[key] = float(fields["median_s"])
    return results


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: report.py RESULTS BENCHMARKS.md")
    results = parse(argv[0])
    rows = sorted({(label, plan) for label, plan, _ in results})
    lines = [
        HEADING, "",
        f"Measured on this 2-core Debian VM on {datetime.date.today()} by "
        "`bench/checks/run.sh`: commrt-bench's per-tensor plan (one "
        "`commrt_allreduce` per gradient, 161 a step for ResNet-50 and 32 "
        "for VGG-16: the most checks a step can need) and fused-f32 plan "
        "(one collective a step), 4 ranks on shared memory, step time of "
        "the slowest rank, median of the timed runs after one untimed "
        "warm-up step. `COMMRT_CHECK=first` (the default) checks the first "
        "call of each distinct collective, so only the warm-up step pays; "
        "`COMMRT_CHECK=1` checks every call with one small allreduce. Times "
        "in seconds (ratio to `COMMRT_CHECK=0`, measured in the same run):",
        "",
        "| Model | Plan | COMMRT_CHECK=0 | first (default) | 1 (every call) |",
        "|---|---|---:|---:|---:|",
    ]
    for label, plan in rows:
        base = results.get((label, plan, "0"))
        cells = []
        for checks in CHECKS:
            value = results.get((label, plan, checks))
            if value is None:
                cells.append("-")
            elif checks == "0" or not base:
                cells.append(f"{value:.4f}")
            else:
                cells.append(f"{value:.4f} ({value / base:.2f})")
        lines.append(f"| {label} | {plan} | " + " | ".join(cells) + " |")
    lines.append("")
    benchmarks_md.write_section(argv[1], HEADING, lines, "bench/checks/run.sh")


if __name__ == "__main__":
    main(sys.argv[1:])
