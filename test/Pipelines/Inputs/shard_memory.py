"""comm-optimize's sharded plans respect their memory limit.

Plans each module sharded (shard=grad and shard=full) without a limit and
then under limits from its unlimited plan's peak down to its smallest
plan's, reading the step and the peak memory per rank from comm-estimate's
JSON report, and checks that no plan's peak exceeds its limit; that a
higher limit never gives a slower plan (the plans that fit a lower limit fit
a higher one); that limits below the smallest plan are refused with an
error naming its peak; that the prefetch depth chosen by cost is
never slower than FSDP's fixed depths 0 and 1; and that f16 on the wire
never makes a sharded plan slower.

usage: shard_memory.py BIN_DIR PIPEDREAM_DIR WORK_DIR
"""

import json
import math
import os
import re
import subprocess
import sys

from never_worse import TOLERANCE, import_modules, require_no_slower

MIB = 1024 * 1024
# Limits between the smallest plan's peak (0) and the unlimited plan's (1),
# which all fit, and below the smallest, as fractions of it, which none do.
FRACTIONS = [1.0, 0.75, 0.5, 0.25, 0.1, 0.0]
BELOW = [0.9, 0.5]
REFUSED = re.compile(r"no sharded plan fits in \S+ MiB per rank; the smallest "
                     r"of \d+ plans holds ([0-9.]+) MiB at once")


def plan(opt, module, cluster, options, report):
    """Plans `module` sharded with `options`; returns (step_us, peak bytes),
    or the smallest peak in MiB named by the error where no plan fits."""
    result = subprocess.run(
        [opt, module, "-o", os.devnull,
         f"--comm-optimize=cluster={cluster} {' '.join(options)} "
         f"estimate=step report=json report-file={report}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        refused = REFUSED.search(result.stderr)
        if not refused:
            sys.exit(f"{module} {options}: failed without the memory "
                     f"limit's error:\n{result.stderr}")
        return None, float(refused.group(1))
    with open(report) as f:
        (function,) = json.load(f)["functions"]
    return function["step_us"], function["peak_memory_bytes"]


def main():
    bin_dir, pipedream, work = sys.argv[1:4]
    opt = os.path.join(bin_dir, "commopt-opt")
    translate = os.path.join(bin_dir, "commopt-translate")
    os.makedirs(work, exist_ok=True)

    modules = import_modules(translate, pipedream, work, ["ethernet10-16"],
                             2, ["gradientflow-64"])

    report = os.path.join(work, "estimate.json")
    limited = refused = depths = wires = 0
    for module, (cluster,) in modules:
        name = os.path.basename(module)
        for stage in ["grad", "full"]:
            shard = [f"shard={stage}"]
            step_us, peak = plan(opt, module, cluster, shard, report)
            if step_us is None:
                sys.exit(f"{name} {stage}: refused without a limit")
            # The error of a limit too low names the smallest peak.
            _, smallest_mb = plan(opt, module, cluster,
                                  shard + ["shard-memory-limit-mb=0.000001"],
                                  report)
            previous_us = step_us
            for fraction in FRACTIONS:
                # Rounded up, so that the first limit is the peak's, and
                # the smallest, named to 2 decimals, fits its own.
                limit_mb = smallest_mb + 0.01 + \
                    (peak / MIB - smallest_mb) * fraction
                limit_mb = math.ceil(limit_mb * 1e6) / 1e6
                options = shard + [f"shard-memory-limit-mb={limit_mb:.6f}"]
                limited_us, held = plan(opt, module, cluster, options, report)
                where = f"{name} {stage} within {limit_mb:.3f} MiB"
                if limited_us is None:
                    sys.exit(f"{where}: refused, though the smallest plan "
                             f"holds {held} MiB")
                if held > limit_mb * MIB * (1 + TOLERANCE):
                    sys.exit(f"{where}: the plan holds {held / MIB} MiB")
                require_no_slower(previous_us, limited_us,
                                  f"{where}: {limited_us:.3f} us, faster "
                                  f"than under a higher limit "
                                  f"({previous_us:.3f} us)")
                previous_us = limited_us
                limited += 1
            for fraction in BELOW:
                limit_mb = smallest_mb * fraction
                options = shard + [f"shard-memory-limit-mb={limit_mb:.6f}"]
                limited_us, held = plan(opt, module, cluster, options, report)
                if limited_us is not None or held != smallest_mb:
                    sys.exit(f"{name} {stage} within {limit_mb:.3f} MiB: "
                             f"not refused with the smallest peak, "
                             f"{smallest_mb} MiB")
                refused += 1
            for depth in [0, 1]:
                fixed_us, _ = plan(opt, module, cluster,
                                   shard + [f"shard-prefetch={depth}"], report)
                require_no_slower(step_us, fixed_us,
                                  f"{name} {stage}: the prefetch by cost "
                                  f"plans {step_us:.3f} us, slower than "
                                  f"prefetch {depth} ({fixed_us:.3f} us)")
                depths += 1
            wire_us, _ = plan(opt, module, cluster, shard + ["wire=f16"],
                              report)
            require_no_slower(wire_us, step_us,
                              f"{name} {stage}: f16 on the wire plans "
                              f"{wire_us:.3f} us, slower than f32 "
                              f"({step_us:.3f} us)")
            wires += 1
    print(f"within the limit, never slower for a higher one: {limited} "
          f"plans, {refused} limits refused: OK")
    print(f"prefetch by cost never slower than 0 or 1: {depths} cases: OK")
    print(f"f16 on the wire never slower: {wires} cases: OK")


if __name__ == "__main__":
    main()
