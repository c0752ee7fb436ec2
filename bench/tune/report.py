#!/usr/bin/env python3
# ===- report.py - bench/tune/run.sh's section of BENCHMARKS.md ---------=== #
#
# Reads commopt-tune's JSON reports (one per model) and replaces the section
# "## Measured autotuning" of BENCHMARKS.md: for each model, the candidates
# the ranks measured with their predicted and measured steps, and the
# measured choice against the model's first choice.
#
# Usage: report.py BENCHMARKS.md RATE CLUSTER REPORT.json...
#
# ===------------------------------------------------------------------=== #

import datetime
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Measured autotuning"


def ms(us):
    return "%.1f" % (us / 1e3)


def main(argv):
    if len(argv) < 5:
        print("usage: report.py BENCHMARKS.md RATE CLUSTER REPORT.json...",
              file=sys.stderr)
        return 2
    path, rate, cluster = argv[1:4]
    reports = []
    for name in argv[4:]:
        with open(name) as f:
            reports.append((os.path.basename(name)[:-len(".json")],
                            json.load(f)))
    first = reports[0][1]
    lines = [HEADING, ""]
    lines.append(
        "`tools/commopt-tune/commopt-tune.py` on pipedream's measured "
        "profiles, for the calibrated emulated cluster `%s` (4 hosts of "
        "`bench/cluster/emulate.sh` at %s), with `wire=f16` allowed: the "
        "model ranks %d candidates (4 bucketings x 2 channel settings x 2 "
        "wires), the best distinct plans run on the emulated hosts with "
        "their compute slept (compute-delay), %d rounds of %d timed steps "
        "each, the plans alternating, and the fastest measured median is "
        "kept. Measured on this 2-core Debian VM on %s (OpenMPI 4.1.4, "
        "Release build with clang-22), nothing else running. Step times in "
        "ms." % (cluster, rate, len(first["candidates"]), first["rounds"],
                 first["steps"], datetime.date.today().isoformat()))
    lines.append("")
    lines.append("| model | candidate | predicted | measured median | "
                 "range | error | |")
    lines.append("|---|---|---:|---:|---:|---:|---|")
    summary = []
    for model, report in reports:
        for entry in report["candidates"]:
            if "median_us" not in entry:
                continue
            marks = []
            if entry["model_choice"]:
                marks.append("model's choice")
            if entry["measured_choice"]:
                marks.append("measured choice")
            error = ((entry["predicted_us"] - entry["median_us"])
                     / entry["median_us"] * 100)
            lines.append("| %s | `%s` | %s | %s | %s..%s | %+.1f%% | %s |" % (
                model, entry["varied"], ms(entry["predicted_us"]),
                ms(entry["median_us"]), ms(min(entry["measured_us"])),
                ms(max(entry["measured_us"])), error, ", ".join(marks)))
        summary.append((model, report))
    lines.append("")
    lines.append("| model | candidates planned | measured | model's choice "
                 "| measured choice | measured choice / model's choice |")
    lines.append("|---|---:|---:|---|---|---:|")
    for model, report in summary:
        measured = sum(1 for e in report["candidates"] if "median_us" in e)
        lines.append("| %s | %d | %d | `%s` | `%s` | %.3f |" % (
            model, len(report["candidates"]), measured,
            report["model_choice"], report["measured_choice"],
            report["measured_choice_over_model_choice"]))
    lines.append("")
    lines.append("Target: the measured choice is never slower than the "
                 "model's first choice (a ratio of at most 1): %s." % (
                     "met" if all(r["measured_choice_over_model_choice"] <= 1
                                  for _, r in summary) else "missed"))
    lines.append("")
    lines.append("Command (as root, after `ninja -C build commopt-opt "
                 "commopt-translate commrt`; reports in `build/tune/`):")
    lines.append("")
    write_section(path, HEADING, lines, "bench/tune/run.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
