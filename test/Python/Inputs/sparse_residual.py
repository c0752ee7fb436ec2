"""Sparse collectives lose no gradient: what a rank sends plus its new
residual is its gradient plus its old residual, and the plan's reduced sum
is the sum over ranks of what they sent.

A plan with reduce=sum takes one parameter through each sparse scheme
(topk/allgather, threshold/hash, chunk/chunk). Each rank records its own
gradient with a tensor hook and its residual before each step; after it:
  - acc = grad + residual_old (in f32, as the runtime adds them), and each
    element of residual_new is either acc (kept) or 0 (sent), bit for bit,
    so sent = acc - residual_new and sent + residual_new == acc;
  - the selection has the size the scheme promises (topk: exactly k; the
    threshold search: between k and k + k/8 where no magnitudes tie;
    chunk: whole chunks, the same ones on every rank);
  - the sum over ranks of sent (in f64) is the reduced gradient, within f32
    summation rounding, and the reduced gradient is zero where no rank sent.
Step 2 starts from step 1's residual (non-zero), and step 3, whose
gradients are all zero, reduces residuals only: the residual is kept and
used across steps.

    mpirun -np 4 python3 sparse_residual.py
"""

import math

import torch

import commopt
from common import (all_reduce, batch, bits, dense, fail, loss_fn, make_model,
                    param_gradient, plan, run_main, say, shard, sparse, start)

SCHEMES = {
    # parameter: (select, exchange, density, chunk_elements)
    "fc1.weight": ("topk", "allgather", 0.02, None),
    "conv.weight": ("threshold", "hash", 0.2, None),
    "fc2.weight": ("chunk", "chunk", 0.1, 8),
}


def make_plan(model, started):
    """The plan; with `started`, the sparse collectives are started on
    channels 0 and 1 in turn and waited in synchronize()."""
    g = lambda name: param_gradient(model, name)  # noqa
    collectives = [dense([g("fc2.bias"), g("fc1.bias"), g("conv.bias")],
                         channel=0, reduce="sum")]
    for index, (name, (select, exchange, density, chunk)) in \
            enumerate(SCHEMES.items()):
        collective = sparse(g(name), select, exchange, density, chunk,
                            reduce="sum")
        if started:
            collective["channel"] = index % 2
        collectives.append(collective)
    return plan(collectives)


def check_step(step, name, grad, residual_old, residual_new, reduced):
    select, exchange, density, chunk = SCHEMES[name]
    what = f"step {step}, '{name}' ({select}/{exchange})"
    acc = (grad + residual_old).flatten()
    kept = residual_new.flatten()
    is_sent = bits(kept) == 0
    is_kept = bits(kept) == bits(acc)
    if not bool((is_sent | is_kept).all()):
        i = (~(is_sent | is_kept)).nonzero()[0].item()
        fail(f"{what}: element {i}: residual {kept[i].item():.9g} is neither "
             f"0 nor grad + residual = {acc[i].item():.9g}")
    sent = torch.where(is_sent, acc, torch.zeros_like(acc))
    count = acc.numel()
    nonzero = int((acc != 0).sum())
    selected = int(((sent != 0)).sum())
    if select == "topk":
        k = math.ceil(density * count)
        if selected != min(k, nonzero):
            fail(f"{what}: sent {selected} entries, not k = {k}")
        threshold = sent.abs().max() if selected == 0 else \
            sent[sent != 0].abs().min()
        if bool((torch.where(is_sent, torch.zeros_like(acc), acc).abs() >
                 threshold).any()):
            fail(f"{what}: kept an entry larger than one it sent")
    elif select == "threshold":
        k = math.ceil(density * count)
        if not min(k, nonzero) <= selected <= k + k // 8:
            fail(f"{what}: sent {selected} entries, not in [{k}, "
                 f"{k + k // 8}]")
    else:
        chunks = math.ceil(count / chunk)
        picked = sent.new_zeros(chunks)
        for c in range(chunks):
            piece = is_sent[c * chunk:(c + 1) * chunk]
            if not (bool(piece.all()) or not bool(
                    (piece & (acc[c * chunk:(c + 1) * chunk] != 0)).any())):
                fail(f"{what}: chunk {c} was sent in part")
            picked[c] = 1.0 if bool(
                (sent[c * chunk:(c + 1) * chunk] != 0).any()) else 0.0
        want = math.ceil(density * chunks)
        if int(picked.sum()) != want:
            fail(f"{what}: sent {int(picked.sum())} chunks, not "
                 f"ceil(density * chunks) = {want}")
        # The same chunks on every rank.
        if not torch.equal(all_reduce(picked, "min"),
                           all_reduce(picked, "max")):
            fail(f"{what}: the ranks sent different chunks")
    total = all_reduce(sent, "sum")
    magnitude = all_reduce(sent.abs(), "sum")
    got = reduced.flatten().double()
    error = (got - total).abs()
    # f32 sums of 4 terms: at most 3 roundings of partial sums, and one
    # of each term when residual and gradient were added.
    bound = 4 * 2.0**-24 * magnitude
    if not bool((error <= bound).all()):
        i = (error - bound).argmax().item()
        fail(f"{what}: element {i}: the plan reduced {got[i].item():.9g}, "
             f"the ranks sent {total[i].item():.9g} in all")
    if not bool((got[total == 0] == 0).all()):
        fail(f"{what}: non-zero where no rank sent anything")
    return all_reduce(torch.tensor([float(selected)]), "sum").item()


def main(argv):
    rank, size = start()
    model = make_model(seed=7)
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    own = {}
    for name in SCHEMES:
        dict(model.named_parameters())[name].register_hook(
            lambda grad, name=name: own.__setitem__(name, grad.clone()))
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01),
        model.named_parameters(),
        plan=make_plan(model, started="--started" in argv))
    for step in (1, 2, 3):
        residual_old = {n: r.clone() for n, r in optimizer.residuals.items()}
        if step > 1 and not all(bool((r != 0).any())
                                for r in residual_old.values()):
            fail(f"step {step}: a residual is all zero after step "
                 f"{step - 1}")
        x, y = shard(batch(step, seed=8), rank, size)
        optimizer.zero_grad()
        loss = loss_fn(model, x, y)
        if step == 3:
            loss = loss * 0.0   # zero gradients: only residuals are sent
        loss.backward()
        optimizer.synchronize()
        report = []
        for name in SCHEMES:
            param = dict(model.named_parameters())[name]
            sent = check_step(step, name, own[name], residual_old[name],
                              optimizer.residuals[name], param.grad)
            if step == 3 and not bool((param.grad != 0).any()):
                fail(f"step 3: '{name}' reduced nothing: the residual was "
                     "not used")
            report.append(f"{name} {int(sent)}")
        optimizer.optimizer.step()
        say(f"step {step}: sent + residual == gradient + old residual, "
            f"and the reduced sums are what was sent (entries sent over "
            f"ranks: {', '.join(report)})")


if __name__ == "__main__":
    run_main(main)
