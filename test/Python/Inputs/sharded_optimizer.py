"""commopt.ShardedOptimizer (ZeRO-2) on several ranks.

1. SGD with momentum and Adam train TinyNet on each rank's part of every
   global batch to the parameters of one process training on the whole
   batch, within float rounding, every rank's parameters identical.
2. Each rank's optimizer state is its shard's: ceil(2411 / ranks) elements
   per state tensor, against 2411 for the whole model.
3. A checkpoint of every rank's state_dict(), loaded into a fresh model and
   optimizer, continues training to the same parameters, bit for bit, as
   the uninterrupted run.
4. Gradients in bf16 on the wire still train identical parameters on every
   rank, close to the reference.
5. Errors, on every rank: a rank loading another rank's state, a state of
   another world size, a model of another shape, mixed dtypes.

    mpirun -np 4 python3 sharded_optimizer.py
"""

import io

import torch

import commopt
from common import TinyNet, batch, check_close, check_identical, \
    expect_error, fail, loss_fn, make_model, run_main, say, shard, start

STEPS, LR, MOMENTUM = 6, 0.1, 0.9


def train(model, optimizer, steps, rank, size):
    for step in steps:
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()


def whole_batch(optimizer_class, steps, **defaults):
    """One process on the whole batch: the reference."""
    model = make_model()
    optimizer = optimizer_class(model.parameters(), **defaults)
    for step in range(steps):
        x, y = batch(step)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def sharded(optimizer_class, rank, size, wire="none", **defaults):
    model = make_model()
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = commopt.ShardedOptimizer(
        model.named_parameters(), optimizer_class, wire=wire, **defaults)
    return model, optimizer


def matches_reference(rank, size):
    worst = []
    for name, cls, defaults in (
            ("SGD with momentum", torch.optim.SGD,
             {"lr": LR, "momentum": MOMENTUM}),
            ("Adam", torch.optim.Adam, {"lr": 0.01})):
        model, optimizer = sharded(cls, rank, size, **defaults)
        train(model, optimizer, range(STEPS), rank, size)
        check_identical(model, f"{name}, sharded")
        params = {n: p for n, p in model.named_parameters()}
        worst.append(check_close(params, whole_batch(cls, STEPS, **defaults),
                                 1e-5, f"{name}, sharded"))
    say(f"SGD with momentum and Adam: {STEPS} steps on {size} ranks equal "
        "one process on the whole batch within 1e-5, identical on every "
        "rank")
    return optimizer


def state_is_sharded(optimizer, size):
    total = sum(p.numel() for p in TinyNet().parameters())
    each = -(-total // size)
    sizes = {t.numel() for s in optimizer.state.values()
             for t in s.values() if torch.is_tensor(t) and t.dim() > 0}
    if sizes != {each}:
        fail(f"optimizer state tensors of {sorted(sizes)} elements, "
             f"expected {each} (ceil({total} / {size}))")
    say(f"optimizer state: {len(optimizer.state)} shard of {each} elements "
        f"per state tensor per rank, of a {total}-element model")


def roundtrip(rank, size):
    sgd = {"lr": LR, "momentum": MOMENTUM}
    model, optimizer = sharded(torch.optim.SGD, rank, size, **sgd)
    train(model, optimizer, range(STEPS), rank, size)
    whole = {n: p.detach().clone() for n, p in model.named_parameters()}

    model, optimizer = sharded(torch.optim.SGD, rank, size, **sgd)
    train(model, optimizer, range(3), rank, size)
    saved = io.BytesIO()
    torch.save(optimizer.state_dict(), saved)
    # A fresh model (other initial values) and optimizer, then the file.
    model = make_model(seed=5)
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = commopt.ShardedOptimizer(model.named_parameters(),
                                         torch.optim.SGD, **sgd)
    saved.seek(0)
    optimizer.load_state_dict(torch.load(saved))
    train(model, optimizer, range(3, STEPS), rank, size)
    for name, param in model.named_parameters():
        if not torch.equal(param.detach(), whole[name]):
            fail(f"resumed from the checkpoint, '{name}' differs from the "
                 "uninterrupted run")
    say("state_dict: saved after 3 steps and loaded into a fresh model, "
        f"training ends as the uninterrupted {STEPS} steps, bit for bit")
    return optimizer.state_dict()


def narrow_wire(rank, size):
    sgd = {"lr": LR, "momentum": MOMENTUM}
    model, optimizer = sharded(torch.optim.SGD, rank, size, wire="bf16",
                               **sgd)
    train(model, optimizer, range(STEPS), rank, size)
    check_identical(model, "bf16 wire")
    params = {n: p for n, p in model.named_parameters()}
    check_close(params, whole_batch(torch.optim.SGD, STEPS, **sgd), 5e-2,
                "bf16 wire")
    say("bf16 on the wire: identical on every rank, within 5e-2 of the "
        "reference")


def errors(rank, size, state):
    sgd = {"lr": LR}
    model, optimizer = sharded(torch.optim.SGD, rank, size, **sgd)
    other = dict(state, commopt=dict(state["commopt"],
                                     rank=(rank + 1) % size))
    expect_error("another rank's state",
                 lambda: optimizer.load_state_dict(other),
                 "each rank loads its own")
    wider = dict(state, commopt=dict(state["commopt"],
                                     world_size=size + 1))
    expect_error("another world size",
                 lambda: optimizer.load_state_dict(wider),
                 f"saved by {size + 1} ranks")
    small = torch.nn.Linear(3, 2)
    optimizer = commopt.ShardedOptimizer(small.named_parameters(),
                                         torch.optim.SGD, **sgd)
    expect_error("another model", lambda: optimizer.load_state_dict(state),
                 "another model")
    mixed = [torch.nn.Parameter(torch.zeros(3)),
             torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))]
    expect_error("mixed dtypes",
                 lambda: commopt.ShardedOptimizer(mixed, torch.optim.SGD,
                                                  **sgd),
                 "share one of")
    say("errors: another rank's state, another world size, another model "
        "and mixed dtypes, on every rank")


def main(argv):
    del argv
    rank, size = start()
    optimizer = matches_reference(rank, size)
    state_is_sharded(optimizer, size)
    state = roundtrip(rank, size)
    narrow_wire(rank, size)
    errors(rank, size, state)


if __name__ == "__main__":
    run_main(main)
