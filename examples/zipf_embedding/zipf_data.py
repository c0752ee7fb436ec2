"""Token data with a Zipf distribution, for models with a large embedding.

Natural-language and recommendation data are heavy-tailed: a few ids are
in most samples, most ids are rare. `ZipfTokens` generates such a data set
deterministically from a seed: each sample is `sequence` token ids drawn
with P(rank r) proportional to 1 / (r + 1)^s (r = 0 the most frequent),
the ranks mapped to ids by a fixed random permutation (popular ids are
spread over the table, as a tokenizer's are), and a label the bag of its
tokens decides: each id has a topic (id mod classes), and the label is the
topic of largest weight among the sample's tokens, a token weighing
log(2 + its rank) (rare words say more than common ones, as in tf-idf; the
lowest topic on a tie), so that a bag-of-words model can learn it and the
classes are about equally common.

`loader(...)` is the training loader, sharded by rank as DDP users shard
(torch's DistributedSampler over a TensorDataset); `add_data_arguments`
and `rank_batches` give the scripts that run on it (train.py,
bench/embedding/exchange_alone.py) the same options and the same batches;
`example_batch` is the `--example-inputs` function of commopt-export.py, a
new batch per call.
"""

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def topic_labels(tokens, ranks, classes):
    """Each sample's topic of largest weight: token id mod `classes`, each
    token weighing log(2 + its frequency rank); the lowest topic on a
    tie."""
    weights = torch.log(2.0 + ranks.to(torch.float64))
    topics = torch.zeros((tokens.shape[0], classes), dtype=torch.float64)
    topics.scatter_add_(1, tokens % classes, weights)
    # argmax returns the first maximum: the lowest topic on a tie.
    return topics.argmax(dim=1)


class ZipfTokens:
    """`samples` samples of `sequence` token ids from a vocabulary of
    `vocab`, Zipf exponent `exponent`, labels in `classes` topics; the same
    for the same arguments."""

    def __init__(self, samples, vocab=100000, sequence=32, exponent=1.1,
                 classes=4, seed=0):
        if samples < 1 or vocab < 2 or sequence < 1 or classes < 1:
            raise ValueError(
                f"ZipfTokens: samples {samples}, vocab {vocab}, sequence "
                f"{sequence} and classes {classes} must be positive (vocab "
                "at least 2)")
        if not exponent > 0:
            raise ValueError(f"ZipfTokens: exponent {exponent} must be > 0")
        self.vocab, self.sequence, self.exponent = vocab, sequence, exponent
        self.classes = classes
        generator = torch.Generator().manual_seed(seed)
        weights = 1.0 / torch.arange(1, vocab + 1,
                                     dtype=torch.float64) ** exponent
        cdf = torch.cumsum(weights, 0)
        cdf /= cdf[-1].clone()
        # Ids by rank: rank r is id permutation[r].
        self.permutation = torch.randperm(vocab, generator=generator)
        u = torch.rand((samples, sequence), generator=generator,
                       dtype=torch.float64)
        ranks = torch.searchsorted(cdf, u).clamp_(max=vocab - 1)
        self.tokens = self.permutation[ranks]
        self.labels = topic_labels(self.tokens, ranks, classes)

    def __len__(self):
        return self.tokens.shape[0]

    def dataset(self):
        return TensorDataset(self.tokens, self.labels)


def loader(data, batch_size, rank, size, seed=0):
    """Rank `rank`'s loader of `data` (a ZipfTokens): its 1/size of every
    epoch, shuffled by `seed` as DistributedSampler shuffles."""
    sampler = DistributedSampler(data.dataset(), num_replicas=size,
                                 rank=rank, shuffle=True, seed=seed,
                                 drop_last=True)
    return DataLoader(data.dataset(), batch_size=batch_size, sampler=sampler,
                      drop_last=True)


def add_data_arguments(parser, vocab, classes):
    """The data's options: --vocab (default `vocab`), --sequence,
    --exponent, --classes (default `classes`), --batch-size, --steps,
    --warmup-steps and --seed."""
    parser.add_argument("--vocab", type=int, default=vocab)
    parser.add_argument("--sequence", type=int, default=32)
    parser.add_argument("--exponent", type=float, default=1.1)
    parser.add_argument("--classes", type=int, default=classes)
    parser.add_argument("--batch-size", type=int, default=32,
                        help="samples per rank and step")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)


def check_data_arguments(parser, args):
    """Ends the program through `parser` where add_data_arguments' options
    in `args` cannot make a run."""
    if args.steps < 1 or args.warmup_steps < 0 or args.batch_size < 1:
        parser.error("--steps and --batch-size must be at least 1 and "
                     "--warmup-steps at least 0")


def rank_batches(args, rank, size):
    """Rank `rank`'s batches of a run of `args` (add_data_arguments'
    options), its warm-up's and its timed steps': the data from seed
    args.seed + 1, shuffled by args.seed, every rank's as train.py draws
    them."""
    total = (args.warmup_steps + args.steps) * args.batch_size * size
    data = ZipfTokens(total, args.vocab, args.sequence, args.exponent,
                      args.classes, seed=args.seed + 1)
    return list(loader(data, args.batch_size, rank, size, seed=args.seed))


_example = {}


def example_batch(batch_size):
    """commopt-export.py's --example-inputs: a new batch of token ids of
    the default ZipfTokens per call (a data set of 64 batches, cycled)."""
    data = _example.get(batch_size)
    if data is None:
        data = _example[batch_size] = [ZipfTokens(64 * batch_size, seed=1), 0]
    tokens, index = data[0].tokens, data[1]
    data[1] = (index + 1) % 64
    return tokens[index * batch_size:(index + 1) * batch_size]
