#!/usr/bin/env python3
# ===- exchange_alone.py - A rows exchange timed without the step around it ===#
#
# Runs commrt_rows_allreduce of the embedding's COO gradient rows, the
# batches train.py draws (the same data, seed and sharding), with nothing
# else in the step: a barrier, then the exchange, --steps times after
# --warmup-steps. What the model prices as the exchange's own time (its
# link cost, the ranks' arrival and its local work) is then measured
# apart from the step's compute and the host's sharing of it.
#
#   mpirun -np 4 python3 exchange_alone.py --exchange hash --json out.json
#
# Rank 0 writes the median over the ranks and the steps of each rank's time
# in the call ("exchange_ms"), the median of the steps' slowest rank
# ("slowest_ms") and each rank's CPU in the call ("cpu_ms").
#
# ===------------------------------------------------------------------=== #

import argparse
import json
import os
import statistics
import sys
import time

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples", "zipf_embedding"))
from bag_of_words import CLASSES, DIM, VOCAB  # noqa: E402
from zipf_data import (add_data_arguments, check_data_arguments,  # noqa: E402
                       rank_batches)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exchange", choices=("allgather", "hash"),
                        required=True)
    parser.add_argument("--dim", type=int, default=DIM)
    add_data_arguments(parser, VOCAB, CLASSES)
    parser.add_argument("--label", default="")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    check_data_arguments(parser, args)
    return args


def gather(runtime, values, rank, size):
    """Every rank's `values` (as many on each), rank by rank."""
    table = torch.zeros((size, len(values)), dtype=torch.float64)
    table[rank] = torch.tensor(values, dtype=torch.float64)
    runtime.check(runtime.fused_allreduce(
        [table.data_ptr()], [table.numel()], runtime.DTYPES["f64"],
        runtime.REDUCES["sum"], runtime.WIRE_NONE, 1.0), "gather")
    return table


def main(argv):
    args = parse(argv)
    torch.set_num_threads(1)
    import commopt
    from commopt import runtime
    commopt.init()
    rank, size = commopt.rank(), commopt.size()
    # As train.py draws them: the same tokens reach the same rank.
    batches = rank_batches(args, rank, size)
    generator = torch.Generator().manual_seed(rank)
    exchange = runtime.EXCHANGES[args.exchange]
    times, cpu = [], []
    for step, (tokens, _) in enumerate(batches):
        # nn.Embedding(sparse=True)'s gradient: a row per token, repeated
        # tokens repeated.
        indices = tokens.reshape(-1).contiguous()
        values = torch.randn((indices.numel(), args.dim), generator=generator)
        commopt.barrier()
        began, began_cpu = time.perf_counter(), time.process_time()
        status, reduced, _ = runtime.rows_allreduce(
            indices.data_ptr(), values.data_ptr(), indices.numel(),
            args.vocab, args.dim, exchange, runtime.REDUCES["avg"])
        runtime.check(status, "commrt_rows_allreduce")
        if step >= args.warmup_steps:
            times.append((time.perf_counter() - began) * 1e3)
            cpu.append((time.process_time() - began_cpu) * 1e3)
        # A sanity check, not a full one: the rank holds at least the rows
        # it touched itself (test/Python/sparse-rows.test checks the
        # values).
        if reduced.numel() < torch.unique(indices).numel():
            raise SystemExit(f"exchange_alone.py: rank {rank}: "
                             f"{reduced.numel()} reduced rows, fewer than "
                             "its own")
    every = gather(runtime, times, rank, size)
    every_cpu = gather(runtime, cpu, rank, size)
    figures = {"label": args.label or f"exchange-{args.exchange}",
               "exchange": args.exchange, "ranks": size,
               "batch_size": args.batch_size, "steps": len(times),
               "exchange_ms": statistics.median(every.flatten().tolist()),
               "slowest_ms": statistics.median(
                   every.max(dim=0).values.tolist()),
               "cpu_ms": statistics.median(every_cpu.flatten().tolist())}
    if rank == 0:
        print(f"{figures['label']}: {size} ranks x batch {args.batch_size}, "
              f"{len(times)} exchanges, median {figures['exchange_ms']:.2f} "
              f"ms (slowest rank {figures['slowest_ms']:.2f} ms, CPU "
              f"{figures['cpu_ms']:.2f} ms)", flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(figures, out, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
