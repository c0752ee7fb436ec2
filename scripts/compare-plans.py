#!/usr/bin/python3
"""Prints a plan's summary and its estimate against DDP's policy.

    compare-plans.py PREFIX STEP.mlir TIMELINE.json

reads PREFIX-ddp.json, PREFIX-plan.json and PREFIX-f16.json, the JSON
reports of comm-estimate for DDP's policy, commopt's plan and commopt's plan
with an f16 wire, and STEP.mlir, the imported step.
"""

import json
import sys


def main(prefix, step, timeline):
    def load(name):
        report = json.load(open(f"{prefix}-{name}.json"))
        return report, report["functions"][0]

    _, ddp = load("ddp")
    report, plan = load("plan")
    _, f16 = load("f16")
    gradients = open(step).read().count("comm.allreduce ")
    collectives = plan["collectives"]
    cluster = report["cluster"]
    print(f"model {plan['model']}: {gradients} gradients, "
          f"{sum(c['bytes'] for c in collectives) / 2**20:.1f} MiB per step")
    print(f"cluster {cluster['name']}: {cluster['ranks']} ranks, "
          f"{cluster['allreduce']} allreduce")
    print(f"plan: {len(collectives)} collectives started as their gradients "
          f"are ready, on {len({c['channel'] for c in collectives})} "
          "channel(s)")
    print(f"  {'plan':<24}{'step (ms)':>12}{'exposed comm (ms)':>19}"
          f"{'speedup':>9}")
    for name, result in [("PyTorch DDP policy", ddp), ("commopt, f32", plan),
                         ("commopt, f16 wire", f16)]:
        print(f"  {name:<24}{result['step_us'] / 1e3:>12.2f}"
              f"{result['exposed_us'] / 1e3:>19.2f}"
              f"{ddp['step_us'] / result['step_us']:>8.3f}x")
    print(f"  {'compute alone':<24}{plan['compute_us'] / 1e3:>12.2f}")
    print(f"timeline for https://ui.perfetto.dev or chrome://tracing: "
          f"{timeline}\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
