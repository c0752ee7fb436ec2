"""A rank killed while rank 0 writes the checkpoint: the job ends, and the
last complete checkpoint still loads and resumes exactly.

    mpirun -np 4 python3 checkpoint_failure.py train PATH
        4 ranks train a sparse plan (top-k, momentum correction) and rank 0
        saves the gathered state with commopt.save_checkpoint after steps
        2 and 4. While rank 0 writes the second, rank 2 is killed
        (SIGKILL); the job must end with a non-zero exit.
    mpirun -np 4 python3 checkpoint_failure.py resume PATH
        PATH holds the step-2 checkpoint, whole: loaded on rank 0 and
        resumed, 2 more steps give the parameters of 4 uninterrupted
        steps, bit for bit.
"""

import os
import signal
import sys
import time

import torch

import commopt
from common import (all_reduce, bits, dense, fail, make_model,
                    param_gradient, plan_document, run_main, say, sparse,
                    start, train)

LR, MOMENTUM = 0.05, 0.9


def make():
    model = make_model(seed=7)
    g = lambda name: param_gradient(model, name)  # noqa
    document = plan_document([
        dense([g("fc2.weight"), g("fc2.bias"), g("fc1.bias"),
               g("conv.weight"), g("conv.bias")], channel=0),
        sparse(g("fc1.weight"), "topk", "allgather", 0.05)])
    document["momentum_correction"] = True
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(),
        plan=commopt.parse_plan(document, source="top-k plan"))
    return model, optimizer


class KillsRankWhileSaved:
    """Pickled in the middle of rank 0's checkpoint: kills the rank whose
    pid it holds, then waits for mpirun to stop the job."""

    def __init__(self, pid):
        self.pid = pid

    def __reduce__(self):
        print(f"rank 0: writing the checkpoint; killing the rank of pid "
              f"{self.pid}", flush=True)
        os.kill(self.pid, signal.SIGKILL)
        time.sleep(120)
        return (int, ())


def checkpoint(model, optimizer, extra=None):
    state = {"model": model.state_dict(),
             "optimizer": optimizer.state_dict(gather=True)}
    if commopt.rank() == 0:
        if extra is not None:
            state["extra"] = extra
        commopt.save_checkpoint(state, PATH)


def train_and_die(rank, size):
    pids = all_reduce(torch.tensor([float(os.getpid()) if r == rank else 0.0
                                    for r in range(size)]))
    victim = int(pids[2].item())
    model, optimizer = make()
    train(model, optimizer, range(2), rank, size)
    checkpoint(model, optimizer)
    say("step 2: checkpoint written")
    train(model, optimizer, range(2, 4), rank, size)
    checkpoint(model, optimizer, KillsRankWhileSaved(victim))
    # The job must not get here: rank 2 is dead, rank 0 still writing.
    train(model, optimizer, range(4, 6), rank, size)
    fail("the job went on after rank 2 was killed")


def resume(rank, size):
    model, optimizer = make()
    train(model, optimizer, range(4), rank, size)
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer.remove_hooks()

    model, optimizer = make()
    state = torch.load(PATH) if rank == 0 else None
    if rank == 0:
        if "extra" in state:
            fail(f"{PATH} holds the checkpoint whose writing was "
                 "interrupted")
        model.load_state_dict(state["model"])
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer.load_state_dict(state["optimizer"] if rank == 0 else None)
    if optimizer.steps != 2:
        fail(f"the checkpoint is of step {optimizer.steps}, not 2")
    train(model, optimizer, range(2, 4), rank, size)
    if not all(torch.equal(bits(p), bits(final[n]))
               for n, p in model.named_parameters()):
        fail("resuming from the step-2 checkpoint differs from 4 "
             "uninterrupted steps")
    say("resumed from the last whole checkpoint (step 2): 2 more steps "
        "match 4 uninterrupted ones bit for bit")


def main(argv):
    global PATH
    mode, PATH = argv
    rank, size = start()
    if mode == "train":
        train_and_die(rank, size)
    else:
        resume(rank, size)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_main(main)
