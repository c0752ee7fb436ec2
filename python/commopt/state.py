"""Training state across ranks: fingerprints that all ranks must share,
objects sent from one rank to all, and the checks a checkpoint passes
before it loads. Every function here is collective: every rank calls it,
in the same order."""

import hashlib
import io
import json

import torch

from . import runtime
from .errors import CommoptError

# Bits of a digest compared across ranks: 48 fit a float64 exactly, so that
# a max and a min allreduce tell whether every rank has the same.
_DIGEST_BITS = 48


def digest(value):
    """A hex digest of `value` (anything json can write, keys sorted)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def model_fingerprint(named_parameters):
    """The digest of the trainable parameters' names, shapes and dtypes."""
    return digest([[name, list(param.shape), str(param.dtype)]
                   for name, param in named_parameters])


def _reduce_f64(values, reduce):
    buffer = torch.tensor(values, dtype=torch.float64)
    runtime.check(runtime.fused_allreduce(
        [buffer.data_ptr()], [buffer.numel()], runtime.DTYPES["f64"],
        runtime.REDUCES[reduce], runtime.WIRE_NONE, 1.0),
        "commopt state agreement")
    return buffer.tolist()


def all_ranks_succeed(error):
    """Raises on every rank when any rank has an `error` (a message, or
    None): its own message, or on the other ranks which rank failed."""
    rank = runtime.rank()
    failed = _reduce_f64([float(rank) if error else -1.0], "max")[0]
    if error:
        raise CommoptError(error)
    if failed >= 0:
        raise CommoptError(f"rank {int(failed)} could not go on (its error "
                           "says why); every rank stops")


def agree(what, values):
    """Raises CommoptError on every rank unless every rank passes the same
    `values` ({label: hex digest or text}); the error names the first
    label on which ranks differ, this rank's value and another's."""
    labels = sorted(values)
    mine = []
    for label in labels:
        text = str(values[label])
        if not all(c in "0123456789abcdef" for c in text) or len(text) < 12:
            text = hashlib.sha256(text.encode()).hexdigest()
        mine.append(float(int(text[:_DIGEST_BITS // 4], 16)))
    highest = _reduce_f64(mine, "max")
    lowest = _reduce_f64(mine, "min")
    for label, own, high, low in zip(labels, mine, highest, lowest):
        if high != low:
            other = high if own != high else low
            raise CommoptError(
                f"the ranks disagree on {what}: {label} differs (this rank, "
                f"{runtime.rank()}, has {_hex(own)}..., another rank "
                f"{_hex(other)}...); every rank must load the same")


def _hex(value):
    return f"{int(value):0{_DIGEST_BITS // 4}x}"


def broadcast_object(value, root_rank=0):
    """`root_rank`'s `value` (anything torch.save writes) on every rank;
    the other ranks' `value` is ignored."""
    rank = runtime.rank()
    if rank == root_rank:
        stream = io.BytesIO()
        torch.save(value, stream)
        data = stream.getvalue()
    length = torch.tensor([float(len(data)) if rank == root_rank else 0.0],
                          dtype=torch.float64)
    runtime.check(runtime.broadcast(length.data_ptr(), 1,
                                    runtime.DTYPES["f64"], root_rank),
                  "broadcast of the state's size")
    size = int(length.item())
    # The bytes travel as the bits of f64 words; broadcasts copy bits.
    words = torch.zeros((size + 7) // 8, dtype=torch.float64)
    raw = words.view(torch.uint8)
    if rank == root_rank:
        raw[:size] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    if words.numel():
        runtime.check(runtime.broadcast(words.data_ptr(), words.numel(),
                                        runtime.DTYPES["f64"], root_rank),
                      "broadcast of the state")
    if rank == root_rank:
        return value
    return torch.load(io.BytesIO(raw[:size].numpy().tobytes()))


def gather_objects(value, root_rank=0):
    """Every rank's `value` in rank order on `root_rank`, None elsewhere:
    each rank broadcasts its own in turn."""
    gathered = []
    for source in range(runtime.size()):
        received = broadcast_object(value, source)
        if runtime.rank() == root_rank:
            gathered.append(received)
    return gathered if runtime.rank() == root_rank else None


def any_rank(flag):
    """Whether `flag` holds on some rank (collective)."""
    return _reduce_f64([1.0 if flag else 0.0], "max")[0] > 0


def count_ranks(flag):
    """On how many ranks `flag` holds (collective)."""
    return int(_reduce_f64([1.0 if flag else 0.0], "sum")[0])
