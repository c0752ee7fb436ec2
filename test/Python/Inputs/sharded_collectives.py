"""The runtime's sharded collectives through the Python bindings, on the
tensors of a flat parameter (ZeRO, FSDP): several tensors of uneven sizes
whose concatenation no rank count from 2 to 4 divides.

1. reduce_scatter sums (and averages) every rank's gradients, each rank
   taking its shard of ceil(total / ranks) elements: exact (small
   integers), its padding zero.
2. all_gather puts every rank's shard back into the tensors of every rank,
   bit for bit; its f16 wire rounds every rank's copy alike.
3. Started on a channel, both give the blocking result.
4. A shard pointer that is null on one rank fails on every rank.

    mpirun -np 3 python3 sharded_collectives.py
"""

import torch

from commopt import runtime
from common import expect_error, fail, run_main, say, start

SHAPES = ((3,), (300, 1001), (1,), (7, 9), (65537,))
F32 = runtime.DTYPES["f32"]
SUM, AVG = runtime.REDUCES["sum"], runtime.REDUCES["avg"]


def gradients(rank):
    """Rank `rank`'s gradients: small integers, exact in every sum."""
    made, offset = [], 0
    for shape in SHAPES:
        count = torch.Size(shape).numel()
        flat = torch.arange(offset, offset + count, dtype=torch.float32)
        made.append(((flat % 13) * (rank + 1) - rank).reshape(shape))
        offset += count
    return made


def pointers(tensors):
    return [t.data_ptr() for t in tensors], [t.numel() for t in tensors]


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def expected_shard(rank, size, reduce):
    everyone = torch.stack([flat(gradients(r)) for r in range(size)])
    total = everyone.sum(dim=0)
    if reduce == AVG:
        total = total / size
    each = runtime.shard_elements(total.numel(), size)
    shard = torch.zeros(each)
    mine = total[rank * each:(rank + 1) * each]
    shard[:mine.numel()] = mine
    return shard


def reduce_scatters(rank, size):
    total = sum(torch.Size(s).numel() for s in SHAPES)
    each = runtime.shard_elements(total, size)
    for name, reduce in (("sum", SUM), ("average", AVG)):
        grads = gradients(rank)
        shard = torch.full((each,), 99.0)
        runtime.check(runtime.reduce_scatter(
            *pointers(grads), shard.data_ptr(), each, F32, reduce,
            runtime.WIRE_NONE, 1.0), "reduce_scatter")
        want = expected_shard(rank, size, reduce)
        if not torch.equal(shard, want):
            wrong = (shard != want).nonzero()[0].item()
            fail(f"reduce_scatter ({name}): shard element {wrong} is "
                 f"{shard[wrong].item()}, expected {want[wrong].item()}")
    say(f"reduce_scatter: sum and average of {total} elements in "
        f"{len(SHAPES)} tensors, shards of {each}, exact, padding zero")
    return each


def all_gathers(rank, size, each):
    full = flat(gradients(0))
    mine = torch.full((each,), -1000.0)
    part = full[rank * each:(rank + 1) * each]
    mine[:part.numel()] = part
    params = [torch.full(s, 5.0) for s in SHAPES]
    runtime.check(runtime.all_gather(mine.data_ptr(), each, *pointers(params),
                                     F32, runtime.WIRE_NONE, 1.0),
                  "all_gather")
    if not torch.equal(flat(params), full):
        fail("all_gather: the tensors are not every rank's shard in order")
    # 0.1 has no f16: every rank, the owner too, holds the rounded value.
    tenth = torch.full((each,), 0.1 * (rank + 1))
    params = [torch.zeros(s) for s in SHAPES]
    runtime.check(runtime.all_gather(tenth.data_ptr(), each, *pointers(params),
                                     F32, runtime.DTYPES["f16"], 1.0),
                  "all_gather (f16 wire)")
    gathered = flat(params)
    owners = torch.arange(gathered.numel()) // each
    sent = (0.1 * (owners + 1).double()).float()
    if not torch.equal(gathered, sent.half().float()):
        fail("all_gather (f16 wire): not every shard rounded to f16 alike")
    say("all_gather: every shard in its place, bit for bit; through f16 "
        "every rank holds the same rounded values")


def started(rank, size, each):
    grads, blocking = gradients(rank), torch.zeros(each)
    runtime.check(runtime.reduce_scatter(
        *pointers(grads), blocking.data_ptr(), each, F32, AVG,
        runtime.DTYPES["bf16"], 1.0), "reduce_scatter")
    grads, shard = gradients(rank), torch.zeros(each)
    status, handle = runtime.reduce_scatter(
        *pointers(grads), shard.data_ptr(), each, F32, AVG,
        runtime.DTYPES["bf16"], 1.0, channel=0)
    runtime.check(status, "reduce_scatter start")
    runtime.check(runtime.library().commrt_wait(handle), "wait")
    params = [torch.zeros(s) for s in SHAPES]
    status, handle = runtime.all_gather(shard.data_ptr(), each,
                                        *pointers(params), F32,
                                        runtime.WIRE_NONE, 1.0,
                                        channel=0)
    runtime.check(status, "all_gather start")
    runtime.check(runtime.library().commrt_wait(handle), "wait")
    if not torch.equal(shard, blocking):
        fail("reduce_scatter started: not the blocking result")
    gathered = [torch.zeros(s) for s in SHAPES]
    runtime.check(runtime.all_gather(blocking.data_ptr(), each,
                                     *pointers(gathered), F32,
                                     runtime.WIRE_NONE, 1.0), "all_gather")
    if not torch.equal(flat(params), flat(gathered)):
        fail("all_gather started: not the blocking result")
    say("started on a channel: the blocking results")


def errors(rank, size):
    grads = gradients(rank)
    total = sum(torch.Size(s).numel() for s in SHAPES)
    each = runtime.shard_elements(total, size)
    shard = torch.zeros(each)
    last = rank == size - 1
    target = 0 if last else shard.data_ptr()
    needles = ["shard is null"] if last else ["INVALID_ARGUMENT"]
    expect_error(
        "a null shard on the last rank",
        lambda: runtime.check(runtime.reduce_scatter(
            *pointers(grads), target, each, F32, SUM, runtime.WIRE_NONE,
            1.0),
            "reduce_scatter"),
        "reduce_scatter", *needles)
    say("errors: a null shard on one rank fails on every rank")


def main(argv):
    del argv
    rank, size = start()
    each = reduce_scatters(rank, size)
    all_gathers(rank, size, each)
    started(rank, size, each)
    errors(rank, size)


if __name__ == "__main__":
    run_main(main)
