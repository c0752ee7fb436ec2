"""Checks an import of a pipedream graph.txt against the file itself.

Usage: python3 check-pipedream-import.py GRAPH_TXT [--estimate-report JSON]
           < IMPORTED_MLIR

Reads the profile with its own parser, sharing no code with commopt, and
compares it with the ops of the imported module: the number of gradients and
their total size in bytes (from the operand types of comm.allreduce, or of
comm.fused_allreduce after bucketing), and the
summed compute time (from the comm.compute cost_us). Input nodes are data
loading and count for neither. With --estimate-report, also compares the
compute time that comm-estimate's JSON report gives for the module's step
with the profile's. Prints a one-line summary, or the mismatches and exits
with status 1. Standard library only.
"""

import argparse
import json
import math
import os
import re
import sys

# A node: id, description (possibly over several lines), then the fields.
NODE = re.compile(
    r"^(node\d+) -- (.*?) -- forward_compute_time=([^,]+), "
    r"backward_compute_time=([^,]+), activation_size=[^,]+, "
    r"parameter_size=([0-9.]+)",
    re.MULTILINE | re.DOTALL)
# A dense collective, one gradient or a bucket: its operands, attributes and
# operand types come before the `->`.
COLLECTIVE = re.compile(r"comm\.(?:fused_)?allreduce (.*) -> ")
TENSOR_TYPE = re.compile(r"tensor<((?:\d+x)*)(f16|bf16|f32|f64)>")
COMPUTE_COST = re.compile(r"comm\.compute\(.*cost_us = ([-+0-9.e]+) : f64")
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}


def expected_from_profile(text):
    """Gradient count, gradient bytes and compute microseconds of a profile."""
    count, size, cost_us = 0, 0, 0.0
    for _, description, forward_ms, backward_ms, parameter_bytes in (
            NODE.findall(text)):
        if description.startswith("Input"):
            continue
        cost_us += (float(forward_ms) + float(backward_ms)) * 1000.0
        parameter_bytes = int(float(parameter_bytes))
        if parameter_bytes > 0:
            count += 1
            size += parameter_bytes
    return count, size, cost_us


def actual_from_module(text):
    """Gradient count, gradient bytes and compute microseconds of a module."""
    count, size = 0, 0
    for line in text.splitlines():
        collective = COLLECTIVE.search(line)
        if not collective:
            continue
        # The types follow the attribute dictionary, if any.
        operands = collective.group(1)
        types = (operands.rsplit("} : ", 1)[-1] if "{" in operands
                 else operands.split(" : ", 1)[-1])
        for dims, element in TENSOR_TYPE.findall(types):
            count += 1
            size += math.prod(int(d) for d in dims.split("x") if d) * (
                ELEMENT_BYTES[element])
    cost_us = sum(float(cost) for cost in COMPUTE_COST.findall(text))
    return count, size, cost_us


def estimated_compute_us(report_path):
    """The compute time of the one step in a comm-estimate JSON report."""
    with open(report_path) as report:
        functions = json.load(report)["functions"]
    if len(functions) != 1:
        raise ValueError(f"expected one function, got {len(functions)}")
    return functions[0]["compute_us"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("--estimate-report")
    args = parser.parse_args()
    profile_path = args.profile
    with open(profile_path) as profile:
        expected = expected_from_profile(profile.read())
    actual = actual_from_module(sys.stdin.read())
    model = os.path.basename(profile_path).split(".")[0]

    errors = []
    if actual[0] != expected[0]:
        errors.append(f"gradients: imported {actual[0]}, profile {expected[0]}")
    if actual[1] != expected[1]:
        errors.append(f"bytes: imported {actual[1]}, profile {expected[1]}")
    if not math.isclose(actual[2], expected[2], rel_tol=1e-6):
        errors.append(f"compute us: imported {actual[2]}, profile {expected[2]}")
    if expected[0] == 0:
        errors.append("the profile has no gradients: is it a pipedream graph?")
    summary = (f"{model}: {actual[0]} gradients, {actual[1]} bytes, "
               f"{actual[2] / 1000.0:.3f} ms of compute")
    if args.estimate_report:
        estimated = estimated_compute_us(args.estimate_report)
        if not math.isclose(estimated, expected[2], rel_tol=1e-9):
            errors.append(f"estimated compute us: {estimated}, "
                          f"profile {expected[2]}")
        summary += ", as estimated"
    for error in errors:
        print(f"{model}: mismatch in {error}", file=sys.stderr)
    if errors:
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
