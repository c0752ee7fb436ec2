"""The lossless rows exchange trains an embedding model to DDP's parameters.

A bag-of-words model (an nn.Embedding of 500 rows of 8, the mean of a
sample's tokens, a linear layer to 3 classes) trains 6 SGD steps on 4 ranks
with token ids drawn from a Zipf-like distribution, so that ranks touch some
rows together (popular ones), some alone, and a batch repeats ids: a sparse
COO gradient (`--coo`, nn.Embedding(sparse=True)) then has duplicate
indices. Rank 3's samples are all padding (padding_idx 0), so its embedding
gradient is empty. The plan reduces the embedding's gradient by the rows
exchange given on the command line (hash or allgather, blocking or started
on a channel) and the linear layer's dense; PyTorch DDP over gloo, with
sparse gradients under --coo, trains the same model on the same data. Both
must end with the same parameters within float rounding, on every rank.

    mpirun -np 4 python3 sparse_rows.py hash --coo --started
"""

import argparse

import torch
from torch import nn

import commopt
from common import (check_close, check_identical, dense, end_gloo, fail,
                    param_gradient, plan, run_main, say, sparse,
                    start_with_gloo)

ROWS, WIDTH, CLASSES, TOKENS, PER_RANK = 500, 8, 3, 12, 8


class BagOfWords(nn.Module):
    def __init__(self, coo):
        super().__init__()
        self.embedding = nn.Embedding(ROWS, WIDTH, padding_idx=0, sparse=coo)
        self.fc = nn.Linear(WIDTH, CLASSES)

    def forward(self, tokens):
        return self.fc(self.embedding(tokens).mean(dim=1))


def tokens_of(step, rank):
    """Rank `rank`'s token ids in `step`: Zipf-like (id ~ 1/u, capped), so
    that low ids are shared across ranks and repeat within a batch; all
    padding on rank 3."""
    generator = torch.Generator().manual_seed(1000 * step + rank)
    if rank == 3:
        return torch.zeros((PER_RANK, TOKENS), dtype=torch.int64)
    u = torch.rand((PER_RANK, TOKENS), generator=generator)
    return (1.0 / u.clamp_min(1.0 / (ROWS - 1))).to(torch.int64).clamp(
        1, ROWS - 1)


def labels_of(step, rank):
    generator = torch.Generator().manual_seed(7919 * step + rank)
    return torch.randint(0, CLASSES, (PER_RANK,), generator=generator)


def train(model, optimizer, rank, steps=6):
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        logits = model(tokens_of(step, rank))
        nn.functional.cross_entropy(logits, labels_of(step, rank)).backward()
        optimizer.step()


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("exchange", choices=("hash", "allgather"))
    parser.add_argument("--coo", action="store_true")
    parser.add_argument("--started", action="store_true")
    args = parser.parse_args(argv)
    # Ports of their own: lit runs tests at once, and sharded-matches-ddp's
    # runs use 29641-29645.
    rank, size = start_with_gloo(29671 + 2 * ("hash", "allgather").index(
        args.exchange) + args.coo)

    torch.manual_seed(0)
    ours = BagOfWords(args.coo)
    theirs = BagOfWords(args.coo)
    theirs.load_state_dict(ours.state_dict())

    g = lambda name: param_gradient(ours, name)  # noqa: E731
    rows = sparse(g("embedding.weight"), "rows", args.exchange, 0.05,
                  chunk_elements=WIDTH)
    if args.started:
        rows["channel"] = 1
    the_plan = plan([rows, dense([g("fc.weight"), g("fc.bias")], channel=0)])
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(ours.parameters(), lr=0.5),
        named_parameters=ours.named_parameters(), plan=the_plan)
    if optimizer.residuals:
        fail("the lossless exchange kept residuals: "
             f"{list(optimizer.residuals)}")
    train(ours, optimizer, rank)

    ddp = nn.parallel.DistributedDataParallel(theirs)
    train(ddp, torch.optim.SGD(ddp.parameters(), lr=0.5), rank)

    check_identical(ours, "commopt")
    expected = {n: p.detach() for n, p in theirs.named_parameters()}
    worst = check_close(dict(ours.named_parameters()), expected, 1e-5,
                        "commopt against DDP")
    say(f"{args.exchange}{' coo' if args.coo else ''}"
        f"{' started' if args.started else ''}: parameters equal DDP's "
        f"(largest difference {'below' if worst < 1e-6 else 'at'} 1e-6 of "
        f"the largest magnitude)")
    del ddp
    end_gloo()


run_main(main)
