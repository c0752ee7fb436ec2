"""Helpers shared by the test scripts of test/Python: a tiny model, seeded
data, hand-written plans, cross-rank comparisons and the single-process
reference. The scripts run on every rank under mpirun; commopt comes from
PYTHONPATH and libcommrt.so from COMMOPT_COMMRT_LIB (test/Python's
lit.local.cfg sets both).
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

import commopt
from commopt import runtime

torch.set_num_threads(1)

GLOBAL_BATCH = 32
INPUT_SHAPE = (1, 8, 8)
CLASSES = 3


class Failed(Exception):
    pass


def start():
    """Initialises commopt; returns (rank, size)."""
    commopt.init()
    return commopt.rank(), commopt.size()


def start_with_gloo(master_port):
    """start(), and torch.distributed over gloo on this host's loopback
    at `master_port`, for the scripts that compare with DDP; returns (rank,
    size). End with end_gloo(), every DDP wrapper gone before it."""
    rank, size = start()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(master_port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=120))
    return rank, size


def end_gloo():
    """Ends what start_with_gloo() began. torch 1.13 joins gloo's worker
    threads in the process group's destructor with the GIL held, while a
    worker may still be freeing the last collective's tensors, which takes
    the GIL: a hang at exit. A barrier (its wait releases the GIL) lets the
    workers finish first."""
    dist.barrier()
    dist.destroy_process_group()


def say(*text):
    """Prints on rank 0 only."""
    if commopt.rank() == 0:
        print(*text, flush=True)


def fail(message):
    """Fails a check on this rank: run_main prints `message` and stops
    every rank with a non-zero exit."""
    raise Failed(f"rank {commopt.rank()}: FAILED: {message}")


class TinyNet(nn.Module):
    """conv 3x3 (4) - fc 144x16 - fc 16x3: 2,411 parameters in six
    tensors of 1, 2 and 4 dimensions."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 6 * 6, 16)
        self.fc2 = nn.Linear(16, CLASSES)

    def forward(self, x):
        x = torch.tanh(self.conv(x))
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def make_model(seed=0, factory=TinyNet):
    torch.manual_seed(seed)
    return factory()


def batch(step, seed=1, shape=INPUT_SHAPE, classes=CLASSES,
          size=GLOBAL_BATCH):
    """The global batch of `step`, the same on every rank."""
    generator = torch.Generator().manual_seed(seed * 100003 + step)
    x = torch.randn((size,) + tuple(shape), generator=generator)
    y = torch.randint(0, classes, (size,), generator=generator)
    return x, y


def shard(tensors, rank, size):
    """Rank `rank`'s equal slice of each of `tensors`."""
    n = len(tensors[0]) // size
    return [t[rank * n:(rank + 1) * n] for t in tensors]


def loss_fn(model, x, y):
    return nn.functional.cross_entropy(model(x), y)


def train(model, optimizer, steps, rank, size):
    """Steps `steps` of `optimizer` on this rank's shard of each global
    batch."""
    for step in steps:
        x, y = shard(batch(step), rank, size)
        optimizer.zero_grad()
        loss_fn(model, x, y).backward()
        optimizer.step()


def reference(steps, lr, momentum, seed=0, factory=TinyNet, data_seed=1,
              shape=INPUT_SHAPE, classes=CLASSES, size=GLOBAL_BATCH):
    """One process training on the whole batch: the parameters after
    `steps` steps of SGD. No communication."""
    model = make_model(seed, factory)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    for step in range(steps):
        x, y = batch(step, data_seed, shape, classes, size)
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model, x, y).backward()
        optimizer.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def gradient(name, shape, offset=0, count=None, dtype="f32"):
    numel = 1
    for d in shape:
        numel *= d
    return {"name": name, "shape": list(shape), "dtype": dtype,
            "offset": offset, "count": numel if count is None else count}


def param_gradient(model, name, offset=0, count=None):
    return gradient(name, dict(model.named_parameters())[name].shape,
                    offset, count)


def dense(gradients, channel=0, reduce="avg", wire="none", prescale=1.0):
    entry = {"kind": "dense", "reduce": reduce, "wire": wire,
             "prescale": prescale, "gradients": gradients}
    if channel is not None:
        entry["channel"] = channel
    return entry


def sparse(gradient_, select, exchange, density, chunk_elements=None,
           reduce="avg"):
    spec = {"select": select, "exchange": exchange, "density": density}
    if chunk_elements is not None:
        spec["chunk_elements"] = chunk_elements
    return {"kind": "sparse", "reduce": reduce, "sparse": spec,
            "channel": None, "gradients": [gradient_]}


def plan_document(collectives, world_size=4, version=1):
    return {"format": "commopt-plan", "version": version, "model": "test",
            "world_size": world_size, "collectives": collectives}


def plan(collectives, world_size=4, source="test plan"):
    return commopt.parse_plan(plan_document(collectives, world_size),
                              source=source)


def tiny_plan(model, kind):
    """A plan for TinyNet by `kind`: "default" (None, the default plan),
    "two-dense" (fc2's gradients, then the rest, on channel 0), or a
    sparse fc1.weight beside the dense rest: "topk" (with its residual) or
    "threshold-mc" (threshold with momentum correction), allgather at
    density 0.05."""
    if kind == "default":
        return None
    g = lambda name: param_gradient(model, name)  # noqa: E731
    if kind == "two-dense":
        return plan([dense([g("fc2.weight"), g("fc2.bias")], channel=0),
                     dense([g("fc1.weight"), g("fc1.bias"), g("conv.weight"),
                            g("conv.bias")], channel=0)],
                    source="two dense collectives")
    rest = [g("fc2.weight"), g("fc2.bias"), g("fc1.bias"), g("conv.weight"),
            g("conv.bias")]
    select = {"topk": "topk", "threshold-mc": "threshold"}[kind]
    document = plan_document([dense(rest, channel=0),
                              sparse(g("fc1.weight"), select, "allgather",
                                     0.05)])
    document["momentum_correction"] = kind == "threshold-mc"
    return commopt.parse_plan(document, source=f"{kind} plan")


def parameters(model):
    """Copies of `model`'s parameters by name."""
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def broadcast_copy(tensor, root=0):
    """`root`'s value of `tensor` (a copy; `tensor` is left alone)."""
    copy = tensor.detach().clone().contiguous()
    runtime.check(runtime.broadcast(copy.data_ptr(), copy.numel(),
                                    runtime.DTYPES[commopt.plan.dtype_name(
                                        copy)], root), "broadcast")
    return copy


def all_reduce(tensor, reduce="sum"):
    """The reduction over ranks of an f64 copy of `tensor`."""
    copy = tensor.detach().to(torch.float64).clone().contiguous()
    runtime.check(runtime.fused_allreduce(
        [copy.data_ptr()], [copy.numel()], runtime.DTYPES["f64"],
        runtime.REDUCES[reduce], runtime.WIRE_NONE, 1.0), "all_reduce")
    return copy


def all_true(flag):
    """Whether `flag` holds on every rank."""
    return all_reduce(torch.tensor([1.0 if flag else 0.0]), "min").item() == 1


_INT_OF = {torch.float32: torch.int32, torch.float64: torch.int64,
           torch.float16: torch.int16, torch.bfloat16: torch.int16}


def bits(tensor):
    """`tensor`'s bit patterns, so that equality is bitwise."""
    return tensor.detach().contiguous().view(_INT_OF[tensor.dtype])


def check_identical(model, what):
    """Fails on every rank unless every rank's parameters equal rank 0's
    bit for bit."""
    bad = []
    for name, param in model.named_parameters():
        theirs = broadcast_copy(param)
        if not torch.equal(bits(theirs), bits(param)):
            mine = param.detach()
            differ = (bits(theirs) != bits(mine)).sum().item()
            bad.append(f"{name} ({differ} of {mine.numel()} elements, max "
                       f"|diff| {(theirs - mine).abs().max().item():.3g})")
    # Every rank learns whether any rank differs, so that all of them stop.
    if not all_true(not bad):
        fail(f"{what}: parameters differ from rank 0's: "
             f"{', '.join(bad) or '(on another rank)'}")


def check_close(params, expected, rtol, what):
    """Fails unless each tensor of `params` ({name: tensor}) equals
    `expected`'s within rtol times the largest magnitude of the expected
    tensor, elementwise. Returns the largest such relative difference."""
    worst = 0.0
    for name, want in expected.items():
        got = params[name].detach()
        relative = ((got - want).abs().max() / want.abs().max()).item()
        worst = max(worst, relative)
        if not relative <= rtol:
            fail(f"{what}: '{name}' differs from the reference by "
                 f"{relative:.3g} of its largest magnitude, more than "
                 f"{rtol:g}")
    return worst


def expect_error(what, call, *needles):
    """Fails unless `call` raises CommoptError naming all of `needles`;
    returns the error's text."""
    try:
        call()
    except commopt.CommoptError as error:
        text = str(error)
        if not all(n in text for n in needles):
            fail(f"{what}: the error '{text}' does not name "
                 f"{', '.join(needles)}")
        return text
    fail(f"{what}: no error")


def run_main(main):
    """Runs main(argv); a failed check prints its message and stops the
    job with a non-zero exit."""
    try:
        main(sys.argv[1:])
    except Failed as failure:
        print(failure, file=sys.stderr, flush=True)
        # A check may fail on some ranks only: stop them all.
        if commopt.size() > 1:
            runtime.abort("a check failed; stopping every rank")
        sys.exit(1)
