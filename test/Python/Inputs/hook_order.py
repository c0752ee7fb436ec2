"""Gradient hooks that fire in a different order on different ranks still
issue the plan's collectives in the plan's order on every rank.

The model has two independent branches, `left` and `right`, whose forward
order depends on the rank: even ranks run left first, odd ranks right
first. The autograd engine runs the backward of the branch created last
first, so the gradients become ready in different orders on even and odd
ranks. The plan puts each branch in a collective of its own, on channels
1 and 2, after the head's on channel 0. Each rank records the order in
which its parameters' gradients arrive (tensor hooks) and the order in
which the optimizer issued collectives (`issue_log`); the arrival orders
must differ between even and odd ranks while the issue logs are identical
on every rank, and training must still match one process training on the
whole batch.

    mpirun -np 4 python3 hook_order.py [--steps N]
"""

import argparse

import torch
from torch import nn

import commopt
from common import (GLOBAL_BATCH, all_true, batch, broadcast_copy,
                    check_close, check_identical, dense, fail, loss_fn,
                    param_gradient, plan, reference, run_main, say, shard,
                    start)

SHAPE, CLASSES, LR = (12,), 4, 0.2


class TwoBranches(nn.Module):
    """head(tanh(left(x)) + tanh(right(x))), with two layers a branch.
    `right_first` picks the forward order, not the function."""

    right_first = False

    def __init__(self):
        super().__init__()
        self.left = nn.Sequential(nn.Linear(12, 10), nn.Tanh(),
                                  nn.Linear(10, 8))
        self.right = nn.Sequential(nn.Linear(12, 10), nn.Tanh(),
                                   nn.Linear(10, 8))
        self.head = nn.Linear(8, CLASSES)

    def forward(self, x):
        if self.right_first:
            r = torch.tanh(self.right(x))
            l = torch.tanh(self.left(x))  # noqa: E741
        else:
            l = torch.tanh(self.left(x))  # noqa: E741
            r = torch.tanh(self.right(x))
        return self.head(l + r)


def make_plan(model):
    names = [n for n, _ in model.named_parameters()]
    group = lambda prefix: [param_gradient(model, n) for n in names  # noqa
                            if n.startswith(prefix)]
    return plan([dense(group("head."), channel=0),
                 dense(group("left."), channel=1),
                 dense(group("right."), channel=2)])


def same_as_rank_0(values):
    """Whether `values` (a list of ints) equals rank 0's."""
    mine = torch.tensor(values, dtype=torch.float64)
    theirs = broadcast_copy(mine)
    return torch.equal(mine, theirs)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    arguments = parser.parse_args(argv)
    rank, size = start()
    expected = reference(arguments.steps, LR, 0.0, seed=11,
                         factory=TwoBranches, data_seed=12, shape=SHAPE,
                         classes=CLASSES)
    torch.manual_seed(11)
    model = TwoBranches()
    model.right_first = rank % 2 == 1
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    names = [n for n, _ in model.named_parameters()]
    arrivals = []
    for index, (name, param) in enumerate(model.named_parameters()):
        param.register_hook(
            lambda grad, index=index: arrivals.append(index))
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR), model.named_parameters(),
        plan=make_plan(model))
    for step in range(arguments.steps):
        x, y = shard(batch(step, 12, SHAPE, CLASSES, GLOBAL_BATCH), rank,
                     size)
        arrivals.clear()
        optimizer.issue_log = []
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()
        if sorted(arrivals) != list(range(len(names))):
            fail(f"step {step}: gradients arrived {arrivals}")
        arrived_as_rank_0 = same_as_rank_0(arrivals)
        if arrived_as_rank_0 != (rank % 2 == 0):
            fail(f"step {step}: gradients arrived in the order "
                 f"{[names[i] for i in arrivals]}, which rank 0's "
                 f"{'does not equal' if rank % 2 == 0 else 'equals'}: the "
                 "test does not make hooks fire in different orders")
        if optimizer.issue_log != [0, 1, 2]:
            fail(f"step {step}: issued {optimizer.issue_log}, not the plan's "
                 "order [0, 1, 2]")
        if not all_true(same_as_rank_0(optimizer.issue_log)):
            fail(f"step {step}: the issue logs differ between ranks")
        if step == 0:
            mine = torch.tensor(arrivals, dtype=torch.float64)
            for who in (0, 1):
                order = broadcast_copy(mine, root=who).long().tolist()
                say(f"step 1: rank {who}'s gradients arrived as "
                    f"{', '.join(names[i] for i in order)}")
        check_identical(model, f"after step {step + 1}")
    worst = check_close(dict(model.named_parameters()), expected, 1e-5,
                        "two branches")
    say(f"{arguments.steps} steps: arrival orders differ between even and "
        f"odd ranks, issue logs are [0, 1, 2] on every rank, and the "
        f"parameters match full-batch training (largest relative difference "
        f"{worst:.2g})")


if __name__ == "__main__":
    run_main(main)
