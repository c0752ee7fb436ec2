"""Gradient accumulation: backward_passes_per_step=k and no_sync().

1. Dense plans (the default plan, and two collectives on a channel) with
   k = 2 and 4 micro-batches per step, the loss scaled by 1 / k, train the
   parameters that PyTorch DDP (gloo) with no_sync() on the first k - 1
   passes trains, and backward_passes_per_step=k gives the same bits as
   commopt's no_sync(). The collectives start during the k-th backward
   pass (the issue log is empty before it and full after it).
2. Sparse plans (threshold with momentum correction, top-k with its
   residual) with k = 2 and 4: the run that accumulates k passes through
   the hooks equals, bit for bit, a run that adds the k micro-batches'
   gradients up itself and hands the sum to step(): the plan reduces the
   accumulated gradient once a step, and its residual and velocity see it
   once.
3. Misuse: k + 1 passes, backward_passes_per_step=0 and no_sync()
   entered after the step's collectives started are errors that say so.

    mpirun -np 4 python3 accumulation.py MASTER_PORT
"""

import contextlib
import os
import sys

import torch
from torch.nn.parallel import DistributedDataParallel

import commopt
from common import (batch, bits, check_close, check_identical, end_gloo,
                    expect_error, fail, loss_fn, make_model, parameters,
                    run_main, say, shard, start_with_gloo, tiny_plan)

LR, MOMENTUM, STEPS = 0.2, 0.9, 4


def micro_batches(step, k, rank, size):
    """This rank's shard of `step`'s global batch, in k micro-batches."""
    x, y = shard(batch(step), rank, size)
    n = len(x) // k
    return [(x[i * n:(i + 1) * n], y[i * n:(i + 1) * n]) for i in range(k)]


def same_bits(a, b):
    return all(torch.equal(bits(a[n]), bits(b[n])) for n in a)


def ddp_reference(k, rank, size):
    """DDP over gloo: no_sync() on the first k - 1 micro-batches."""
    model = make_model(seed=5)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        for i, (x, y) in enumerate(micro_batches(step, k, rank, size)):
            context = ddp.no_sync() if i < k - 1 else contextlib.nullcontext()
            with context:
                (loss_fn(ddp, x, y) / k).backward()
        optimizer.step()
    return parameters(model)


def accumulate(kind, k, how, rank, size):
    """commopt with k micro-batches a step: through the hooks with
    backward_passes_per_step=k ("passes"), with no_sync() ("no_sync"), or
    summed by hand and handed to step() ("by hand"). Returns the
    parameters and each step's issue log after the last backward."""
    model = make_model(seed=5)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(), plan=tiny_plan(model, kind),
        backward_passes_per_step=k if how == "passes" else 1)
    logs = []
    for step in range(STEPS):
        optimizer.zero_grad()
        optimizer.issue_log = []
        if how == "by hand":
            params = [p for _, p in model.named_parameters()]
            total = None
            for x, y in micro_batches(step, k, rank, size):
                grads = torch.autograd.grad(loss_fn(model, x, y) / k, params)
                if total is None:
                    total = [g.clone() for g in grads]
                else:
                    for t, g in zip(total, grads):
                        t += g
            for param, grad in zip(params, total):
                param.grad = grad
        else:
            for i, (x, y) in enumerate(micro_batches(step, k, rank, size)):
                last = i == k - 1
                context = optimizer.no_sync() \
                    if how == "no_sync" and not last \
                    else contextlib.nullcontext()
                with context:
                    (loss_fn(model, x, y) / k).backward()
                if not last and optimizer.issue_log:
                    fail(f"{kind}, k={k}, {how}: collectives "
                         f"{optimizer.issue_log} issued during backward "
                         f"pass {i + 1} of {k}")
        logs.append(list(optimizer.issue_log))
        optimizer.step()
    check_identical(model, f"{kind}, k={k}, {how}")
    optimizer.remove_hooks()
    return parameters(model), logs, optimizer


def dense_against_ddp(rank, size):
    for k in (2, 4):
        expected = ddp_reference(k, rank, size)
        for kind in ("default", "two-dense"):
            passes, logs, optimizer = accumulate(kind, k,
                                                 "passes", rank, size)
            everything = list(range(len(optimizer.plan.collectives)))
            if any(log != everything for log in logs):
                fail(f"{kind}, k={k}: the last backward pass issued {logs}, "
                     f"not every collective ({everything})")
            worst = check_close(passes, expected, 1e-5,
                                f"{kind}, k={k} against DDP")
            no_sync, _, _ = accumulate(kind, k, "no_sync", rank,
                                       size)
            if not same_bits(passes, no_sync):
                fail(f"{kind}, k={k}: no_sync() and "
                     "backward_passes_per_step differ")
            say(f"{kind} plan, k={k}: backward_passes_per_step and no_sync() "
                f"match DDP with no_sync() ({worst:.2g}), collectives issued "
                "in the last pass")


def sparse_once_per_step(rank, size):
    for kind in ("threshold-mc", "topk"):
        for k in (2, 4):
            passes, _, optimizer = accumulate(kind, k, "passes",
                                              rank, size)
            if not optimizer.residuals["fc1.weight"].abs().sum() > 0:
                fail(f"{kind}, k={k}: the residual is zero: the test "
                     "proves nothing")
            by_hand, _, _ = accumulate(kind, k, "by hand", rank,
                                       size)
            no_sync, _, _ = accumulate(kind, k, "no_sync", rank,
                                       size)
            if not same_bits(passes, by_hand):
                fail(f"{kind}, k={k}: accumulating through the hooks differs "
                     "from reducing the summed gradient once")
            if not same_bits(passes, no_sync):
                fail(f"{kind}, k={k}: no_sync() and backward_passes_per_step "
                     "differ")
            say(f"{kind} plan, k={k}: the accumulated gradient is reduced "
                "once a step, bit for bit as the sum handed to step()")


def misuse(rank, size):
    model = make_model(seed=5)
    inner = torch.optim.SGD(model.parameters(), lr=LR)
    expect_error("backward_passes_per_step=0",
                 lambda: commopt.DistributedOptimizer(
                     inner, model.named_parameters(),
                     backward_passes_per_step=0),
                 "backward_passes_per_step", "positive integer")
    optimizer = commopt.DistributedOptimizer(inner, model.named_parameters(),
                                             backward_passes_per_step=2)
    (x, y), = micro_batches(0, 1, rank, size)
    loss_fn(model, x, y).backward()
    loss_fn(model, x, y).backward()
    message = expect_error("three passes with k=2",
                           lambda: loss_fn(model, x, y).backward(),
                           "3 times", "backward_passes_per_step=2")
    optimizer.remove_hooks()
    say(f"k=2, a third pass: {message}")

    model = make_model(seed=5)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR), model.named_parameters())
    loss_fn(model, x, y).backward()

    def late_no_sync():
        with optimizer.no_sync():
            pass
    message = expect_error("no_sync() after the collectives started",
                           late_no_sync, "no_sync()", "started")
    optimizer.step()
    optimizer.remove_hooks()
    say(f"no_sync() too late: {message}")


def main(argv):
    rank, size = start_with_gloo(argv[0])
    dense_against_ddp(rank, size)
    sparse_once_per_step(rank, size)
    misuse(rank, size)
    end_gloo()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_main(main)
