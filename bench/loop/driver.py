#!/usr/bin/env python3
"""Appends a timing @main to a planned training-step module.

Reads a module with a `func.func @train_step() -> (...)` (a profile import,
planned or not) and writes it back with a `@main` that runs `--steps` steps;
every step starts after `commrt_barrier` and is timed with `commrt_time_us`,
and `commrt_report_step_us` makes rank 0 print the slowest rank's time as
"commrt: step S: T us". The gradients the step returns are dropped; the
deallocation pipeline of `commopt-lower-to-llvm` frees them every step.

Usage: driver.py --steps N planned.mlir > driver.mlir
"""

import argparse
import re
import sys

MAIN = """
  func.func private @commrt_barrier() -> i32
  func.func private @commrt_time_us() -> f64
  func.func private @commrt_report_step_us(i64, f64) -> i32
  func.func private @commrt_abort_on_error(i32)
  func.func @main() {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %steps = arith.constant {steps} : index
    scf.for %i = %c0 to %steps step %c1 {{
      %b = func.call @commrt_barrier() : () -> i32
      func.call @commrt_abort_on_error(%b) : (i32) -> ()
      %t0 = func.call @commrt_time_us() : () -> f64
      {results}func.call @train_step() : () -> ({types})
      %t1 = func.call @commrt_time_us() : () -> f64
      %us = arith.subf %t1, %t0 : f64
      %step = arith.index_cast %i : index to i64
      %r = func.call @commrt_report_step_us(%step, %us) : (i64, f64) -> i32
      func.call @commrt_abort_on_error(%r) : (i32) -> ()
    }}
    return
  }}
"""


def result_types(text):
    """The result types of @train_step, as written in its signature."""
    match = re.search(r"func\.func @train_step\(\)\s*(->\s*(.*?))?\s*(attributes\b|\{)",
                      text, re.S)
    if not match:
        sys.exit("driver.py: no `func.func @train_step()` in the input")
    types = (match.group(2) or "").strip()
    if types.startswith("(") and types.endswith(")"):
        types = types[1:-1]
    # Tensor types hold no commas outside <...>, so split at depth 0.
    parts, depth, current = [], 0, ""
    for char in types:
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("input")
    args = parser.parse_args()
    text = open(args.input).read()
    types = result_types(text)
    end = text.rstrip().rfind("}")
    if end < 0:
        sys.exit("driver.py: the input is not a module")
    results = f"%g:{len(types)} = " if len(types) > 1 else ("%g = " if types else "")
    sys.stdout.write(text[:end] + MAIN.format(
        steps=args.steps, results=results, types=", ".join(types)) + "}\n")


if __name__ == "__main__":
    main()
