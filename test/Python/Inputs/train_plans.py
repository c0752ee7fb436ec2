"""Trains the Fashion-MNIST example's tiny model (on random images) for a
few steps with each plan file given, on every rank, and checks that the
plan loads for the model, that every rank holds the same parameters after
every step, and, for plans of dense f32 collectives only, that training
matches one process training on the whole batch.

    mpirun -np 4 python3 train_plans.py EXAMPLES_DIR PLAN.json...
"""

import os
import sys

import torch

import commopt
from common import (check_close, check_identical, fail, loss_fn, reference,
                    run_main, say, shard, start)
import common

STEPS, BATCH, SHAPE, CLASSES, LR, MOMENTUM = 4, 8, (1, 28, 28), 10, 0.05, 0.9


def main(argv):
    sys.path.insert(0, os.path.join(argv[0], "fashion_mnist"))
    import fashion_mnist
    factory = fashion_mnist.make_tiny_model
    rank, size = start()
    for path in argv[1:]:
        the_plan = commopt.load_plan(path)
        model = common.make_model(seed=0, factory=factory)
        commopt.broadcast_parameters(model.state_dict(), root_rank=0)
        optimizer = commopt.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
            model.named_parameters(), plan=the_plan)
        for step in range(STEPS):
            x, y = shard(common.batch(step, 3, SHAPE, CLASSES, BATCH), rank,
                         size)
            optimizer.zero_grad()
            loss = loss_fn(model, x, y)
            if not torch.isfinite(loss):
                fail(f"{path}: step {step}: loss {loss.item()}")
            loss.backward()
            optimizer.step()
            check_identical(model, f"{os.path.basename(path)}, step "
                            f"{step + 1}")
        note = ""
        if all(c.kind == "dense" and c.wire == "none"
               for c in the_plan.collectives):
            expected = reference(STEPS, LR, MOMENTUM, 0, factory, 3, SHAPE,
                                 CLASSES, BATCH)
            worst = check_close(dict(model.named_parameters()), expected,
                                1e-5, os.path.basename(path))
            note = f"; matches full-batch training ({worst:.2g})"
        say(f"{os.path.basename(path)} ({the_plan.kinds}; made for "
            f"{the_plan.world_size} ranks of {the_plan.cluster.get('name')}):"
            f" parameters identical on {size} ranks after each of {STEPS} "
            f"steps{note}")
        optimizer.remove_hooks()


if __name__ == "__main__":
    run_main(main)
