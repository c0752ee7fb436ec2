"""Steps skipped because their gradients overflowed, as
torch.cuda.amp.GradScaler skips them: scale the loss, backward,
optimizer.synchronize(), unscale and check the reduced gradients, and call
step() only when they are finite.

On step 2, rank 2's loss is multiplied by inf, so that its gradients are
not finite. For the default (dense) plan, a top-k plan with its residual
and a threshold plan with momentum correction:

1. The reduction carries the overflow to every rank: every rank finds the
   same reduced gradients not finite on step 2, and only on step 2, so all
   skip the same step (none waits in a step the others skipped).
2. Parameters stay identical on every rank, and the dense plan's run
   equals, bit for bit, a run that never took step 2.
3. What the overflow left in the residuals and velocities (the entries
   this rank did not send) is dropped when the next step begins: they are
   finite again, and no later step overflows because of them.

    mpirun -np 4 python3 skipped_steps.py
"""

import os
import sys

import torch

import commopt
from common import (all_true, batch, bits, check_identical, fail, loss_fn,
                    make_model, parameters, run_main, say, shard, start,
                    tiny_plan)

LR, MOMENTUM, STEPS, OVERFLOW_STEP, OVERFLOW_RANK = 0.2, 0.9, 6, 2, 2


def finite(tensors):
    return all(bool(torch.isfinite(t).all()) for t in tensors)


def train(kind, rank, size, overflow, steps):
    """Takes `steps`; with `overflow`, rank OVERFLOW_RANK's loss on
    OVERFLOW_STEP is not finite. Returns the parameters, the steps skipped
    and the optimizer."""
    model = make_model(seed=3)
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(), plan=tiny_plan(model, kind))
    skipped = []
    for step in steps:
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss = loss_fn(model, x, y)
        if overflow and step == OVERFLOW_STEP and rank == OVERFLOW_RANK:
            loss = loss * float("inf")
        loss.backward()
        optimizer.synchronize()
        # What GradScaler.step decides from the unscaled gradients.
        ok = finite(p.grad for p in model.parameters())
        if all_true(ok) != ok:
            fail(f"{kind}: the ranks disagree on whether step {step}'s "
                 "reduced gradients are finite")
        if ok:
            optimizer.step()
        else:
            skipped.append(step)
    # The next step's first gradient drops what the overflow left behind.
    if overflow:
        x, y = shard(batch(0), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.synchronize()
        left = list(optimizer.residuals.values()) + \
            [u for _, u in optimizer.velocities.values()]
        if not finite(left):
            fail(f"{kind}: residuals or velocities are not finite after the "
                 "skipped step")
    check_identical(model, f"{kind} plan with a skipped step")
    optimizer.remove_hooks()
    return parameters(model), skipped, optimizer


def main(argv):
    rank, size = start()
    for kind in ("default", "topk", "threshold-mc"):
        params, skipped, optimizer = train(kind, rank, size, True,
                                           range(STEPS))
        if skipped != [OVERFLOW_STEP]:
            fail(f"{kind}: rank {rank} skipped steps {skipped}, not "
                 f"[{OVERFLOW_STEP}]")
        if optimizer.skipped_steps != 1:
            fail(f"{kind}: skipped_steps is {optimizer.skipped_steps}")
        if kind == "default":
            never, _, _ = train(kind, rank, size, False,
                                [s for s in range(STEPS)
                                 if s != OVERFLOW_STEP])
            if not all(torch.equal(bits(params[n]), bits(never[n]))
                       for n in params):
                fail("default plan: skipping step 2 differs from never "
                     "taking it")
        say(f"{kind} plan: every rank skipped step {OVERFLOW_STEP} only, "
            "parameters identical"
            + (", equal to never taking it" if kind == "default" else
               ", residuals finite again"))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_main(main)
