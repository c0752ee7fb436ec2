"""Checkpoints keep the whole training state, and resume continues exactly.

For every plan kind (dense f32, f16 on the wire, threshold/allgather,
topk/allgather, chunk/chunk, threshold/hash, threshold with momentum
correction), on every rank:
  - a run of 2K steps, checkpointed after step K (model and
    DistributedOptimizer state, through torch.save), and
  - a fresh model and optimizer (other initial values) that load that
    checkpoint and take steps K..2K-1
end with the same parameters, bit for bit: once with a file per rank, once
with the state gathered to rank 0 (state_dict(gather=True)) and scattered
back by load_state_dict. For the sparse kinds, loading only the wrapped
optimizer's state (the residuals lost) does not: the residuals matter.

Then the errors, raised on every rank (none hangs): a rank loading another
rank's state, a state of another world size, of another plan, ranks that
loaded different steps, and ranks that built the optimizer with different
plans; and broadcast_optimizer_state gives every rank rank 0's momentum.

    mpirun -np 4 python3 checkpoint.py
"""

import io

import torch

import commopt
from common import (bits, broadcast_copy, dense, expect_error, fail,
                    make_model, param_gradient, plan_document, run_main, say,
                    sparse, start, train)

K = 3
LR, MOMENTUM = 0.05, 0.9


def plan_of(model, kind):
    g = lambda name: param_gradient(model, name)  # noqa
    rest = [g("fc2.bias"), g("fc1.bias"), g("conv.bias"), g("conv.weight")]
    mc = kind.endswith("-mc")
    if kind in ("f32", "f16"):
        collectives = [dense([g("fc2.weight"), g("fc1.weight")] + rest,
                             wire="none" if kind == "f32" else "f16")]
    else:
        select, exchange, chunk = {
            "threshold": ("threshold", "allgather", None),
            "topk": ("topk", "allgather", None),
            "chunk": ("chunk", "chunk", 8),
            "hash": ("threshold", "hash", None),
            "threshold-mc": ("threshold", "allgather", None)}[kind]
        collectives = [dense([g("fc2.weight")] + rest),
                       sparse(g("fc1.weight"), select, exchange, 0.05, chunk)]
    document = plan_document(collectives)
    document["momentum_correction"] = mc
    return commopt.parse_plan(document, source=f"{kind} plan")


def make(kind, seed):
    model = make_model(seed=seed)
    inner = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    return model, commopt.DistributedOptimizer(
        inner, model.named_parameters(), plan=plan_of(model, kind))


def saved(value):
    stream = io.BytesIO()
    torch.save(value, stream)
    return stream.getvalue()


def loaded(data):
    return torch.load(io.BytesIO(data))


def same(model, params):
    return all(torch.equal(bits(p), bits(params[n]))
               for n, p in model.named_parameters())


def resume_kind(kind, rank, size):
    model, optimizer = make(kind, seed=3)
    train(model, optimizer, range(K), rank, size)
    checkpoint = saved({"model": model.state_dict(),
                        "optimizer": optimizer.state_dict()})
    gathered = optimizer.state_dict(gather=True)
    gathered = saved(gathered) if rank == 0 else None
    train(model, optimizer, range(K, 2 * K), rank, size)
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer.remove_hooks()

    results = {}
    for how in ("per rank", "gathered", "optimizer only"):
        fresh, again = make(kind, seed=11)
        state = loaded(checkpoint)
        fresh.load_state_dict(state["model"])
        if how == "per rank":
            again.load_state_dict(state["optimizer"])
        elif how == "gathered":
            again.load_state_dict(loaded(gathered) if rank == 0 else None)
        else:
            again.optimizer.load_state_dict(state["optimizer"]["optimizer"])
        train(fresh, again, range(K, 2 * K), rank, size)
        results[how] = same(fresh, final)
        again.remove_hooks()
    if not results["per rank"] or not results["gathered"]:
        fail(f"{kind}: the resumed run differs from the uninterrupted one "
             f"({results})")
    sparse_kind = kind not in ("f32", "f16")
    if sparse_kind and results["optimizer only"]:
        fail(f"{kind}: resuming without the residuals gave the same "
             "parameters: the test cannot tell")
    say(f"{kind}: resumed bit for bit (a file per rank, and gathered to rank "
        f"0){'; without the residuals it differs' if sparse_kind else ''}")
    return checkpoint


def errors(checkpoint, rank, size):
    state = loaded(checkpoint)["optimizer"]

    def load(kind, value):
        model, optimizer = make(kind, seed=3)
        try:
            optimizer.load_state_dict(value)
        finally:
            optimizer.remove_hooks()

    text = expect_error("another rank's state", lambda: load(
        "threshold-mc",
        commopt_state_of(state, rank=(rank + 1) % size)), "rank")
    say(f"another rank's state: {text}")
    text = expect_error("another world size", lambda: load(
        "threshold-mc", commopt_state_of(state, world_size=2)),
        "saved by 2 ranks", f"this job has {size}")
    say(f"another world size: {text}")
    text = expect_error("another plan", lambda: load("topk", state),
                        "another plan")
    say(f"another plan: {text}")
    steps = state["commopt"]["steps"]
    text = expect_error("different steps", lambda: load(
        "threshold-mc", commopt_state_of(
            state, steps=steps + (1 if rank == 1 else 0))),
        "the checkpoint", "step count")
    say(f"different steps: {text}")
    text = expect_error("a plain optimizer state, sparse plan", lambda: load(
        "threshold-mc", state["optimizer"]), "no residuals")
    say(f"a plain optimizer state, sparse plan: {text}")
    model, optimizer = make("f32", seed=3)
    plain = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    optimizer.load_state_dict(plain.state_dict())
    optimizer.remove_hooks()
    say("a plain optimizer state, dense plan: loaded")
    model = make_model(seed=3)
    text = expect_error("different plans", lambda: commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM),
        model.named_parameters(),
        plan=plan_of(model, "topk" if rank == 2 else "threshold")),
        "the plan")
    say(f"different plans: {text}")


def commopt_state_of(state, **changes):
    copy = dict(state)
    copy["commopt"] = dict(state["commopt"], **changes)
    return copy


def broadcast_state(rank, size):
    model, optimizer = make("f32", seed=3)
    train(model, optimizer, range(K), rank, size)
    # The other ranks' state differs from rank 0's until the broadcast.
    if rank != 0:
        for state in optimizer.state.values():
            state["momentum_buffer"].fill_(float(rank))
        optimizer.steps = 0
    commopt.broadcast_optimizer_state(optimizer, root_rank=0)
    for group in optimizer.param_groups:
        for param in group["params"]:
            buffer = optimizer.state[param]["momentum_buffer"]
            if not torch.equal(bits(broadcast_copy(buffer)), bits(buffer)):
                fail("broadcast_optimizer_state: a momentum buffer differs "
                     "from rank 0's")
    if optimizer.steps != K:
        fail(f"broadcast_optimizer_state: {optimizer.steps} steps, rank 0 "
             f"took {K}")
    optimizer.remove_hooks()
    say("broadcast_optimizer_state: every rank has rank 0's momentum and "
        "step count")


def main(argv):
    rank, size = start()
    for kind in ("f32", "f16", "threshold", "topk", "chunk", "hash"):
        resume_kind(kind, rank, size)
    checkpoint = resume_kind("threshold-mc", rank, size)
    errors(checkpoint, rank, size)
    broadcast_state(rank, size)


if __name__ == "__main__":
    run_main(main)
