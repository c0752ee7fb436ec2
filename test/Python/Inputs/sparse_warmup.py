"""Deep Gradient Compression's warm-up of a plan's sparse gradients: a top-k
plan (fc1.weight at density 0.05) with `sparse_warmup` {steps 3,
start_density 0.5} sends 0.5 of fc1.weight in step 0, 0.5 x 0.1^(1/3) in
step 1, 0.5 x 0.1^(2/3) in step 2 and 0.05 from step 3 on: every rank's
measured timeline (COMMOPT_TIMELINE, its selection's `selected`) says so,
and the ranks' parameters stay identical. Without a warm-up every step
sends 0.05; a bad warm-up, in the plan or as DistributedOptimizer's
option, is an error that names it.

    COMMOPT_TIMELINE=DIR/trace.json mpirun -np 4 python3 sparse_warmup.py
"""

import json
import math
import os

import torch

import commopt
from common import (batch, check_identical, expect_error, fail, loss_fn,
                    make_model, param_gradient, plan_document, run_main, say,
                    shard, sparse, dense, start)

STEPS, TARGET, WARMUP_STEPS, START = 5, 0.05, 3, 0.5


def warmup_plan(model, warmup):
    g = lambda name: param_gradient(model, name)  # noqa: E731
    document = plan_document([
        dense([g("fc2.weight"), g("fc2.bias"), g("fc1.bias"),
               g("conv.weight"), g("conv.bias")], channel=0),
        sparse(g("fc1.weight"), "topk", "allgather", TARGET)])
    if warmup:
        document["sparse_warmup"] = warmup
    return document


def selected_per_step(path):
    """{step: (entries selected, elements)} of the sparse allreduce."""
    with open(path) as handle:
        events = json.load(handle)["traceEvents"]
    return {e["args"]["step"]: (e["args"]["selected"], e["args"]["elements"])
            for e in events
            if e.get("cat") == "commrt" and e["name"] == "select"}


def train(rank, size, document, trace):
    os.environ["COMMOPT_TIMELINE"] = trace
    model = make_model(seed=5)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        model.named_parameters(),
        plan=commopt.parse_plan(document, source="warm-up plan"))
    for step in range(STEPS):
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()
    optimizer.timeline.close()
    check_identical(model, "the warm-up plan")
    return selected_per_step(optimizer.timeline.path)


def expected_density(step, warmup):
    if not warmup or step >= WARMUP_STEPS:
        return TARGET
    return START * (TARGET / START) ** (step / WARMUP_STEPS)


def main(argv):
    rank, size = start()
    folder = os.path.dirname(os.environ["COMMOPT_TIMELINE"])
    model = make_model(seed=5)
    for warmup in ({"steps": WARMUP_STEPS, "start_density": START}, None):
        what = "with warm-up" if warmup else "without"
        trace = os.path.join(folder, f"{'warmup' if warmup else 'plain'}"
                             ".rank{rank}.json")
        selected = train(rank, size, warmup_plan(model, warmup), trace)
        if sorted(selected) != list(range(STEPS)):
            fail(f"{what}: selections in steps {sorted(selected)}")
        counts = []
        for step in range(STEPS):
            entries, elements = selected[step]
            expected = math.ceil(expected_density(step, warmup) * elements)
            if abs(entries - expected) > 1:
                fail(f"{what}: step {step} sent {entries} of {elements} "
                     f"entries, expected {expected}")
            counts.append(entries)
        say(f"{what}: entries sent per step {counts}")

    # Bad warm-ups: in the plan, and as the bridge's option.
    document = warmup_plan(model, {"steps": 0, "start_density": START})
    expect_error("a warm-up of 0 steps",
                 lambda: commopt.parse_plan(document, source="bad plan"),
                 "bad plan.sparse_warmup", "steps 0 is not positive")
    document = warmup_plan(model, {"steps": 3, "start_density": 1.5})
    expect_error("a start density above 1",
                 lambda: commopt.parse_plan(document, source="bad plan"),
                 "start_density 1.5 is not in (0, 1]")
    plan = commopt.parse_plan(warmup_plan(model, None))
    for value, needle in (((3, 0.0), "start density 0.0"),
                          ((0, 0.5), "steps 0"), ((3,), "(steps, "),
                          (("3", 0.5), "steps '3'")):
        expect_error(f"sparse_warmup={value!r}",
                     lambda: commopt.DistributedOptimizer(
                         torch.optim.SGD(model.parameters(), lr=0.1),
                         model.named_parameters(), plan=plan,
                         sparse_warmup=value), needle)
    say("bad warm-ups: each an error that names it")


if __name__ == "__main__":
    run_main(main)
