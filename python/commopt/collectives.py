"""Tensor collectives for the code around a training step (metrics, custom
synchronisation), as Horovod's hvd.allreduce, hvd.allgather and
hvd.broadcast are: every rank calls them with a tensor of the same shape
(allgather: but for the first dimension) and dtype, in the same order. They
are blocking, over all ranks, on the runtime the plans use (MPI, or NCCL
for GPU tensors).
"""

import math

import torch

from . import runtime
from .errors import CommoptError
from .plan import dtype_name

# Reductions by name; "average" is Horovod's spelling of commrt's avg.
_REDUCES = {"sum": "sum", "average": "avg", "avg": "avg", "min": "min",
            "max": "max"}

# Integer (and bool) values travel as f64, which holds them exactly up to
# 2^53.
_EXACT_IN_F64 = 2 ** 53

# Integer types broadcast and allgather move as the bits of the float type
# of their size: those collectives copy bits, so every value arrives
# exactly (through f64, int64 values beyond 2^53 would be rounded, on the
# root too).
_BITS_AS_FLOAT = {torch.int64: (torch.float64, "f64"),
                  torch.int32: (torch.float32, "f32"),
                  torch.int16: (torch.float16, "f16")}

# 8-bit integers and bools travel through f64, which holds them exactly.
_THROUGH_F64 = (torch.uint8, torch.int8, torch.bool)

# Every dtype that broadcast and allgather move exactly, in a fixed order:
# allgather compares the ranks' dtypes by their place here.
_EXACT = [torch.float32, torch.float64, torch.float16, torch.bfloat16] + \
    list(_BITS_AS_FLOAT) + list(_THROUGH_F64)


def _exact_wire(tensor):
    """How `tensor` travels bit for bit in a copying collective: (a
    contiguous tensor holding its values as they travel, that tensor's
    commrt dtype name, a function turning what arrives in that form back
    into `tensor`'s dtype); None for a dtype that cannot travel exactly."""
    dtype = dtype_name(tensor)
    if dtype is not None:
        return tensor.contiguous(), dtype, lambda t: t
    if tensor.dtype in _BITS_AS_FLOAT:
        float_type, dtype = _BITS_AS_FLOAT[tensor.dtype]
        return (tensor.contiguous().view(float_type), dtype,
                lambda t: t.view(tensor.dtype))
    if tensor.dtype in _THROUGH_F64:
        through = tensor.to(torch.float64,
                            memory_format=torch.contiguous_format)
        return through, "f64", lambda t: t.to(tensor.dtype)
    return None


def _dense(tensor, what):
    """`tensor`, detached; an error unless it is a dense torch.Tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise CommoptError(f"{what}: expected a torch.Tensor, not "
                           f"{type(tensor).__name__}")
    if tensor.is_sparse:
        raise CommoptError(f"{what}: sparse tensors are not supported")
    return tensor.detach()


def allreduce(tensor, op="average", name=None):
    """The reduction of `tensor` over all ranks, a new tensor of its shape,
    dtype and device: op is "average" (the default), "sum", "min" or
    "max". Floating-point tensors (f32, f64, f16, bf16) reduce in their own
    type; integer and bool tensors through f64, exactly while the values
    stay within 2^53 ("average" of them is an error: sum them, or reduce a
    float tensor). Collective."""
    what = f"allreduce of '{name}'" if name else "allreduce"
    tensor = _dense(tensor, what)
    if op not in _REDUCES:
        raise CommoptError(f"{what}: unknown op {op!r} (average, sum, min, "
                           "max)")
    reduce = _REDUCES[op]
    runtime.init()
    dtype = dtype_name(tensor)
    if dtype is not None:
        result = tensor.clone(memory_format=torch.contiguous_format)
        buffer = result
    elif tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        raise CommoptError(f"{what}: {tensor.dtype} is not supported (f32, "
                           "f64, f16, bf16, integers, bool)")
    else:
        if reduce == "avg":
            raise CommoptError(
                f"{what}: the average of a {tensor.dtype} tensor is not an "
                f"integer: use op='sum', or reduce a float tensor")
        buffer = tensor.to(torch.float64, memory_format=torch.contiguous_format)
        largest = buffer.abs().max().item() if buffer.numel() else 0.0
        if largest * runtime.size() > _EXACT_IN_F64:
            raise CommoptError(
                f"{what}: values up to {largest:.0f} may not add up exactly "
                "in f64 (2^53); reduce them as a float tensor")
        dtype = "f64"
        result = None
    if buffer.numel():
        runtime.check(runtime.fused_allreduce(
            [buffer.data_ptr()], [buffer.numel()], runtime.DTYPES[dtype],
            runtime.REDUCES[reduce], runtime.WIRE_NONE, 1.0), what)
    return result if result is not None else buffer.to(tensor.dtype)


def allreduce_(tensor, op="average", name=None):
    """allreduce() in place: `tensor` becomes the reduction; returns it."""
    reduced = allreduce(tensor, op, name)
    with torch.no_grad():
        tensor.copy_(reduced)
    return tensor


def broadcast_(tensor, root_rank=0, name=None):
    """Overwrites `tensor` with `root_rank`'s value on every rank; returns
    it. Floating-point tensors of f32, f64, f16 and bf16 are broadcast;
    integer ones as the bits of a float of their size, and 8-bit ones and
    bools through f64, so that every value arrives exactly. Collective."""
    what = f"broadcast of '{name}'" if name else "broadcast"
    _dense(tensor, what)
    runtime.init()
    if tensor.numel() == 0:
        return tensor
    wire = _exact_wire(tensor)
    if wire is None:
        which = f"'{name}'" if name else "a tensor"
        raise CommoptError(f"cannot broadcast {which} of dtype "
                           f"{tensor.dtype}")
    sent, dtype, arrived = wire
    with torch.no_grad():
        runtime.check(
            runtime.broadcast(sent.data_ptr(), sent.numel(),
                              runtime.DTYPES[dtype], root_rank), what)
        received = arrived(sent)
        # Unless the broadcast wrote into `tensor` itself (a contiguous
        # tensor, or its bits as floats).
        if received.data_ptr() != tensor.data_ptr():
            tensor.copy_(received)
    return tensor


def broadcast(tensor, root_rank=0, name=None):
    """`root_rank`'s value of `tensor` on every rank, as a new tensor
    (`tensor` is left alone). Collective."""
    tensor = _dense(tensor, f"broadcast of '{name}'" if name else
                    "broadcast")
    return broadcast_(tensor.clone(), root_rank, name)


def _gather_f64(values, counts):
    """Every rank's `values` (floats, counts[r] of them on rank r), rank
    after rank, as a list."""
    send = torch.tensor(values, dtype=torch.float64)
    received = torch.empty(sum(counts), dtype=torch.float64)
    runtime.check(runtime.allgather(send.data_ptr(), received.data_ptr(),
                                    counts, runtime.DTYPES["f64"]),
                  "allgather of the tensors' shapes")
    return received.tolist()


def allgather(tensor, name=None):
    """Every rank's `tensor` concatenated along the first dimension, rank 0's
    first, as a new tensor on `tensor`'s device, as Horovod's hvd.allgather
    gives it: the ranks' first dimensions may differ, the other dimensions
    and the dtype must agree (a 0-dimensional tensor counts as one row).
    Values arrive bit for bit: floating-point tensors (f32, f64, f16, bf16)
    as themselves, integer ones as the bits of a float of their size, 8-bit
    ones and bools through f64. Collective."""
    what = f"allgather of '{name}'" if name else "allgather"
    tensor = _dense(tensor, what)
    runtime.init()
    size = runtime.size()
    rows = tensor.shape[0] if tensor.dim() else 1
    code = _EXACT.index(tensor.dtype) if tensor.dtype in _EXACT else -1
    # What every rank has: its dimensions, dtype and rows; then, where they
    # differ, each rank's shape, for the error every rank raises.
    header = _gather_f64([tensor.dim(), code, rows, hash(tuple(
        tensor.shape[1:])) % (1 << 48)], [4] * size)
    ranks = [header[4 * r:4 * r + 4] for r in range(size)]
    if any(r[3] != ranks[0][3] or r[0] != ranks[0][0] for r in ranks):
        shapes = _gather_f64(list(tensor.shape), [int(r[0]) for r in ranks])
        at, listed = 0, []
        for r in ranks:
            listed.append([int(d) for d in shapes[at:at + int(r[0])]])
            at += int(r[0])
        raise CommoptError(
            f"{what}: the ranks' tensors differ beyond the first dimension "
            f"(shapes by rank: {listed})")
    codes = sorted({int(r[1]) for r in ranks})
    if len(codes) > 1 or codes[0] < 0:
        names = [str(_EXACT[c]) if c >= 0 else "unsupported"
                 for c in (int(r[1]) for r in ranks)]
        raise CommoptError(
            f"{what}: dtypes by rank are {names}; every rank must pass the "
            "same one of f32, f64, f16, bf16, integers or bool")
    row_elements = math.prod(tensor.shape[1:])
    counts = [int(r[2]) * row_elements for r in ranks]
    send, dtype, arrived = _exact_wire(tensor)
    received = torch.empty((sum(int(r[2]) for r in ranks),) +
                           tuple(tensor.shape[1:]), dtype=send.dtype,
                           device=tensor.device)
    if sum(counts):
        runtime.check(runtime.allgather(send.data_ptr(), received.data_ptr(),
                                        counts, runtime.DTYPES[dtype]), what)
    return arrived(received)
