#!/usr/bin/env python3
# ===- ddp_gloo.py - PyTorch DDP (gloo) on a real model's gradient sizes --=== #
#
# The baseline commrt-bench is compared with: PyTorch DistributedDataParallel
# over the gloo backend with its default buckets (25 MiB, first bucket 1 MiB),
# on a model made of one flat nn.Parameter per gradient of the sizes file
# (model_sizes.py), registered in forward order so that DDP's buckets follow
# the real model's backward order. The loss is (rank + 1) * sum of all
# parameters' sums, so every gradient is non-zero (and their average, which
# DDP computes, is (p + 1) / 2 everywhere; checked once).
#
# Method: the backward computes almost nothing (every gradient is a constant),
# so the communication time is the median time of loss.backward() under DDP
# minus its median under ddp.no_sync() (the same backward, no allreduce).
# Every timed backward starts after a barrier and counts the slowest rank.
#
# Then gloo's own allreduce of one flat f32 tensor of all the gradients'
# elements (plan=gloo-allreduce), the operation commrt-bench's fused f32
# plans run: dist.all_reduce after a barrier, the slowest rank, its sum
# checked exact. DDP's figure above leaves out the part of its buckets'
# allreduces that overlaps the backward; this one leaves out nothing.
#
# Launched one process per rank by mpirun (for placement only; torch does not
# use MPI): the rank and world size come from OMPI_COMM_WORLD_RANK/SIZE (or
# RANK/WORLD_SIZE), rendezvous is env:// at --master-addr. On the emulated
# cluster every rank binds gloo to its namespace's veth, commopt-p<rank>.
#
# Usage: ddp_gloo.py --sizes=FILE --label=TEXT --master-addr=ADDR
#                    [--ifname=IF] [--repetitions=N] [--warmup=N]
#
# ===----------------------------------------------------------------------=== #

import argparse
import datetime
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def env_int(*names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise SystemExit("ddp_gloo.py: none of %s is set" % ", ".join(names))


class Flat(nn.Module):
    def __init__(self, sizes, rank):
        super().__init__()
        self.params = nn.ParameterList(
            nn.Parameter(torch.zeros(n)) for n in sizes)
        self.scale = float(rank + 1)

    def forward(self):
        return self.scale * sum(p.sum() for p in self.params)


def time_flat_allreduce(label, count, rank, world, args, ifname):
    """Times gloo's allreduce of one f32 tensor of `count` elements, each
    rank contributing rank + 1, and prints its RESULT line on rank 0.
    Returns whether every rank got the exact sum p(p + 1)/2."""
    flat = torch.empty(count, dtype=torch.float32)
    times = []
    ok = True
    for run in range(args.warmup + args.repetitions):
        flat.fill_(rank + 1.0)
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(flat)
        elapsed = torch.tensor([time.perf_counter() - start],
                               dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        if run == 0:
            flag = torch.tensor(
                [1 if torch.all(flat == world * (world + 1) / 2.0) else 0])
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            ok = bool(flag.item())
        if run >= args.warmup:
            times.append(elapsed.item())
    if rank == 0:
        print("RESULT label=%s plan=gloo-allreduce median_s=%.6f min_s=%.6f "
              "reps=%d elements=%d ranks=%d check=%s ifname=%s" %
              (label, statistics.median(times), min(times), args.repetitions,
               count, world, "ok" if ok else "FAILED", ifname), flush=True)
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", required=True)
    parser.add_argument("--label", default="")
    parser.add_argument("--master-addr", required=True)
    parser.add_argument("--master-port", default="29577")
    parser.add_argument("--ifname", default="",
                        help="gloo's interface (default the host's "
                        "commopt-p<host> link if there is one, else lo)")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args()

    rank = env_int("OMPI_COMM_WORLD_RANK", "RANK")
    world = env_int("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE")
    # On the emulated cluster each host's namespace has one link,
    # commopt-p<host>, shared by the ranks on that host.
    links = sorted(name for name in os.listdir("/sys/class/net")
                   if name.startswith("commopt-p"))
    ifname = args.ifname or (links[0] if links else "lo")
    os.environ["GLOO_SOCKET_IFNAME"] = ifname
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = args.master_port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://", rank=rank,
                            world_size=world,
                            timeout=datetime.timedelta(seconds=600))

    # The sizes file is in backward order; parameters go in forward order.
    sizes = []
    with open(args.sizes) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                sizes.append(int(line.split()[0]))
    sizes.reverse()
    model = Flat(sizes, rank)
    ddp = DDP(model)  # default bucket_cap_mb=25, gloo

    def backward():
        for p in model.parameters():
            p.grad = None
        loss = ddp()
        dist.barrier()
        start = time.perf_counter()
        loss.backward()
        elapsed = torch.tensor([time.perf_counter() - start],
                               dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return elapsed.item()

    # no_sync must wrap the forward too for DDP to skip the reduction.
    def backward_nosync():
        for p in model.parameters():
            p.grad = None
        with ddp.no_sync():
            loss = ddp()
            dist.barrier()
            start = time.perf_counter()
            loss.backward()
            elapsed = torch.tensor([time.perf_counter() - start],
                                   dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return elapsed.item()

    times = {True: [], False: []}
    ok = True
    for run in range(args.warmup + args.repetitions):
        t_sync = backward()
        if run == 0:
            expected = (world + 1) / 2.0
            ok = all(torch.all(p.grad == expected).item()
                     for p in model.parameters())
            flag = torch.tensor([1 if ok else 0])
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            ok = bool(flag.item())
        t_nosync = backward_nosync()
        if run >= args.warmup:
            times[True].append(t_sync)
            times[False].append(t_nosync)

    sync = statistics.median(times[True])
    nosync = statistics.median(times[False])
    label = args.label or args.sizes
    if rank == 0:
        print("RESULT label=%s plan=ddp-gloo median_s=%.6f sync_median_s=%.6f "
              "nosync_median_s=%.6f sync_min_s=%.6f reps=%d tensors=%d "
              "elements=%d ranks=%d check=%s ifname=%s" %
              (label, sync - nosync, sync, nosync,
               min(times[True]), args.repetitions, len(sizes), sum(sizes),
               world, "ok" if ok else "FAILED", ifname), flush=True)
    del ddp, model
    flat_ok = time_flat_allreduce(label, sum(sizes), rank, world, args,
                                  ifname)
    ok = ok and flat_ok
    # destroy_process_group() has hung at 100% CPU on rank 0 here (VGG-16,
    # shared memory) after the other ranks left; a barrier, then a hard exit.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
