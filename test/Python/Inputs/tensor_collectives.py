"""The surface a training script reaches for beside the optimizer:
local_rank() and local_size(), and tensor allreduce, allgather and
broadcast.

1. local_rank() and local_size() are the ranks sharing this node (one node
   here: every rank, each its own local rank), as OpenMPI's environment
   says too.
2. allreduce: average (the default), sum, min and max of f32, f64, f16 and
   int64 tensors of several shapes equal the reduction of every rank's
   values (known, since each rank's values come from its rank); the input
   is left alone, allreduce_ writes in place.
3. broadcast and broadcast_ of f32, int64 and bool tensors give root 2's
   values everywhere.
4. allgather of every dtype it takes, rank r sending r + 1 rows (rank 1
   none) of shape (rows, 2, 3), equals every rank's rows concatenated in
   rank order, bit for bit (NaN payloads and -0.0 included); 0-dimensional
   tensors gather into one row each.
5. Errors: an unknown op, an integer average, integers too large for f64,
   a complex tensor, a root out of range, and allgathers whose ranks
   differ beyond the first dimension or in dtype (every rank raises).

    mpirun -np 4 python3 tensor_collectives.py
"""

import os
import sys

import torch

import commopt
from common import expect_error, fail, run_main, say, start


def values(rank, shape, dtype):
    """Rank `rank`'s tensor: small integers, so that every reduction is
    exact in every dtype."""
    count = 1
    for dim in shape:
        count *= dim
    base = torch.arange(count, dtype=torch.float64).reshape(shape)
    return ((base % 7) * (rank + 1) - rank).to(dtype)


def local(rank, size):
    if commopt.local_size() != size or commopt.local_rank() != rank:
        fail(f"local_rank() {commopt.local_rank()}, local_size() "
             f"{commopt.local_size()} on one node of {size} ranks")
    env = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK")
    if env is not None and int(env) != commopt.local_rank():
        fail(f"local_rank() {commopt.local_rank()}, OpenMPI says {env}")
    say(f"local_rank() and local_size(): rank {rank} of {size} on one node")


def reductions(rank, size):
    checked = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.int64):
        for shape in ((5,), (3, 4), (2, 3, 2)):
            mine = values(rank, shape, dtype)
            everyone = torch.stack([values(r, shape, torch.float64)
                                    for r in range(size)])
            expected = {"sum": everyone.sum(0), "min": everyone.min(0)[0],
                        "max": everyone.max(0)[0],
                        "average": everyone.sum(0) / size}
            for op, want in expected.items():
                if op == "average" and not dtype.is_floating_point:
                    continue
                before = mine.clone()
                got = commopt.allreduce(mine, op=op) if op != "average" \
                    else commopt.allreduce(mine)
                if got.dtype != dtype or got.shape != mine.shape:
                    fail(f"allreduce {op} of {dtype} {shape}: got "
                         f"{got.dtype} {tuple(got.shape)}")
                if not torch.equal(mine, before):
                    fail(f"allreduce {op} of {dtype}: changed its input")
                if not torch.equal(got, want.to(dtype)):
                    fail(f"allreduce {op} of {dtype} {shape}: "
                         f"{got.flatten()[:4].tolist()} instead of "
                         f"{want.to(dtype).flatten()[:4].tolist()}")
                in_place = commopt.allreduce_(mine.clone(), op=op)
                if not torch.equal(in_place, want.to(dtype)):
                    fail(f"allreduce_ {op} of {dtype} {shape} differs")
                checked += 1
    say(f"allreduce and allreduce_: {checked} reductions (average, sum, min, "
        "max of f32, f64, f16, int64) exact")


def broadcasts(rank, size):
    root = 2 % size
    for dtype in (torch.float32, torch.int64, torch.bool):
        mine = values(rank, (3, 5), torch.float64)
        mine = (mine > 2) if dtype == torch.bool else mine.to(dtype)
        want = values(root, (3, 5), torch.float64)
        want = (want > 2) if dtype == torch.bool else want.to(dtype)
        before = mine.clone()
        got = commopt.broadcast(mine, root_rank=root)
        if not torch.equal(got, want) or not torch.equal(mine, before):
            fail(f"broadcast of {dtype} from {root} is wrong or changed its "
                 "input")
        commopt.broadcast_(mine, root_rank=root)
        if not torch.equal(mine, want):
            fail(f"broadcast_ of {dtype} from {root} is wrong")
    say(f"broadcast and broadcast_ from rank {root}: f32, int64, bool exact")


def rows_of(rank, dtype):
    """Rank `rank`'s rows for allgather: rank + 1 of them (rank 1: none),
    with values that only a bit-exact copy keeps."""
    count = 0 if rank == 1 else rank + 1
    base = values(rank, (count, 2, 3), torch.float64) * 1000 + rank
    if dtype == torch.bool:
        return base > 2
    rows = base.to(dtype)
    if dtype.is_floating_point and count:
        rows[0, 0, 0] = -0.0
        rows[0, 0, 1] = float("nan")
    return rows


def allgathers(rank, size):
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16,
              torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8,
              torch.bool)
    for dtype in dtypes:
        mine = rows_of(rank, dtype)
        got = commopt.allgather(mine, name="rows")
        want = torch.cat([rows_of(r, dtype) for r in range(size)])
        if got.dtype != dtype or got.shape != want.shape:
            fail(f"allgather of {dtype}: got {got.dtype} {tuple(got.shape)}, "
                 f"expected {tuple(want.shape)}")
        same = torch.equal(got.view(torch.uint8), want.view(torch.uint8)) \
            if dtype != torch.bool else torch.equal(got, want)
        if not same:
            fail(f"allgather of {dtype} differs from the ranks' rows")
    scalars = commopt.allgather(torch.tensor(float(rank)))
    if scalars.tolist() != [float(r) for r in range(size)]:
        fail(f"allgather of 0-dimensional tensors: {scalars.tolist()}")
    say(f"allgather: {len(dtypes)} dtypes, uneven rows (rank 1 none), bit "
        "for bit; 0-dimensional tensors one row each")


def errors(rank, size):
    x = torch.ones(4)
    expect_error("unknown op", lambda: commopt.allreduce(x, op="prod"),
                 "unknown op 'prod'")
    expect_error("integer average",
                 lambda: commopt.allreduce(torch.ones(4, dtype=torch.int64)),
                 "average", "torch.int64", "op='sum'")
    expect_error("too large",
                 lambda: commopt.allreduce(
                     torch.full((2,), 2 ** 52, dtype=torch.int64), op="sum"),
                 "2^53")
    expect_error("complex",
                 lambda: commopt.allreduce(torch.ones(2,
                                                      dtype=torch.complex64)),
                 "torch.complex64 is not supported")
    expect_error("root out of range",
                 lambda: commopt.broadcast(x, root_rank=size), "broadcast")
    expect_error("allgather of different trailing shapes",
                 lambda: commopt.allgather(torch.ones(2, 3 + (rank == 2)),
                                           name="metrics"),
                 "allgather of 'metrics'", "beyond the first dimension",
                 "[2, 3]", "[2, 4]")
    expect_error("allgather of different dtypes",
                 lambda: commopt.allgather(torch.ones(
                     2, dtype=torch.float64 if rank == 3 % size
                     else torch.float32)),
                 "dtypes by rank", "torch.float64", "torch.float32")
    say("errors: unknown op, integer average, integers beyond 2^53, complex, "
        "root out of range, allgather shapes and dtypes that differ")


def main(argv):
    rank, size = start()
    local(rank, size)
    reductions(rank, size)
    broadcasts(rank, size)
    allgathers(rank, size)
    errors(rank, size)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    run_main(main)
