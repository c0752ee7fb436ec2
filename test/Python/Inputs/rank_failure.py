"""A rank that fails mid-training must end the whole job, with a non-zero
exit, rather than leave the other ranks waiting in their collectives.

    mpirun -np 4 python3 rank_failure.py exit     # rank 2: os._exit(3)
    mpirun -np 4 python3 rank_failure.py raise    # rank 1: RuntimeError
    mpirun -np 4 python3 rank_failure.py leave    # rank 2: sys.exit(0)
    mpirun -np 4 -x COMMOPT_TIMEOUT_S=10 python3 rank_failure.py hang
                                                  # rank 2: sleeps an hour

The failing rank fails after 3 steps, while the others go on into the
collectives of step 4, issued from backward on two channels and one
blocking (for `leave` and `hang`, a blocking sparse one). mpirun ends the
job when a rank exits non-zero or calls MPI_Abort (as commopt's excepthook
does). A rank that leaves with status 0 tells the others, as its runtime
shuts down, how many collectives it ran; theirs in step 4 can never
complete, and the runtime aborts the job. A rank that hangs is caught by
commopt's timeout (COMMOPT_TIMEOUT_S), on blocking collectives too.
"""

import os
import sys
import time

import torch

import commopt
from common import (batch, dense, loss_fn, make_model, param_gradient, plan,
                    say, shard, sparse, start)

FAIL_AFTER = 3


def main(mode):
    rank, size = start()
    model = make_model()
    g = lambda name: param_gradient(model, name)  # noqa
    fc1 = sparse(g("fc1.weight"), "topk", "allgather", 0.05) \
        if mode in ("leave", "hang") else dense([g("fc1.weight")], channel=1)
    the_plan = plan([
        dense([g("fc2.weight"), g("fc2.bias"), g("fc1.bias")], channel=0),
        fc1,
        dense([g("conv.weight"), g("conv.bias")], channel=None)])
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters(),
        plan=the_plan)
    for step in range(1000):
        if step == FAIL_AFTER:
            if mode == "exit" and rank == 2:
                print(f"rank 2: exiting with status 3 after {step} steps",
                      flush=True)
                os._exit(3)
            if mode == "leave" and rank == 2:
                print(f"rank 2: leaving after {step} steps", flush=True)
                sys.exit(0)
            if mode == "hang" and rank == 2:
                print(f"rank 2: hanging after {step} steps", flush=True)
                time.sleep(3600)
            if mode == "raise" and rank == 1:
                raise RuntimeError(f"rank 1 fails after {step} steps")
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()
        if step < FAIL_AFTER:
            say(f"step {step + 1} done")
    say("FAILED: the ranks trained on without the failed one")
    sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("exit", "raise", "leave",
                                                  "hang"):
        raise SystemExit(__doc__)
    main(sys.argv[1])
