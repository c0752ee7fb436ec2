"""Fashion-MNIST and the CNN that commopt's training example trains.

The data comes from Debian's dataset-fashion-mnist package (the four idx
files, gzipped, in /usr/share/datasets/fashion-mnist/); nothing is
downloaded. The model is AlexNet-shaped: two small convolutions and a large
fully connected classifier (3.2 M of its 3.3 M parameters in fc1), so that
at 1 Gbit/s its gradient communication takes as long as its compute, as a
large classifier's does on GPUs. The second architecture is a small
ViT-style transformer over 7x7 patches (PatchTransformer).
"""

import gzip
import os
import struct

import torch
from torch import nn

DATA_DIR = os.environ.get("FASHION_MNIST_DIR",
                          "/usr/share/datasets/fashion-mnist")
# The training set's mean and standard deviation of pixel values in [0, 1].
MEAN, STD = 0.2860, 0.3530


def _read_idx(path, magic):
    try:
        with gzip.open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise SystemExit(
            f"cannot read {path}: {error}; install Debian's "
            "dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or "
            "set FASHION_MNIST_DIR") from None
    found, = struct.unpack(">I", data[:4])
    if found != magic:
        raise SystemExit(f"{path}: not an idx file of the expected kind "
                         f"(magic {found:#x}, expected {magic:#x})")
    return data


def load(split):
    """(images, labels) of 'train' (60000) or 't10k' (10000): images as
    normalised f32 of shape [N, 1, 28, 28], labels as int64."""
    images = _read_idx(os.path.join(DATA_DIR, f"{split}-images-idx3-ubyte.gz"),
                       0x803)
    count, rows, cols = struct.unpack(">III", images[4:16])
    labels = _read_idx(os.path.join(DATA_DIR, f"{split}-labels-idx1-ubyte.gz"),
                       0x801)
    if struct.unpack(">I", labels[4:8])[0] != count:
        raise SystemExit(f"{split}: image and label counts differ")
    pixels = torch.frombuffer(bytearray(images[16:]), dtype=torch.uint8)
    x = pixels.reshape(count, 1, rows, cols).float().div_(255)
    x.sub_(MEAN).div_(STD)
    y = torch.frombuffer(bytearray(labels[8:]), dtype=torch.uint8).long()
    return x, y


class FashionNet(nn.Module):
    """conv 5x5 (16) - pool - conv 5x5 (32) - pool - fc 1568x2048 - fc
    2048x10: 3.27 M parameters, 12.5 MiB of f32 gradients per step."""

    def __init__(self, width=2048):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 7 * 7, width)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class PatchTransformer(nn.Module):
    """A ViT-style transformer: the 28x28 image cut into 16 patches of 7x7,
    each embedded (a linear map of its 49 pixels) with a learned position,
    a class token, `depth` pre-norm encoder layers (`heads` heads, an MLP of
    4 x `dim`), a final norm and a linear head on the class token. The
    defaults: 0.34 M parameters in 44 tensors, the largest (each layer's
    MLP weights) 144 KiB; a step of batch 16 takes about 1.5 times
    FashionNet's compute on one core here."""

    def __init__(self, dim=96, depth=3, heads=4):
        super().__init__()
        self.patch = nn.Linear(7 * 7, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(0.02 * torch.randn(1, 17, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        batch = x.shape[0]
        # [B, 1, 28, 28] -> [B, 16, 49]: rows of patches, row-major.
        patches = x.unfold(2, 7, 7).unfold(3, 7, 7).reshape(batch, 16, 49)
        tokens = torch.cat([self.cls.expand(batch, -1, -1),
                            self.patch(patches)], dim=1) + self.position
        return self.head(self.norm(self.encoder(tokens))[:, 0])


def make_model():
    """The factory commopt-export.py reads (fashion_mnist:make_model)."""
    return FashionNet()


def make_transformer():
    """The second architecture (fashion_mnist:make_transformer)."""
    return PatchTransformer()


def make_tiny_transformer():
    """A small transformer of the same shape, for quick tests."""
    return PatchTransformer(dim=32, depth=1, heads=2)


def make_tiny_model():
    """A small model of the same shape, for quick tests."""
    return FashionNet(width=64)
