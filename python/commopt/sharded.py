"""Sharded data parallelism (ZeRO-2, FSDP's SHARD_GRAD_OP) over commrt's
reduce-scatter and all-gather.

Every rank keeps the whole model, but the optimizer of one shard of it: the
trainable parameters, seen as one flat tensor in their order (FSDP's flat
parameter), are cut into as many shards of ceil(N / ranks) elements as
there are ranks, and rank r's optimizer updates shard r. A step
reduce-scatters the gradients (each rank receives the average of its
shard), steps the shard's optimizer, and all-gathers the updated shards
into every rank's parameters:

    import commopt
    commopt.init()
    model = make_model()
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = commopt.ShardedOptimizer(model.parameters(),
                                         torch.optim.Adam, lr=1e-3)
    for x, y in loader:                     # this rank's part of the batch
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()                    # reduce-scatter, step, gather

The optimizer's state (momentum, Adam's moments) is 1 / ranks of DDP's
(the last shards padded with zeros), and each rank sends and receives
(ranks - 1) / ranks of the parameters twice per step, as a ring allreduce
does. It is torch's ZeroRedundancyOptimizer in what it keeps, without the
allreduce of the whole gradient that ZeroRedundancyOptimizer leaves to
DDP.
"""

import torch

from . import runtime
from . import state as _state
from .errors import CommoptError

_STATE_FORMAT = "commopt-sharded-optimizer-state"

_DTYPE_NAMES = {torch.float32: "f32", torch.float64: "f64",
                torch.float16: "f16", torch.bfloat16: "bf16"}


class ShardedOptimizer:
    """The optimizer of this rank's shard of `params` (tensors, or (name,
    tensor) pairs, in the same order on every rank), made by
    `optimizer_class(shard_params, **defaults)`.

    - `wire` ("none", "f16" or "bf16"): the type gradients travel and are
      reduced in (the parameters always travel in their own type, so that
      every rank keeps the same ones).
    - `group`: a process group handle (commrt_group_split), 0 for all ranks.

    The parameters must be equal on every rank at the start
    (broadcast_parameters) and be contiguous CPU tensors of one
    floating-point type. step() consumes the gradients: afterwards their
    contents are unspecified until the next backward. Gradients that are
    None (parameters unused in a step) count as zeros."""

    def __init__(self, params, optimizer_class, wire="none", group=0,
                 **defaults):
        runtime.init()
        named = list(params)
        if named and isinstance(named[0], tuple):
            self.names = [name for name, _ in named]
            self.params = [param for _, param in named]
        else:
            self.params = named
            self.names = [str(i) for i in range(len(named))]
        self.params = [p for p in self.params if p.requires_grad]
        if not self.params:
            raise CommoptError("ShardedOptimizer: no trainable parameters")
        dtypes = {p.dtype for p in self.params}
        if len(dtypes) != 1 or next(iter(dtypes)) not in _DTYPE_NAMES:
            raise CommoptError(
                "ShardedOptimizer: the parameters must share one of "
                f"{', '.join(str(d) for d in _DTYPE_NAMES)}, got "
                f"{', '.join(sorted(str(d) for d in dtypes))}")
        for param in self.params:
            if param.device.type != "cpu" or not param.is_contiguous():
                raise CommoptError(
                    "ShardedOptimizer: the parameters must be contiguous "
                    f"CPU tensors, got one of shape {list(param.shape)} on "
                    f"{param.device}")
        if wire not in ("none", "f16", "bf16"):
            raise CommoptError(f"ShardedOptimizer: wire '{wire}' is not "
                               "one of none, f16, bf16")
        self.dtype = next(iter(dtypes))
        self._dtype_code = runtime.DTYPES[_DTYPE_NAMES[self.dtype]]
        self._wire = runtime.WIRE_NONE if wire == "none" \
            else runtime.DTYPES[wire]
        self.group = group
        self.rank = runtime.group_rank(group)
        self.ranks = runtime.group_size(group)
        self.counts = [p.numel() for p in self.params]
        self.total = sum(self.counts)
        self.shard_elements = runtime.shard_elements(self.total, self.ranks)
        self.begin = min(self.total, self.rank * self.shard_elements)
        self.length = min(self.total, self.begin + self.shard_elements) - \
            self.begin
        shard = torch.zeros(self.shard_elements, dtype=self.dtype)
        with torch.no_grad():
            shard[:self.length] = self._flat_slice(self.begin, self.length)
        self.shard = torch.nn.Parameter(shard)
        self.optimizer = optimizer_class([self.shard], **defaults)
        self._model_fingerprint = _state.model_fingerprint(
            zip(self.names, self.params))
        self.steps = 0

    def _flat_slice(self, begin, length):
        """Elements [begin, begin + length) of the parameters seen flat."""
        parts, offset = [], 0
        for param in self.params:
            low = max(begin, offset)
            high = min(begin + length, offset + param.numel())
            if low < high:
                parts.append(param.detach().reshape(-1)[low - offset:
                                                         high - offset])
            offset += param.numel()
        if not parts:
            return torch.zeros(0, dtype=self.dtype)
        return torch.cat(parts)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def zero_grad(self, set_to_none=True):
        for param in self.params:
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad.zero_()

    def _gradients(self):
        """Every parameter's gradient, contiguous; zeros where it has
        none."""
        grads = []
        for param in self.params:
            grad = param.grad
            if grad is None:
                grad = torch.zeros_like(param)
                param.grad = grad
            elif grad.is_sparse:
                raise CommoptError(
                    "ShardedOptimizer: sparse gradients are not sharded "
                    "(use DistributedOptimizer's rows exchange)")
            elif not grad.is_contiguous():
                grad = grad.contiguous()
                param.grad = grad
            grads.append(grad)
        return grads

    def step(self, closure=None):
        """Reduce-scatters the gradients into this rank's shard (their
        average), steps the shard's optimizer, and all-gathers every
        rank's updated shard into the parameters. Collective."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = self._gradients()
        reduced = torch.empty(self.shard_elements, dtype=self.dtype)
        runtime.check(runtime.reduce_scatter(
            [g.data_ptr() for g in grads], self.counts, reduced.data_ptr(),
            self.shard_elements, self._dtype_code, runtime.REDUCES["avg"],
            self._wire, 1.0, group=self.group),
            "ShardedOptimizer.step: reduce_scatter")
        self.shard.grad = reduced
        self.optimizer.step()
        self._gather()
        self.steps += 1
        return loss

    def _gather(self):
        """Every rank's shard into every rank's parameters."""
        with torch.no_grad():
            runtime.check(runtime.all_gather(
                self.shard.data_ptr(), self.shard_elements,
                [p.data_ptr() for p in self.params], self.counts,
                self._dtype_code, runtime.WIRE_NONE, 1.0, group=self.group),
                "ShardedOptimizer.step: all_gather")

    def state_dict(self):
        """This rank's training state, for a file per rank (FSDP's
        SHARDED_STATE_DICT): {"optimizer": the shard optimizer's
        state_dict(), "commopt": the format, the rank, the world size, the
        flat tensor's size and this rank's range of it, the fingerprint of
        the parameters (names, shapes, dtypes), the steps taken and the
        shard's values}."""
        return {"optimizer": self.optimizer.state_dict(),
                "commopt": {
                    "format": _STATE_FORMAT, "version": 1,
                    "rank": self.rank, "world_size": self.ranks,
                    "total": self.total, "begin": self.begin,
                    "length": self.length, "steps": self.steps,
                    "model": self._model_fingerprint,
                    "shard": self.shard.detach().clone()}}

    def load_state_dict(self, state):
        """Restores what this rank's state_dict() returned, and gathers
        the restored shards into every rank's parameters. Collective: every
        rank loads its own file. Raises CommoptError on every rank, naming
        what differs, where a rank's state was saved by another rank,
        world size or model, or the ranks loaded different steps."""
        error = self._check_state(state)
        _state.all_ranks_succeed(error)
        own = state["commopt"]
        _state.agree("the sharded checkpoint",
                     {"its step count": str(own["steps"])})
        self.optimizer.load_state_dict(state["optimizer"])
        with torch.no_grad():
            self.shard.copy_(own["shard"])
        self.steps = own["steps"]
        self._gather()

    def _check_state(self, state):
        """None where `state` loads on this rank, else why not."""
        if not isinstance(state, dict) or "commopt" not in state or \
                "optimizer" not in state:
            return "the state is not a ShardedOptimizer.state_dict()"
        own = state["commopt"]
        if own.get("format") != _STATE_FORMAT or own.get("version") != 1:
            return (f"the state's format is {own.get('format')!r} version "
                    f"{own.get('version')!r}, expected {_STATE_FORMAT!r} "
                    "version 1")
        if own.get("world_size") != self.ranks:
            return (f"the checkpoint was saved by {own.get('world_size')} "
                    f"ranks, this job shards over {self.ranks}: each rank's "
                    "file holds its shard of the optimizer state, which "
                    "moves to another world size only by gathering and "
                    "re-sharding it")
        if own.get("rank") != self.rank:
            return (f"this is rank {own.get('rank')}'s state, loaded on "
                    f"rank {self.rank}: each rank loads its own")
        if own.get("model") != self._model_fingerprint or \
                own.get("total") != self.total:
            return ("the checkpoint was saved for another model (its "
                    "parameters' names, shapes or dtypes differ)")
        shard = own.get("shard")
        if not isinstance(shard, torch.Tensor) or \
                tuple(shard.shape) != (self.shard_elements,):
            return (f"the checkpoint's shard is not {self.shard_elements} "
                    "elements")
        return None
