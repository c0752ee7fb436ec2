"""Every rank holds the same parameters, bit for bit, after every step,
whatever the plan: dense f32, f16 and bf16 wires, and the three sparse
schemes (topk/allgather, threshold/hash, chunk/chunk). Each rank trains on
data of its own; after every step rank 0's parameters are broadcast and
compared with each rank's own bitwise.

    mpirun -np 4 python3 consistency.py [--steps N] [--only KIND]
"""

import argparse

import torch

import commopt
from common import (batch, check_identical, dense, fail, loss_fn, make_model,
                    param_gradient, plan, run_main, say, shard, sparse,
                    start)


def plans(model, size):
    g = lambda name, *piece: param_gradient(model, name, *piece)  # noqa
    small = [g("fc2.weight"), g("fc2.bias"), g("fc1.bias"), g("conv.bias")]
    # fc1.weight (2304 elements) and conv.weight (36) carry the wire or go
    # sparse; the small parameters stay dense f32 in one bucket.
    return {
        "dense-f32": plan([
            dense(small, channel=0),
            dense([g("fc1.weight", 0, 1152)], channel=1),
            dense([g("fc1.weight", 1152, 1152), g("conv.weight")],
                  channel=0)]),
        "f16-wire": plan([
            dense(small, channel=0),
            dense([g("fc1.weight"), g("conv.weight")], channel=1,
                  wire="f16", prescale=1.0 / size)]),
        "bf16-wire": plan([
            dense([g("fc1.weight")], channel=0, wire="bf16"),
            dense(small + [g("conv.weight")], channel=1, wire="bf16")]),
        "topk-allgather": plan([
            dense(small, channel=0),
            sparse(g("fc1.weight"), "topk", "allgather", 0.05),
            sparse(g("conv.weight"), "topk", "allgather", 0.1)]),
        "threshold-hash": plan([
            dense(small, channel=0),
            sparse(g("fc1.weight"), "threshold", "hash", 0.05),
            sparse(g("conv.weight"), "threshold", "hash", 0.1)]),
        "chunk-chunk": plan([
            dense(small, channel=1),
            sparse(g("fc1.weight"), "chunk", "chunk", 0.05,
                   chunk_elements=16),
            sparse(g("conv.weight"), "chunk", "chunk", 0.25,
                   chunk_elements=4)]),
    }


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--only", help="run one plan kind")
    arguments = parser.parse_args(argv)
    rank, size = start()
    runs = [(kind, the_plan, False)
            for kind, the_plan in plans(make_model(), size).items()]
    # Deep Gradient Compression's momentum correction on a sparse plan.
    runs.append(("topk-allgather+momentum-correction",
                 plans(make_model(), size)["topk-allgather"], True))
    for kind, the_plan, correct_momentum in runs:
        if arguments.only and kind != arguments.only:
            continue
        model = make_model(seed=5)
        commopt.broadcast_parameters(model.state_dict(), root_rank=0)
        initial = {n: p.detach().clone() for n, p in model.named_parameters()}
        optimizer = commopt.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            model.named_parameters(), plan=the_plan,
            momentum_correction=correct_momentum)
        if correct_momentum:
            # The sparse parameters' momentum is the bridge's, not SGD's.
            names = {id(p): n for n, p in model.named_parameters()}
            for group in optimizer.param_groups:
                for param in group["params"]:
                    owned = names[id(param)] in optimizer.velocities
                    if owned != (group["momentum"] == 0.0):
                        fail(f"{kind}: '{names[id(param)]}' is in a group "
                             f"with momentum {group['momentum']}")
            if sorted(optimizer.velocities) != ["conv.weight", "fc1.weight"]:
                fail(f"{kind}: velocities of {sorted(optimizer.velocities)}")
        for step in range(arguments.steps):
            # Each rank's own data: the ranks' gradients differ.
            x, y = shard(batch(step, seed=2), rank, size)
            optimizer.zero_grad()
            loss_fn(model, x, y).backward()
            optimizer.step()
            check_identical(model, f"{kind}, after step {step + 1}")
        # Every parameter trained (sparse ones too, from their residuals).
        for name, param in model.named_parameters():
            if torch.equal(param.detach(), initial[name]):
                fail(f"{kind}: '{name}' never changed")
        if correct_momentum and not all(
                u.abs().sum() > 0 for _, u in optimizer.velocities.values()):
            fail(f"{kind}: a velocity stayed zero")
        say(f"{kind} ({optimizer.plan.kinds}): parameters identical on "
            f"{size} ranks after each of {arguments.steps} steps")
        optimizer.remove_hooks()


if __name__ == "__main__":
    run_main(main)
