#!/usr/bin/python3
"""Measured autotuning: times commopt's best few plans of a training step on
the actual ranks and keeps the fastest measured.

    commopt-tune.py resnet50.graph.txt --options="cluster=my-cluster.json \\
        wire=f16" -o tuned.mlir
    commopt-tune.py step.mlir --options="cluster=c.json sparse=true" \\
        --launcher="bench/cluster/emulate.sh run 4 1gbit --" --measure=4

The cost model ranks the candidates and the ranks measure only the best few,
so a handful of trials suffices where a search by measurement alone
(Horovod's autotune: Bayesian optimisation of the fusion threshold and the
cycle time over many training steps) needs dozens.

Candidates. `--options` are comm-optimize's options (docs/Estimate.md). The
ones that change the plan are freedoms, as in comm-optimize's own search:
`wire=f16` (or bf16) also tries the f32 wire, `sparse=true` also tries the
dense plan. Beyond those, every option the user leaves out is explored: the
bucketing (`fusion=cost`, DDP's 25 MiB and Horovod's 64 MiB thresholds,
MG-WFBP's merging) and the channels (the cluster's with priorities, or one
without). Each candidate is planned with `search=false` and priced by
comm-estimate (`estimate=step`, one step from a cold start, which is what the
run times); candidates that give the same plan are measured once.

Measurement. The `--measure` best distinct plans (by the model) each get a
timing @main (comm-add-step-driver: one warm-up step and `--steps` timed
ones, each after a barrier, the slowest rank), are lowered with their
comm.compute ops taking their profiled cost (compute-delay: synthetic
gradients filled, then a sleep for the rest; `--no-delay` fills them and
runs communication only) and run by `--launcher` (default `mpirun -np P`,
P the cluster's ranks) under mlir-runner, with glibc's mmap and trim
thresholds raised (GLIBC_TUNABLES, unless set) so that the step's freed
gradient buffers are reused as a framework's are, `--rounds` times, the plans
alternating round by round so that a slow spell of the machine does not
fall on one plan. A plan's measured step is the median of its timed steps;
the chosen plan is the one with the least, which by construction is never
slower, as measured, than the model's first choice.

Output: a table of the candidates (options, predicted step, measured
median and range, the model's and the measured choice) on stdout;
`--report-file` writes the same as JSON (format "commopt-tune", version 1);
`-o` writes the chosen planned module (before lowering), which
`commopt-translate --export-plan` turns into a plan for python/commopt.

Errors (an input that cannot be read or imported, options comm-optimize
rejects, a run that fails or outlasts `--timeout`, output without step
times) name the candidate and the command, print the tool's own message and
exit with status 1; usage errors exit with 2.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

STEP_LINE = re.compile(r"^commrt: step (\d+): ([0-9.eE+-]+) us$")

# Options the tool explores when the user does not set them.
FUSION_CHOICES = [
    "fusion=cost",
    "fusion=threshold bucket-cap-mb=25",
    "fusion=threshold bucket-cap-mb=64",
    "fusion=mgwfbp",
]
FUSION_KEYS = {"fusion", "bucket-cap-mb"}
CHANNEL_CHOICES = ["", "channels=1 priorities=false"]
CHANNEL_KEYS = {"channels", "priorities"}
# Options the tool sets itself on every candidate.
RESERVED_KEYS = {"search", "estimate", "report", "report-file"}


class TuneError(Exception):
    """A failure the user can act on; the message says what and where."""


def fail(message):
    raise TuneError(message)


def parse_options(text):
    """comm-optimize's option string as (key, value) pairs, in order."""
    pairs = []
    for token in shlex.split(text):
        key, eq, value = token.partition("=")
        if not key:
            fail(f"--options: '{token}' is not an option")
        pairs.append((key, value if eq else "true"))
    for key, _ in pairs:
        if key in RESERVED_KEYS:
            fail(f"--options: '{key}' is set by commopt-tune for every "
                 f"candidate; leave it out")
    if "cluster" not in dict(pairs):
        fail("--options: name the cluster the plans are for (cluster=NAME "
             "or a cluster description file); the measured runs must match "
             "it")
    return pairs


def join(pairs):
    return " ".join(f"{key}={value}" for key, value in pairs)


def candidates(pairs):
    """The candidates as (the options to plan with, the part of them that
    varies), the user's own choice first in each freedom's list."""
    given = dict(pairs)
    fixed = [(k, v) for k, v in pairs if k not in ("wire", "sparse")]
    wires = ["wire=none"]
    if given.get("wire", "none") != "none":
        wires.append("wire=" + given["wire"])
    sparses = ["sparse=false"]
    if given.get("sparse", "false") == "true":
        sparses.append("sparse=true")
    fusions = [""] if FUSION_KEYS & given.keys() else FUSION_CHOICES
    channels = [""] if CHANNEL_KEYS & given.keys() else CHANNEL_CHOICES
    base = join(fixed)
    out = []
    for fusion in fusions:
        for channel in channels:
            for wire in reversed(wires):
                for sparse in reversed(sparses):
                    varied = " ".join(p for p in (fusion, channel, wire,
                                                  sparse) if p)
                    out.append((f"{base} {varied}", varied))
    return out


def run(command, what, timeout=None, environment=None):
    """Runs `command` (in `environment`, else this process's); fails naming
    `what` and the command when it fails."""
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=timeout, env=environment)
    except FileNotFoundError:
        fail(f"{what}: cannot run {command[0]}: no such program")
    except subprocess.TimeoutExpired:
        fail(f"{what}: did not finish within {timeout} s (--timeout): "
             f"{shlex.join(command)}")
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()
                         [-15:])
        fail(f"{what}: {shlex.join(command)} exited with status "
             f"{done.returncode}:\n{tail}")
    return done


def import_step(tools, path, work):
    """The step as MLIR: the file itself, or its import."""
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    if path.endswith(".mlir"):
        return path
    flag = ("--import-grad-profile" if path.endswith(".json")
            else "--import-pipedream")
    out = os.path.join(work, "step.mlir")
    run([tools["translate"], flag, path, "-o", out], f"importing {path}")
    return out


def plan(tools, step, options, index, work):
    """Plans `step` with `options`; returns the planned module's path and
    the report, or the first line of the error."""
    planned = os.path.join(work, f"candidate-{index}.mlir")
    report = os.path.join(work, f"candidate-{index}.json")
    command = [tools["opt"], step, "-o", planned,
               f"--comm-optimize={options} search=false estimate=step "
               f"report=json report-file={report}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        # The first diagnostic, without its location.
        lines = [line.split("error: ", 1)[1] for line in
                 done.stderr.splitlines() if "error: " in line]
        lines = lines or done.stderr.strip().splitlines() or [
            f"{tools['opt']} exited with status {done.returncode}"]
        return None, None, lines[0].strip()
    with open(report) as f:
        return planned, json.load(f), None


def lower(tools, planned, steps, delay, index, work):
    lowered = os.path.join(work, f"candidate-{index}.lowered.mlir")
    lowering = "--commopt-lower-to-llvm" + ("=compute-delay" if delay else "")
    run([tools["opt"], planned, f"--comm-add-step-driver=steps={steps + 1}",
         lowering, "-o", lowered], f"lowering candidate {index}")
    return lowered


# A lowered skeleton allocates its gradients afresh every step, where a
# framework keeps them (PyTorch's caching allocator); glibc would hand the
# freed blocks back to the kernel and fault them in again, zeroed, the next
# step. The runs keep them, unless the caller set glibc's tunables.
SKELETON_TUNABLES = ("glibc.malloc.mmap_threshold=33554432:"
                     "glibc.malloc.trim_threshold=4294967296")


def measure(tools, launcher, lowered, index, timeout):
    """One run of the lowered candidate: its timed steps (us), without the
    warm-up step 0."""
    command = launcher + [tools["runner"], lowered, "-e", "main",
                          "-entry-point-result=void",
                          "-shared-libs=" + ",".join(tools["libs"])]
    environment = dict(os.environ)
    environment.setdefault("GLIBC_TUNABLES", SKELETON_TUNABLES)
    done = run(command, f"running candidate {index}", timeout, environment)
    steps = {}
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        match = STEP_LINE.match(line.strip())
        if match:
            steps[int(match.group(1))] = float(match.group(2))
    timed = [us for step, us in sorted(steps.items()) if step > 0]
    if not timed:
        fail(f"running candidate {index}: no 'commrt: step N: T us' lines "
             f"after the warm-up step in the output of "
             f"{shlex.join(command)}")
    return timed


def find_tools(args):
    build = os.path.abspath(args.build)
    llvm = args.llvm_dir
    # lib/ in a build folder, lib/ or lib/<multiarch>/ in an install.
    commrt = ([path for path in [os.path.join(build, "lib", "libcommrt.so")]
               + sorted(glob.glob(os.path.join(build, "lib", "*",
                                               "libcommrt.so")))
               if os.path.exists(path)]
              or [os.path.join(build, "lib", "libcommrt.so")])[0]
    tools = {
        "opt": os.path.join(build, "bin", "commopt-opt"),
        "translate": os.path.join(build, "bin", "commopt-translate"),
        "runner": os.path.join(llvm, "bin", "mlir-runner"),
        "libs": [commrt,
                 os.path.join(llvm, "lib", "libmlir_c_runner_utils.so"),
                 os.path.join(llvm, "lib", "libmlir_runner_utils.so")],
    }
    for path in [tools["opt"], tools["translate"], tools["runner"]] + \
            tools["libs"]:
        if not os.path.exists(path):
            fail(f"{path} not found: build commopt first (--build) or point "
                 f"--llvm-dir at LLVM 22")
    return tools


def ms(us):
    return f"{us / 1e3:.2f}"


def tune(args):
    pairs = parse_options(args.options)
    tools = find_tools(args)
    with tempfile.TemporaryDirectory(prefix="commopt-tune-") as work:
        step = import_step(tools, args.input, work)
        # The user's options as given first: an invalid value fails here,
        # not only in the candidates that keep it.
        _, _, error = plan(tools, step, join(pairs), "given", work)
        if error:
            fail(f"--options: comm-optimize rejects them: {error}")
        rows = []
        for index, (options, varied) in enumerate(candidates(pairs)):
            planned, report, error = plan(tools, step, options, index, work)
            row = {"options": options, "varied": varied, "index": index}
            if error:
                row["failure"] = error
            else:
                row["predicted_us"] = sum(
                    f["step_us"] for f in report["functions"])
                row["ranks"] = report["cluster"]["ranks"]
                with open(planned, "rb") as f:
                    row["digest"] = hashlib.sha256(f.read()).hexdigest()
                row["planned"] = planned
            rows.append(row)
        planned_rows = [r for r in rows if "predicted_us" in r]
        if not planned_rows:
            fail("no candidate could be planned; the first error: "
                 + rows[0]["failure"])
        planned_rows.sort(key=lambda r: (r["predicted_us"], r["index"]))

        # The best distinct plans by the model.
        chosen, seen = [], {}
        for row in planned_rows:
            if row["digest"] in seen:
                row["same_plan_as"] = seen[row["digest"]]["varied"]
                continue
            seen[row["digest"]] = row
            if len(chosen) < args.measure:
                chosen.append(row)
        ranks = planned_rows[0]["ranks"]
        launcher = (shlex.split(args.launcher) if args.launcher
                    else ["mpirun", "-np", str(ranks)])
        for row in chosen:
            row["lowered"] = lower(tools, row["planned"], args.steps,
                                   not args.no_delay, row["index"], work)
            row["measured_us"] = []
        for round_ in range(args.rounds):
            for row in chosen:
                print(f"commopt-tune: round {round_ + 1}/{args.rounds}, "
                      f"candidate {row['index']} ({row['varied']})",
                      file=sys.stderr, flush=True)
                row["measured_us"] += measure(tools, launcher, row["lowered"],
                                              row["index"], args.timeout)
        for row in chosen:
            row["median_us"] = statistics.median(row["measured_us"])
        model_choice = planned_rows[0]
        best = min(chosen, key=lambda r: (r["median_us"], r["index"]))
        if args.output:
            with open(best["planned"]) as f, open(args.output, "w") as out:
                out.write(f.read())
        report = make_report(args, rows, planned_rows, model_choice, best,
                             ranks, launcher)
    print_table(report)
    if args.report_file:
        with open(args.report_file, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")


def make_report(args, rows, planned_rows, model_choice, best, ranks,
                launcher):
    entries = []
    order = planned_rows + [r for r in rows if "failure" in r]
    for row in order:
        entry = {"options": row["options"], "varied": row["varied"]}
        for key in ("predicted_us", "failure", "same_plan_as", "median_us",
                    "measured_us"):
            if key in row:
                entry[key] = row[key]
        entry["model_choice"] = row is model_choice
        entry["measured_choice"] = row is best
        entries.append(entry)
    measured_first = model_choice.get("median_us")
    return {
        "format": "commopt-tune", "version": 1,
        "input": args.input, "options": args.options, "ranks": ranks,
        "launcher": shlex.join(launcher), "steps": args.steps,
        "rounds": args.rounds, "compute_delay": not args.no_delay,
        "candidates": entries,
        "model_choice": model_choice["varied"],
        "measured_choice": best["varied"],
        "measured_choice_over_model_choice": (
            best["median_us"] / measured_first if measured_first else None),
    }


def print_table(report):
    print(f"commopt-tune: {len(report['candidates'])} candidates for "
          f"{report['input']} with --options=\"{report['options']}\" on "
          f"{report['ranks']} ranks ({report['launcher']}); "
          f"{report['steps']} timed steps x {report['rounds']} rounds of "
          f"each of the best distinct plans")
    print(f"  {'candidate':62} {'predicted':>10} {'measured':>10} "
          f"{'range':>17}")
    for entry in report["candidates"]:
        if "failure" in entry:
            print(f"  {entry['varied']:62} failed: {entry['failure']}")
            continue
        measured = rng = ""
        if "median_us" in entry:
            measured = ms(entry["median_us"])
            rng = (f"{ms(min(entry['measured_us']))}.."
                   f"{ms(max(entry['measured_us']))}")
        elif "same_plan_as" in entry:
            measured = "same plan"
        marks = []
        if entry["model_choice"]:
            marks.append("model's choice")
        if entry["measured_choice"]:
            marks.append("chosen")
        print(f"  {entry['varied']:62} {ms(entry['predicted_us']):>10} "
              f"{measured:>10} {rng:>17}"
              + (f"  <- {', '.join(marks)}" if marks else ""))
    print("  (step times in ms: predicted by comm-estimate, measured median "
          "and range of the timed steps)")
    ratio = report["measured_choice_over_model_choice"]
    print(f"chosen: {report['measured_choice']}; measured "
          f"{ratio:.3f}x the model's choice")


def main(argv):
    parser = argparse.ArgumentParser(
        prog="commopt-tune.py",
        description="Times commopt's best few plans of a training step on "
        "the actual ranks and keeps the fastest measured.")
    parser.add_argument("input", help="the step: MLIR, a gradient profile "
                        "(.json) or a pipedream graph.txt")
    parser.add_argument("--options", required=True,
                        help="comm-optimize's options, with cluster=")
    parser.add_argument("-o", "--output", help="write the chosen planned "
                        "module here")
    parser.add_argument("--report-file", help="write the JSON report here")
    parser.add_argument("--measure", type=int, default=3,
                        help="distinct plans to measure (default 3)")
    parser.add_argument("--steps", type=int, default=3,
                        help="timed steps per run (default 3)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="runs of each measured plan (default 2)")
    parser.add_argument("--launcher", help="command that runs a program on "
                        "the ranks (default: mpirun -np P)")
    parser.add_argument("--no-delay", action="store_true",
                        help="do not sleep the profiled compute: time the "
                        "communication alone")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds a run may take (default 600)")
    here = os.path.dirname(os.path.abspath(__file__))
    # Installed beside commopt-opt (PREFIX/bin), the prefix has bin/ and
    # lib/ as a build folder does; in the checkout, its build/.
    installed = os.path.exists(os.path.join(here, "commopt-opt"))
    parser.add_argument("--build", default=os.path.join(
                            here, "..") if installed else os.path.join(
                            here, "..", "..", "build"),
                        help="commopt's build folder or install prefix "
                        "(default: the install this script is in, else the "
                        "checkout's build/)")
    parser.add_argument("--llvm-dir", default="/usr/lib/llvm-22",
                        help="LLVM 22's prefix, for mlir-runner and its "
                        "runtime libraries (default /usr/lib/llvm-22)")
    args = parser.parse_args(argv)
    for name in ("measure", "steps", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if not args.timeout > 0:
        parser.error("--timeout must be positive")
    try:
        tune(args)
    except TuneError as error:
        print(f"commopt-tune: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
