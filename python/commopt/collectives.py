"""Tensor collectives for the code around a training step (metrics, custom
synchronisation), as Horovod's hvd.allreduce and hvd.broadcast are: every
rank calls them with a tensor of the same shape and dtype, in the same
order. They are blocking, over all ranks, on the runtime the plans use
(MPI, or NCCL for GPU tensors).
"""

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

# Integer types broadcast as the bits of the float type of their size:
# broadcasts copy bits, so every value arrives exactly (through f64, int64
# values beyond 2^53 would be rounded, on the root too).
_BITS_AS_FLOAT = {torch.int64: (torch.float64, "f64"),
                  torch.int32: (torch.float32, "f32"),
                  torch.int16: (torch.float16, "f16")}


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
    dtype = dtype_name(tensor)
    # `buffer` holds the values in `tensor`'s dtype (or f64), `target` the
    # same memory as the broadcast sends it.
    if dtype is not None:
        buffer = target = tensor.contiguous()
    elif tensor.dtype in _BITS_AS_FLOAT:
        view, dtype = _BITS_AS_FLOAT[tensor.dtype]
        buffer = tensor.contiguous()
        target = buffer.view(view)
    elif tensor.dtype in (torch.uint8, torch.int8, torch.bool):
        buffer = target = tensor.to(torch.float64)
        dtype = "f64"
    else:
        which = f"'{name}'" if name else "a tensor"
        raise CommoptError(f"cannot broadcast {which} of dtype "
                           f"{tensor.dtype}")
    with torch.no_grad():
        runtime.check(
            runtime.broadcast(target.data_ptr(), target.numel(),
                              runtime.DTYPES[dtype], root_rank), what)
        if buffer is not tensor:
            tensor.copy_(buffer)
    return tensor


def broadcast(tensor, root_rank=0, name=None):
    """`root_rank`'s value of `tensor` on every rank, as a new tensor
    (`tensor` is left alone). Collective."""
    tensor = _dense(tensor, f"broadcast of '{name}'" if name else
                    "broadcast")
    return broadcast_(tensor.clone(), root_rank, name)
