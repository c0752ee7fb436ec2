"""Data-parallel training with a dense f32 plan is full-batch training:
4 ranks, each on a quarter of every batch with its gradients averaged by
the plan, end with the parameters that one process training on the whole
batch ends with (within f32 rounding), for the default plan and for a
hand-written plan that fuses parameters, cuts one into two pieces on two
channels and runs one collective blocking.

    mpirun -np 4 python3 equivalence.py [--steps N]
"""

import argparse

import torch

import commopt
from common import (TinyNet, batch, check_close, check_identical, dense,
                    fail, loss_fn, make_model, param_gradient, plan, reference,
                    run_main, say, shard, start)

LR, MOMENTUM = 0.1, 0.9


def hand_written_plan(model):
    g = lambda name, *piece: param_gradient(model, name, *piece)  # noqa
    # fc1.weight (16 x 144 = 2304 elements) goes in two pieces on two
    # channels; fc2's parameters and conv.bias are fused; conv.weight
    # goes blocking (no channel).
    return plan([
        dense([g("fc2.weight"), g("fc2.bias"), g("conv.bias")], channel=0),
        dense([g("fc1.weight", 0, 1000)], channel=1),
        dense([g("fc1.weight", 1000, 1304), g("fc1.bias")], channel=0),
        dense([g("conv.weight")], channel=None),
    ], source="hand-written plan")


def train(the_plan, steps, rank, size):
    model = make_model()
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(), plan=the_plan)
    for step in range(steps):
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()
    return model, optimizer


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rtol", type=float, default=1e-5)
    arguments = parser.parse_args(argv)
    rank, size = start()
    expected = reference(arguments.steps, LR, MOMENTUM)
    initial = make_model().state_dict()
    moved = max((expected[n] - initial[n]).abs().max().item()
                for n in expected)
    say(f"reference: {arguments.steps} full-batch steps moved the "
        f"parameters by up to {moved:.3g}")
    if not moved > 1e-2:
        fail("the reference barely trains; the test would prove nothing")

    plans = [("default plan", None),
             ("hand-written plan", hand_written_plan(TinyNet()))]
    for name, the_plan in plans:
        model, optimizer = train(the_plan, arguments.steps, rank, size)
        check_identical(model, name)
        worst = check_close(dict(model.named_parameters()), expected,
                            arguments.rtol, name)
        say(f"{name} ({optimizer.plan.kinds}): {arguments.steps} steps on "
            f"{size} ranks match full-batch training (largest relative "
            f"difference {worst:.2g} <= {arguments.rtol:g})")
        optimizer.remove_hooks()


if __name__ == "__main__":
    run_main(main)
