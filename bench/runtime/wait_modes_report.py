#!/usr/bin/env python3
# ===- wait_modes_report.py - The section "Waiting without polling" -----=== #
#
# Reads the RESULT lines wait_modes.sh collected (commrt-bench, prefixed
# with round=, setting= and wait=auto|poll) and replaces the section
# "## Waiting without polling" of BENCHMARKS.md: per setting, model and
# plan, the median time and CPU seconds per run of each wait mode (medians
# over the rounds), and the ratios auto / poll, each taken within a round
# and the median over rounds reported.
#
# Usage: wait_modes_report.py RESULTS BENCHMARKS.md
#
# ===------------------------------------------------------------------=== #

import datetime
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from benchmarks_md import write_section  # noqa: E402

HEADING = "## Waiting without polling"
SETTINGS = {"shm": "shared memory", "1gbit": "4 x 1 Gbit/s (emulated)",
            "10gbit": "4 x 10 Gbit/s (emulated)"}


def parse(path):
    """{(setting, model, plan): {wait: {round: (time s, cpu s)}}}."""
    results = {}
    with open(path) as handle:
        for line in handle:
            if not line.startswith("RESULT "):
                continue
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            key = (fields["setting"], fields["label"], fields["plan"])
            results.setdefault(key, {}).setdefault(fields["wait"], {})[
                fields["round"]] = (float(fields["median_s"]),
                                    float(fields["cpu_s"]))
    return results


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: wait_modes_report.py RESULTS BENCHMARKS.md")
    results = parse(argv[1])
    rounds = sorted({r for waits in results.values() for runs in
                     waits.values() for r in runs})
    lines = [HEADING, ""]
    lines.append(
        f"Measured on this 2-core Debian VM on {datetime.date.today()} by "
        "`bench/runtime/wait_modes.sh`: `commrt-bench` with 4 ranks on "
        "ResNet-50's and VGG-16's gradients (the plans of \"Runtime on the "
        "emulated cluster\"), each plan's median of its timed runs, once "
        "with the runtime's waits (`COMMRT_WAIT=auto`, the default: where "
        "the ranks talk over the network, tests for 1 ms, then tests "
        "between sleeps of up to 100 us; over shared memory, polling) and "
        "once with MPI_Waitall's polling everywhere (`COMMRT_WAIT=poll`), "
        f"in {len(rounds)} alternating rounds. CPU: seconds of all of a "
        "rank's threads per run, the mean over the ranks. Ratios are auto "
        "/ poll within a round, the median over the rounds; below 1 is "
        "better.")
    lines.append("")
    lines.append("| setting | model | plan | time, auto (s) | time, poll "
                 "(s) | time ratio | CPU, auto (s) | CPU, poll (s) | "
                 "CPU ratio |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for key in sorted(results, key=lambda k: (list(SETTINGS).index(k[0]),
                                              k[1], k[2])):
        waits = results[key]
        if set(waits) != {"auto", "poll"}:
            continue
        common = sorted(set(waits["auto"]) & set(waits["poll"]))

        def median(wait, field):
            return statistics.median(waits[wait][r][field] for r in common)

        def ratio(field):
            return statistics.median(
                waits["auto"][r][field] / waits["poll"][r][field]
                for r in common)
        setting, model, plan = key
        lines.append(
            f"| {SETTINGS.get(setting, setting)} | {model} | {plan} | "
            f"{median('auto', 0):.4f} | {median('poll', 0):.4f} | "
            f"{ratio(0):.2f} | {median('auto', 1):.4f} | "
            f"{median('poll', 1):.4f} | {ratio(1):.2f} |")
    lines.append("")
    lines.append("Reproduce (root, for the emulated cluster):")
    lines.append("")
    write_section(argv[2], HEADING, lines, "bench/runtime/wait_modes.sh")


if __name__ == "__main__":
    main(sys.argv)
