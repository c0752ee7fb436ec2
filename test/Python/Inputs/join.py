"""Uneven data: DistributedOptimizer.join(), as DDP's join() does it.

Rank r has 2 + r batches (2, 3, 4 and 5 on 4 ranks); every rank trains
within `with optimizer.join():`.

1. Dense plans (the default plan, and two collectives on a channel) train
   the parameters that DDP (gloo) with its join() trains, every rank ends
   with the same parameters bit for bit, every rank took as many steps as
   the longest, and the ranks counted as training in each step are 4, 4,
   3, 2, 1.
2. Sparse plans (top-k with its residual, threshold with momentum
   correction): join() gives, bit for bit, what a loop gives in which the
   ranks without data call step() with zero gradients themselves; the
   parameters are identical on every rank.
3. Misuse: join() entered after a backward pass, and a loop in join()
   that ends after a backward pass without step(), are errors that say
   so.

    mpirun -np 4 python3 join.py MASTER_PORT
"""

import os
import sys

import torch
from torch.nn.parallel import DistributedDataParallel

import commopt
from common import (batch, bits, check_close, check_identical, end_gloo,
                    expect_error, fail, loss_fn, make_model, parameters,
                    run_main, say, shard, start_with_gloo, tiny_plan)

LR, MOMENTUM = 0.2, 0.9


def batches_of(rank):
    return 2 + rank


def ddp_reference(rank, size):
    model = make_model(seed=7)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    with ddp.join():
        for step in range(batches_of(rank)):
            x, y = shard(batch(step), rank, size)
            optimizer.zero_grad(set_to_none=True)
            loss_fn(ddp, x, y).backward()
            optimizer.step()
    # DDP's join() ends with every rank holding the last rank's parameters.
    return parameters(model)


def train(kind, rank, size, joined):
    """commopt on this rank's batches: within join() (`joined`), or with
    the ranks out of data stepping with zero gradients by hand up to the
    longest rank's step count. Returns the parameters, the optimizer and
    the ranks counted as training in each step."""
    model = make_model(seed=7)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(), plan=tiny_plan(model, kind))
    counted = []
    if joined:
        with optimizer.join():
            for step in range(batches_of(rank)):
                x, y = shard(batch(step), rank, size)
                optimizer.zero_grad()
                loss_fn(model, x, y).backward()
                optimizer.step()
                counted.append(optimizer.training_ranks)
    else:
        for step in range(batches_of(size - 1)):
            optimizer.zero_grad()
            if step < batches_of(rank):
                x, y = shard(batch(step), rank, size)
                loss_fn(model, x, y).backward()
            else:
                for param in model.parameters():
                    param.grad = torch.zeros_like(param)
            optimizer.step()
    check_identical(model, f"{kind} plan, join()={joined}")
    optimizer.remove_hooks()
    return parameters(model), optimizer, counted


def dense_against_ddp(rank, size):
    expected = ddp_reference(rank, size)
    longest = batches_of(size - 1)
    for kind in ("default", "two-dense"):
        params, optimizer, counted = train(kind, rank, size, True)
        worst = check_close(params, expected, 1e-5, f"{kind} against DDP")
        if optimizer.steps != longest:
            fail(f"{kind}: {optimizer.steps} steps taken, not the longest "
                 f"rank's {longest}")
        if rank == size - 1:
            want = [sum(batches_of(r) > step for r in range(size))
                    for step in range(longest)]
            if counted != want:
                fail(f"{kind}: training ranks counted {counted}, not {want}")
        say(f"{kind} plan: join() matches DDP's join() ({worst:.2g}), every "
            f"rank took {longest} steps")


def sparse_as_zero_steps(rank, size):
    for kind in ("topk", "threshold-mc"):
        joined, optimizer, _ = train(kind, rank, size, True)
        if rank == 0 and not optimizer.residuals["fc1.weight"].abs().sum() > 0:
            fail(f"{kind}: the residual is zero: the test proves nothing")
        by_hand, _, _ = train(kind, rank, size, False)
        if not all(torch.equal(bits(joined[n]), bits(by_hand[n]))
                   for n in joined):
            fail(f"{kind}: join() differs from stepping with zero gradients")
        say(f"{kind} plan: join() equals zero-gradient steps bit for bit")


def misuse(rank, size):
    model = make_model(seed=7)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR), model.named_parameters())
    x, y = shard(batch(0), rank, size)
    loss_fn(model, x, y).backward()

    def late_join():
        with optimizer.join():
            pass
    message = expect_error("join() after a backward pass", late_join,
                           "join()", "backward")
    optimizer.step()
    say(f"join() too late: {message}")

    def backward_without_step():
        with optimizer.join():
            optimizer.zero_grad()
            loss_fn(model, x, y).backward()
    message = expect_error("a loop that ends without step()",
                           backward_without_step, "step()")
    optimizer.remove_hooks()
    say(f"loop ends without step(): {message}")


def main(argv):
    rank, size = start_with_gloo(argv[0])
    dense_against_ddp(rank, size)
    sparse_as_zero_steps(rank, size)
    misuse(rank, size)
    end_gloo()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_main(main)
