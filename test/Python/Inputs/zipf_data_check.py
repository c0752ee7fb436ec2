"""Checks examples/zipf_embedding/zipf_data.py on the data it generates.

    zipf_data_check.py EXAMPLES_DIR

Prints one line per property, or exits non-zero naming the one that fails.
"""

import argparse
import math
import sys

import torch

sys.path.insert(0, sys.argv[1] + "/zipf_embedding")
from zipf_data import (  # noqa: E402
    ZipfTokens, add_data_arguments, example_batch, loader, rank_batches)


def fail(message):
    sys.exit(f"FAILED: {message}")


def main():
    data = ZipfTokens(20000, vocab=50000, sequence=32, exponent=1.1,
                      classes=4, seed=3)
    again = ZipfTokens(20000, vocab=50000, sequence=32, exponent=1.1,
                       classes=4, seed=3)
    other = ZipfTokens(20000, vocab=50000, sequence=32, exponent=1.1,
                       classes=4, seed=4)
    if not torch.equal(data.tokens, again.tokens) or \
            not torch.equal(data.labels, again.labels):
        fail("the same seed gave other data")
    if torch.equal(data.tokens, other.tokens):
        fail("another seed gave the same data")
    print("deterministic: the same seed, the same data; another, other data")

    if data.tokens.min() < 0 or data.tokens.max() >= 50000:
        fail("a token id outside the vocabulary")
    # Rank-frequency: the r-th most frequent id's count falls as r^-s. Fit
    # the slope of log count on log rank over ranks 1..100.
    counts = torch.bincount(data.tokens.flatten(), minlength=50000)
    top = counts.sort(descending=True).values[:100].double()
    x = torch.log(torch.arange(1, 101, dtype=torch.float64))
    y = torch.log(top)
    slope = (((x - x.mean()) * (y - y.mean())).sum() /
             ((x - x.mean()) ** 2).sum()).item()
    if not abs(slope + 1.1) < 0.1:
        fail(f"rank-frequency slope {slope:.3f}, expected -1.1 within 0.1")
    # The most frequent id is the permutation's first, not id 0.
    if counts.argmax().item() != data.permutation[0].item():
        fail("the most frequent id is not the first of the permutation")
    print(f"Zipf: rank-frequency slope {slope:.2f} (exponent 1.1), popular "
          "ids spread by the permutation")

    # Recomputed here, sample by sample: rank = position in the
    # permutation.
    rank_of = torch.empty(50000, dtype=torch.int64)
    rank_of[data.permutation] = torch.arange(50000)
    for i in range(0, 20000, 97):
        weights = [0.0] * 4
        for token in data.tokens[i].tolist():
            weights[token % 4] += math.log(2 + rank_of[token].item())
        if weights.index(max(weights)) != data.labels[i].item():
            fail(f"sample {i}: label {data.labels[i].item()} is not the "
                 f"topic of largest weight ({weights})")
    shares = torch.bincount(data.labels, minlength=4).double() / len(data)
    if shares.min() < 0.1:
        fail(f"a class is rare: {shares.tolist()}")
    print("labels: each sample's topic of largest weight; every class at "
          "least 10% of samples")

    seen = []
    for rank in range(4):
        for tokens, labels in loader(data, 50, rank, 4, seed=0):
            if tokens.shape != (50, 32) or labels.shape != (50,):
                fail(f"rank {rank}: a batch of shape {list(tokens.shape)}")
            seen.append(tokens)
    rows = torch.cat(seen)
    if rows.shape[0] != 20000:
        fail(f"the 4 ranks' loaders gave {rows.shape[0]} samples, not 20000")
    as_set = {tuple(row.tolist()) for row in rows}
    originals = {tuple(row.tolist()) for row in data.tokens}
    if as_set != originals:
        fail("the ranks' shards do not cover the data set exactly")
    print("loader: 4 ranks' shards cover the 20000 samples, batches of 50")

    parser = argparse.ArgumentParser()
    add_data_arguments(parser, 50000, 4)
    args = parser.parse_args(["--batch-size", "50", "--steps", "7",
                              "--warmup-steps", "3", "--seed", "2"])
    drawn = [rank_batches(args, rank, 4) for rank in range(4)]
    if any(len(batches) != 10 for batches in drawn):
        fail(f"rank_batches gave {[len(b) for b in drawn]} batches, not 10 "
             "a rank")
    same = ZipfTokens(2000, 50000, 32, 1.1, 4, seed=3)
    for rank in range(4):
        expected = list(loader(same, 50, rank, 4, seed=2))
        if not all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
                   for a, b in zip(drawn[rank], expected)):
            fail(f"rank {rank}: rank_batches is not its shard of the data "
                 "of seed --seed + 1, shuffled by --seed")
    print("rank_batches: 4 ranks x 10 batches of 50, each rank's shard of "
          "the data train.py draws")

    first, second = example_batch(8), example_batch(8)
    if first.shape != (8, 32) or torch.equal(first, second):
        fail("example_batch did not give a new batch of 8 per call")
    print("example_batch: a new batch per call")

    for bad in ({"samples": 0}, {"samples": 10, "exponent": 0.0},
                {"samples": 10, "vocab": 1}):
        try:
            ZipfTokens(**bad)
        except ValueError as error:
            if "ZipfTokens" not in str(error):
                fail(f"{bad}: the error does not name ZipfTokens")
            continue
        fail(f"{bad}: no error")
    print("bad arguments: errors that name them")


main()
