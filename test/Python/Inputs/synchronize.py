"""synchronize() and step(): each step's gradients are reduced once.

1. backward, synchronize(), step() with a plan of a dense (reduce=sum)
   and a sparse collective: step() issues nothing more (the issue log
   holds each collective once), and leaves the reduced gradients and the
   residual as synchronize() left them.
2. Gradient clipping between synchronize() and step() (the reason to call
   synchronize() first): 10 steps match one process training on the
   whole batch with the same clipping.
3. Ranks without data: on some steps ranks 1 and 3 call step() without a
   backward; they still take part (with zero gradients), so every rank
   stays in step, and the reduced gradient is the others' sum / size.

    mpirun -np 4 python3 synchronize.py
"""

import torch

import commopt
from common import (all_reduce, batch, bits, check_close, check_identical,
                    dense, fail, loss_fn, make_model, param_gradient, plan,
                    run_main, say, shard, sparse, start)

CLIP, LR, STEPS = 0.5, 0.5, 10


def once(rank, size):
    model = make_model()
    g = lambda name: param_gradient(model, name)  # noqa
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters(),
        plan=plan([dense([g("fc2.weight"), g("fc2.bias"), g("fc1.bias"),
                          g("conv.weight"), g("conv.bias")], channel=0,
                         reduce="sum"),
                   sparse(g("fc1.weight"), "topk", "allgather", 0.1,
                          reduce="sum")]))
    for step in range(2):
        optimizer.issue_log = []
        optimizer.zero_grad()
        x, y = shard(batch(step), rank, size)
        loss_fn(model, x, y).backward()
        optimizer.synchronize()
        optimizer.synchronize()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        residual = optimizer.residuals["fc1.weight"].clone()
        optimizer.step()
        if optimizer.issue_log != [0, 1]:
            fail(f"synchronize() twice, then step(): issued "
                 f"{optimizer.issue_log}, not each collective once")
        for name, param in model.named_parameters():
            if not torch.equal(bits(param.grad), bits(grads[name])):
                fail(f"step() changed the reduced gradient of '{name}' "
                     "after synchronize()")
        if not torch.equal(bits(optimizer.residuals["fc1.weight"]),
                           bits(residual)):
            fail("step() changed the residual after synchronize()")
    check_identical(model, "synchronize(), step()")
    optimizer.remove_hooks()
    say("synchronize(), synchronize(), step(): each collective issued once, "
        "gradients and residual as synchronize() left them")


def clipped_reference():
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        x, y = batch(step)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def clipping(rank, size):
    model = make_model()
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR), model.named_parameters())
    clipped = 0
    for step in range(STEPS):
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.synchronize()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        clipped += int(norm > CLIP)
        optimizer.step()
    check_identical(model, "clipping")
    worst = check_close(dict(model.named_parameters()), clipped_reference(),
                        1e-5, "clipping")
    if clipped == 0:
        fail("no step clipped: the test proves nothing")
    optimizer.remove_hooks()
    say(f"synchronize(), clip_grad_norm_, step(): {STEPS} steps ({clipped} "
        f"clipped) match full-batch training ({worst:.2g})")


def idle_ranks(rank, size):
    model = make_model()
    # This rank's own gradients, as backward computes them: the plan's
    # collectives start during backward and reduce the gradients in place,
    # so reading them after backward, before synchronize(), would race with
    # the runtime.
    own = {}
    for name, param in model.named_parameters():
        param.register_hook(
            lambda grad, name=name: own.__setitem__(name, grad.clone()))
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters())
    for step in range(4):
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        idle = step % 2 == 1 and rank % 2 == 1
        own.clear()
        if not idle:
            loss_fn(model, x, y).backward()
        elif step == 3:
            # synchronize() before step() on an idle rank too.
            optimizer.synchronize()
        optimizer.step()
        if step % 2 == 1:
            name = "fc2.bias"
            mine = own.get(name, torch.zeros(3)).double()
            expected = all_reduce(mine, "sum") / size
            got = dict(model.named_parameters())[name].grad.double()
            if not torch.allclose(got, expected, rtol=1e-6, atol=1e-9):
                fail(f"step {step}: reduced {got.tolist()}, expected "
                     f"{expected.tolist()}")
        check_identical(model, f"idle ranks, step {step}")
    optimizer.remove_hooks()
    say("ranks 1 and 3 without data on steps 2 and 4: every rank stays in "
        "step and the reduced gradient is the others' sum / size")


def main(argv):
    rank, size = start()
    once(rank, size)
    clipping(rank, size)
    idle_ranks(rank, size)


if __name__ == "__main__":
    run_main(main)
