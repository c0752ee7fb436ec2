#!/usr/bin/python3
"""Checks that the defaults commopt-opt --help states are the real ones.

Reads the leading section of `commopt-opt --help` (commopt's passes, each
option's description ending in "(default: X)"), asks commopt-opt for each
pass's actual option values with --dump-pass-pipeline, and compares them.
Pipelines (comm-optimize, commopt-lower-to-llvm) are skipped: their dump
shows the passes they expand to, not their options.

    check-help-defaults.py path/to/commopt-opt
"""

import re
import subprocess
import sys
import tempfile

PIPELINES = {"comm-optimize", "commopt-lower-to-llvm"}


def stated_defaults(tool):
    """{pass: {option: stated default}} from the section before OVERVIEW."""
    text = subprocess.run([tool, "--help"], capture_output=True, text=True,
                          check=True).stdout
    section = text.split("OVERVIEW:")[0]
    defaults, current = {}, None
    for line in section.splitlines():
        pass_match = re.match(r"^  --([\w-]+)\s+-\s", line)
        option_match = re.match(r"^    --([\w-]+)(=<\w+>)?\s+- (.*)$", line)
        if pass_match:
            current = pass_match.group(1)
            defaults[current] = {}
        elif option_match and current:
            stated = re.search(r"\(default: ([^)]*)\)$", option_match.group(3))
            if not stated:
                sys.exit(f"error: {current} option {option_match.group(1)} "
                         "does not state its default")
            defaults[current][option_match.group(1)] = stated.group(1)
    return defaults


def actual_defaults(tool, pass_name):
    """The option values --dump-pass-pipeline prints for `pass_name`.

    The pipeline is printed before it runs, so a pass that fails on the
    empty module still shows its options.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as empty:
        empty.write("module {}\n")
        empty.flush()
        dump = subprocess.run(
            [tool, empty.name, f"--{pass_name}", "--dump-pass-pipeline",
             "-o", "/dev/null"], capture_output=True, text=True)
    match = re.search(re.escape(pass_name) + r"\{(.*)\}", dump.stderr +
                      dump.stdout)
    if not match:
        return {}
    return dict(item.split("=", 1) for item in match.group(1).split(" "))


def same(stated, actual):
    if stated == "''":
        stated = ""
    try:
        return float(stated) == float(actual)
    except ValueError:
        # An empty value stated by what it means: "the cluster recorded on
        # the module, else ...", "the one public function with a body".
        return stated == actual or (stated.startswith("the ") and
                                    actual == "")


def main():
    tool = sys.argv[1]
    checked = 0
    for pass_name, options in stated_defaults(tool).items():
        if pass_name in PIPELINES:
            continue
        actual = actual_defaults(tool, pass_name)
        for option, stated in options.items():
            if option not in actual or not same(stated, actual[option]):
                sys.exit(f"error: {pass_name} {option}: --help says "
                         f"'{stated}', the pass uses "
                         f"'{actual.get(option, '(no such option)')}'")
            checked += 1
    print(f"checked {checked} stated defaults: OK")


if __name__ == "__main__":
    main()
