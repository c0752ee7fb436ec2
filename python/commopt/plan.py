"""Communication plans: reading `commopt-translate --export-plan` output
(docs/Plan.md), checking it against a model and a job, and making the
default plan of a model that has none.
"""

import collections
import json
import math

from .errors import CommoptError

FORMAT = "commopt-plan"
VERSION = 1

_TORCH_DTYPES = {"torch.float32": "f32", "torch.float64": "f64",
                 "torch.float16": "f16", "torch.bfloat16": "bf16"}
_ELEMENT_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2}
_WIRES = ("none", "f16", "bf16")
_REDUCES = ("sum", "avg", "max", "min")
_SELECTS = ("topk", "threshold", "chunk", "rows")
_EXCHANGES = ("allgather", "hash", "chunk")


def dtype_name(tensor):
    """The plan's name of a tensor's element type, or None."""
    return _TORCH_DTYPES.get(str(tensor.dtype))


class GradientRange:
    """Elements [offset, offset + count) of one parameter's gradient,
    flattened in row-major order."""

    __slots__ = ("name", "shape", "dtype", "offset", "count", "narrowed")

    def __init__(self, name, shape, dtype, offset, count, narrowed=None):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype
        self.offset = offset
        self.count = count
        # In a mixed-wire bucket, whether it travels in the bucket's wire
        # type; None elsewhere.
        self.narrowed = narrowed

    @property
    def numel(self):
        return math.prod(self.shape)


class Collective:
    """One planned collective, in the plan's issue order."""

    def __init__(self, index, kind, gradients, reduce="avg", wire="none",
                 prescale=1.0, channel=0, priority=None, sparse=None,
                 start_us=None, end_us=None, transport=None):
        self.index = index
        self.kind = kind
        self.gradients = gradients
        self.reduce = reduce
        self.wire = wire
        self.prescale = prescale
        self.channel = channel
        self.priority = priority
        self.sparse = sparse
        self.start_us = start_us
        self.end_us = end_us
        # The backend that carries a dense collective ("nccl", "mpi"), where
        # the plan chose one; None for the backend in use.
        self.transport = transport

    @property
    def names(self):
        return [g.name for g in self.gradients]

    @property
    def is_lossless(self):
        """Whether it is the lossless exchange of a gradient's touched rows
        (a gradient that is sparse by nature), which keeps no residual."""
        return self.kind == "sparse" and self.sparse["select"] == "rows"

    @property
    def is_mixed_wire(self):
        """Whether some gradients travel in `wire` and others in their own
        type (a mixed-wire bucket)."""
        return any(g.narrowed is not None for g in self.gradients)

    def describe(self):
        names = self.names
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return f"collective #{self.index} ({self.kind}: {shown})"


class SparseWarmup(collections.namedtuple("SparseWarmup",
                                          ["steps", "start_density"])):
    """Deep Gradient Compression's warm-up of a plan's sparse gradients:
    the first step sends each at `start_density`, and its density falls
    geometrically to the plan's over `steps` steps."""

    def density(self, target, step):
        """The density of a sparse gradient of density `target` in step
        `step` (from 0): start_density * (target / start_density) **
        (step / steps) during the warm-up, `target` after it and for a
        gradient at least as dense as the start."""
        if step >= self.steps or target >= self.start_density:
            return target
        return self.start_density * \
            (target / self.start_density) ** (step / self.steps)


class Plan:
    """A plan: its collectives in issue order, and what it was made for."""

    def __init__(self, collectives, world_size=None, model="", cluster=None,
                 estimate=None, source="plan", momentum_correction=False,
                 sparse_warmup=None):
        self.collectives = collectives
        self.world_size = world_size
        # Whether the plan was priced with momentum correction of its sparse
        # gradients (comm-optimize momentum-correction=true).
        self.momentum_correction = momentum_correction
        # Deep Gradient Compression's warm-up of the sparse gradients
        # (comm-optimize sparse-warmup-steps=N), or None.
        self.sparse_warmup = sparse_warmup
        self.model = model
        self.cluster = cluster or {}
        self.estimate = estimate or {}
        self.source = source

    @property
    def kinds(self):
        """A short description of the plan's communication, for logs."""
        dense = [c for c in self.collectives if c.kind == "dense"]
        sparse = [c for c in self.collectives if c.kind == "sparse"]
        wires = sorted({c.wire for c in dense if c.wire != "none"})
        text = f"{len(dense)} dense"
        if wires:
            text += f" ({'/'.join(wires)} wire on " \
                    f"{sum(c.wire != 'none' for c in dense)})"
        if sparse:
            selects = sorted({c.sparse["select"] + "/" + c.sparse["exchange"]
                              for c in sparse})
            densities = sorted({c.sparse["density"] for c in sparse})
            text += f", {len(sparse)} sparse ({', '.join(selects)} at " \
                    f"density {', '.join(f'{d:g}' for d in densities)})"
        return text

    def fingerprint(self):
        """A hex digest of what the ranks must agree on to run the plan
        together: every collective (kind, gradients, reduce, wire,
        prescale, channel, sparse settings) in order, and momentum
        correction. The estimate and the plan's file are left out."""
        from .state import digest
        agreed = {}
        if self.sparse_warmup:
            agreed["sparse_warmup"] = list(self.sparse_warmup)
        return digest(dict(agreed, **{
            "momentum_correction": bool(self.momentum_correction),
            "collectives": [
                [c.kind, c.reduce, c.wire, c.prescale, c.channel,
                 c.priority, c.sparse,
                 [[g.name, list(g.shape), g.dtype, g.offset, g.count,
                   g.narrowed] for g in c.gradients]] +
                ([c.transport] if c.transport else [])
                for c in self.collectives]}))

    def parameters(self):
        """{name: (shape, dtype)} of every parameter the plan carries."""
        return {g.name: (g.shape, g.dtype)
                for c in self.collectives for g in c.gradients}

    def check_against(self, named_parameters, world_size, channels):
        """Raises CommoptError unless the plan fits the model's trainable
        parameters, a job of `world_size` ranks and `channels` channels."""
        if self.world_size is not None and self.world_size != world_size:
            raise CommoptError(
                f"{self.source} was made for {self.world_size} ranks, but "
                f"this job has {world_size}; plan again for "
                f"{world_size} ranks")
        model = {name: p for name, p in named_parameters}
        planned = self.parameters()
        for name, (shape, dtype) in planned.items():
            param = model.get(name)
            if param is None:
                raise CommoptError(
                    f"{self.source} names parameter '{name}', which the model "
                    f"does not have (its first parameters: "
                    f"{', '.join(list(model)[:5])})")
            if tuple(param.shape) != shape:
                raise CommoptError(
                    f"parameter '{name}' has shape {list(param.shape)} in the "
                    f"model but {list(shape)} in {self.source}")
            if dtype_name(param) != dtype:
                raise CommoptError(
                    f"parameter '{name}' is {param.dtype} in the model but "
                    f"{dtype} in {self.source}")
        for name in model:
            if name not in planned:
                raise CommoptError(
                    f"parameter '{name}' of the model is not in "
                    f"{self.source}; export the profile and plan again")
        for collective in self.collectives:
            if collective.channel is not None and \
                    collective.channel >= channels:
                raise CommoptError(
                    f"{collective.describe()} runs on channel "
                    f"{collective.channel}, but the runtime has {channels} "
                    f"(COMMRT_CHANNELS)")


def _require(condition, where, message):
    if not condition:
        raise CommoptError(f"{where}: {message}")


def _field(obj, key, kind, where, default=KeyError):
    if key not in obj:
        _require(default is not KeyError, where, f"missing field '{key}'")
        return default
    value = obj[key]
    ok = isinstance(value, kind) and not isinstance(value, bool) \
        if kind is not bool else isinstance(value, bool)
    _require(ok or (value is None and default is None), where,
             f"field '{key}' has the wrong type ({type(value).__name__})")
    return value


def _parse_sparse(obj, where):
    _require(isinstance(obj, dict), where, "field 'sparse' is not an object")
    select = _field(obj, "select", str, where + ".sparse")
    exchange = _field(obj, "exchange", str, where + ".sparse")
    density = _field(obj, "density", (int, float), where + ".sparse")
    _require(select in _SELECTS, where, f"unknown select '{select}'")
    _require(exchange in _EXCHANGES, where, f"unknown exchange '{exchange}'")
    _require(0 < density <= 1, where, f"density {density} is not in (0, 1]")
    _require((select == "chunk") == (exchange == "chunk"), where,
             "chunk selection goes with the chunk exchange and only with it")
    _require(select != "rows" or "chunk_elements" in obj, where,
             "rows selection needs chunk_elements, the length of a row")
    chunk = _field(obj, "chunk_elements", int, where + ".sparse", 32768)
    _require(chunk > 0, where, f"chunk_elements {chunk} is not positive")
    return {"select": select, "exchange": exchange, "density": float(density),
            "chunk_elements": chunk}


def parse_plan(document, source="plan"):
    """A Plan from the parsed JSON `document`; errors name the field."""
    _require(isinstance(document, dict), source, "not a JSON object")
    fmt = document.get("format")
    _require(fmt == FORMAT, source,
             f"format is {fmt!r}, expected '{FORMAT}' (write plans with "
             "commopt-translate --export-plan)")
    version = document.get("version")
    _require(version == VERSION, source,
             f"plan format version {version!r} is not supported (this "
             f"commopt reads version {VERSION})")
    world_size = _field(document, "world_size", int, source)
    _require(world_size >= 1, source, f"world_size {world_size} < 1")
    entries = _field(document, "collectives", list, source)
    collectives = []
    for index, entry in enumerate(entries):
        where = f"{source}: collectives[{index}]"
        _require(isinstance(entry, dict), where, "not an object")
        kind = _field(entry, "kind", str, where)
        _require(kind in ("dense", "sparse"), where, f"unknown kind '{kind}'")
        reduce = _field(entry, "reduce", str, where, "sum")
        _require(reduce in _REDUCES, where, f"unknown reduce '{reduce}'")
        wire = _field(entry, "wire", str, where, "none")
        _require(wire in _WIRES, where, f"unknown wire '{wire}'")
        prescale = float(_field(entry, "prescale", (int, float), where, 1.0))
        _require(math.isfinite(prescale) and prescale != 0, where,
                 f"prescale {prescale} is not finite and nonzero")
        group = entry.get("group")
        _require(group is None, where,
                 "runs among the process groups of a grid "
                 f"({json.dumps(group)}); the training bridge reduces "
                 "among all ranks")
        channel = _field(entry, "channel", int, where, None)
        _require(channel is None or channel >= 0, where,
                 f"channel {channel} is negative")
        transport = _field(entry, "transport", str, where, None)
        _require(transport in (None, "nccl", "mpi"), where,
                 f"unknown transport '{transport}' (nccl or mpi)")
        _require(transport is None or kind == "dense", where,
                 "only a dense collective names its transport")
        sparse = None
        if kind == "sparse":
            sparse = _parse_sparse(entry.get("sparse"), where)
            _require(reduce in ("sum", "avg"), where,
                     "a sparse allreduce reduces by sum or avg")
        gradients = []
        for g_index, g in enumerate(_field(entry, "gradients", list, where)):
            g_where = f"{where}.gradients[{g_index}]"
            _require(isinstance(g, dict), g_where, "not an object")
            name = _field(g, "name", str, g_where)
            shape = _field(g, "shape", list, g_where)
            _require(all(isinstance(d, int) and d >= 0 for d in shape),
                     g_where, f"shape {shape} of '{name}' is not a list of "
                     "sizes")
            dtype = _field(g, "dtype", str, g_where)
            _require(dtype in _ELEMENT_BYTES, g_where,
                     f"unknown dtype '{dtype}' of '{name}'")
            numel = math.prod(shape)
            offset = _field(g, "offset", int, g_where, 0)
            count = _field(g, "count", int, g_where, numel)
            _require(0 <= offset and 0 <= count and offset + count <= numel,
                     g_where, f"range [{offset}, {offset + count}) of '{name}'"
                     f" is outside its {numel} elements")
            narrowed = g.get("narrowed")
            _require(narrowed is None or isinstance(narrowed, bool), g_where,
                     f"narrowed of '{name}' is not true or false")
            gradients.append(GradientRange(name, shape, dtype, offset, count,
                                           narrowed))
        _require(gradients, where, "carries no gradient")
        flags = [g.narrowed for g in gradients]
        if any(f is not None for f in flags):
            _require(kind == "dense" and wire != "none", where,
                     "only a dense collective with a wire type narrows some "
                     "gradients")
            _require(all(f is not None for f in flags), where,
                     "says for some gradients but not all whether they are "
                     "narrowed")
            _require(any(flags) and not all(flags), where,
                     "a mixed-wire bucket narrows some gradients and not "
                     "others")
            _require(transport is None, where,
                     "a mixed-wire bucket runs on the backend in use: it "
                     "names no transport")
        if sparse:
            _require(len(gradients) == 1 and gradients[0].offset == 0 and
                     gradients[0].count == gradients[0].numel, where,
                     "a sparse allreduce carries one whole gradient")
            _require(gradients[0].dtype == "f32", where,
                     f"sparse gradients are f32, '{gradients[0].name}' is "
                     f"{gradients[0].dtype}")
            row = math.prod(gradients[0].shape[1:])
            _require(sparse["select"] != "rows" or
                     (gradients[0].shape and sparse["chunk_elements"] == row),
                     where, f"rows of '{gradients[0].name}' (shape "
                     f"{list(gradients[0].shape)}) have {row} elements, "
                     f"the plan says {sparse['chunk_elements']}")
        dtypes = {g.dtype for g in gradients}
        _require(len(dtypes) == 1, where,
                 f"gradients of several element types ({sorted(dtypes)})")
        _require(wire == "none" or dtypes <= {"f32", "f64"}, where,
                 f"wire {wire} is not narrower than {dtypes.pop()}")
        collectives.append(Collective(
            index, kind, gradients, reduce, wire, prescale, channel,
            entry.get("priority"), sparse, entry.get("start_us"),
            entry.get("end_us"), transport))
    _check_coverage(collectives, source)
    momentum_correction = _field(document, "momentum_correction", bool,
                                 source, False)
    warmup = _field(document, "sparse_warmup", dict, source, None)
    if warmup is not None:
        where = source + ".sparse_warmup"
        steps = _field(warmup, "steps", int, where)
        start = _field(warmup, "start_density", (int, float), where)
        _require(steps > 0, where, f"steps {steps} is not positive")
        _require(0 < start <= 1, where,
                 f"start_density {start} is not in (0, 1]")
        warmup = SparseWarmup(steps, float(start))
    return Plan(collectives, world_size, document.get("model", ""),
                document.get("cluster"), document.get("estimate"), source,
                momentum_correction, warmup)


def _check_coverage(collectives, source):
    """Every parameter keeps one shape and dtype and its ranges cover it
    exactly once."""
    ranges = {}
    for collective in collectives:
        for g in collective.gradients:
            first = ranges.setdefault(g.name, [g])[0]
            if first is not g:
                _require(first.shape == g.shape and first.dtype == g.dtype,
                         source, f"parameter '{g.name}' appears with two "
                         "shapes or dtypes")
                ranges[g.name].append(g)
    for name, pieces in ranges.items():
        covered = 0
        for piece in sorted(pieces, key=lambda g: g.offset):
            _require(piece.offset == covered, source,
                     f"parameter '{name}' is "
                     f"{'communicated twice' if piece.offset < covered else 'not communicated whole'}")
            covered += piece.count
        _require(covered == pieces[0].numel, source,
                 f"parameter '{name}' has {pieces[0].numel} elements but the "
                 f"plan communicates {covered}")


def load_plan(path):
    """Reads a JSON plan file."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except OSError as error:
        raise CommoptError(f"cannot read plan {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise CommoptError(f"plan {path} is not JSON: {error}") from None
    return parse_plan(document, source=f"plan {path}")


def default_plan(named_parameters, bucket_cap_mb=25.0, first_bucket_mb=1.0,
                 reduce="avg"):
    """The plan commopt's threshold policy (comm-fuse-buckets
    policy=threshold, PyTorch DDP's defaults) makes without a profile:
    parameters in reverse registration order (the order backward usually
    produces their gradients), fused into buckets of at most
    `first_bucket_mb` MiB for the first bucket and `bucket_cap_mb` MiB after
    it; a bucket holds one element type, and a gradient larger than the cap
    is a bucket of its own. Every collective runs on channel 0."""
    named = [(n, p) for n, p in named_parameters if p.requires_grad]
    collectives, bucket, bucket_bytes = [], [], 0
    cap = first_bucket_mb * 2**20

    def close():
        nonlocal bucket, bucket_bytes, cap
        if bucket:
            collectives.append(Collective(len(collectives), "dense", bucket,
                                          reduce=reduce, channel=0))
            cap = bucket_cap_mb * 2**20
        bucket, bucket_bytes = [], 0

    for name, param in reversed(named):
        dtype = dtype_name(param)
        if dtype is None:
            raise CommoptError(f"parameter '{name}' has dtype {param.dtype}; "
                               "plans carry f32, f64, f16 and bf16")
        nbytes = param.numel() * _ELEMENT_BYTES[dtype]
        if bucket and (bucket[0].dtype != dtype or
                       bucket_bytes + nbytes > cap):
            close()
        bucket.append(GradientRange(name, param.shape, dtype, 0,
                                    param.numel()))
        bucket_bytes += nbytes
    close()
    return Plan(collectives, world_size=None, model="",
                source="the default plan")
