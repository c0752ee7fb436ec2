"""Small models for the exporter's tests (commopt-export.py MODULE:FUNCTION).

Each factory returns a model that exports in well under a second on a CPU;
the functions beside them are the --example-inputs and --loss they need.
"""

import torch
from torch import nn

VOCAB = 32
WIDTH = 16
SEQUENCE = 6


class TiedLM(nn.Module):
    """An embedding, a hidden layer and an output projection that shares
    the embedding's weight (dec.weight is enc.weight)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Embedding(VOCAB, WIDTH)
        self.hidden = nn.Linear(WIDTH, WIDTH)
        self.dec = nn.Linear(WIDTH, VOCAB)
        self.dec.weight = self.enc.weight

    def forward(self, tokens):
        return self.dec(torch.tanh(self.hidden(self.enc(tokens))))


def tied_lm():
    return TiedLM()


def token_ids(batch_size):
    """--example-inputs: a batch of token ids."""
    return torch.randint(0, VOCAB, (batch_size, SEQUENCE))


def next_token_loss(output, tokens):
    """--loss: cross entropy of each position's prediction of the next
    token."""
    logits = output[:, :-1].reshape(-1, output.shape[-1])
    return nn.functional.cross_entropy(logits.float(),
                                       tokens[:, 1:].reshape(-1))


class TinyTransformer(nn.Module):
    """A language model: token and position embeddings, a one-layer
    nn.TransformerEncoder, an output projection tied to the token
    embedding."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.positions = nn.Parameter(torch.zeros(SEQUENCE, WIDTH))
        layer = nn.TransformerEncoderLayer(WIDTH, nhead=2, dim_feedforward=32,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.tokens.weight

    def forward(self, tokens, mask=None):
        x = self.tokens(tokens) + self.positions[:tokens.shape[1]]
        return self.head(self.encoder(x, mask=mask))


def tiny_transformer():
    return TinyTransformer()


def transformer_inputs(batch_size):
    """--example-inputs for TinyTransformer, as keyword arguments: token
    ids and a causal mask."""
    mask = torch.triu(torch.full((SEQUENCE, SEQUENCE), float("-inf")),
                      diagonal=1)
    return {"tokens": token_ids(batch_size), "mask": mask}


def transformer_loss(output, inputs):
    return next_token_loss(output, inputs["tokens"])


class Branchy(nn.Module):
    """A model with a branch that training never takes (`rare` runs only
    for inputs with more than 1000 features), and a used layer whose bias
    is never used."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(8, 8)
        self.rare = nn.Linear(8, 8)
        self.partial = nn.Linear(8, 4)
        self.last = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.first(x))
        if x.shape[-1] > 1000:
            x = self.rare(x)
        x = nn.functional.linear(x, self.partial.weight)
        return self.last(x)


def branchy():
    return Branchy()


class TwoHeads(nn.Module):
    """A trunk with two heads: returns (main, aux); only aux depends on
    `aux_head`, so a loss of the first output alone leaves it unused."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 8)
        self.main_head = nn.Linear(8, 2)
        self.aux_head = nn.Linear(8, 3)

    def forward(self, x):
        x = torch.relu(self.trunk(x))
        return self.main_head(x), {"aux": [self.aux_head(x)]}


def two_heads():
    return TwoHeads()


def first_output_loss(output, inputs):
    """--loss that uses the main head only (as the exporter once did)."""
    return output[0].square().mean()


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def half_mlp():
    """An MLP already in f16."""
    return mlp().half()


def bf16_mlp():
    """An MLP already in bf16."""
    return mlp().to(torch.bfloat16)


def not_a_loss(output, inputs):
    """--loss that returns a vector."""
    return output.sum(dim=0)


class Counted(nn.Module):
    """A convolution, a batch norm, an activation, pooling and a linear
    layer: one module of each kind whose work export-counts.test checks by
    hand."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.norm(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def counted():
    return Counted()


BAG_ROWS = 50000


class BagOfWords(nn.Module):
    """A large embedding, averaged over a sample's tokens, and a classifier:
    the embedding's gradient touches only the rows of the batch's tokens."""

    def __init__(self, sparse):
        super().__init__()
        self.embedding = nn.Embedding(BAG_ROWS, 16, sparse=sparse)
        self.fc = nn.Linear(16, 4)

    def forward(self, tokens):
        return self.fc(self.embedding(tokens).mean(dim=1))


def bag_of_words():
    """Dense, mostly-zero embedding gradients."""
    return BagOfWords(sparse=False)


def bag_of_words_coo():
    """Sparse COO embedding gradients (nn.Embedding(sparse=True))."""
    return BagOfWords(sparse=True)


_zipf = torch.Generator().manual_seed(5)


def zipf_tokens(batch_size):
    """--example-inputs: a new batch of 16 token ids per sample on every
    call, Zipf-like (id ~ 1/u), so that popular ids recur across batches."""
    u = torch.rand((batch_size, 16), generator=_zipf)
    return (1.0 / u.clamp_min(1.0 / BAG_ROWS)).to(torch.int64).clamp(
        0, BAG_ROWS - 1)
