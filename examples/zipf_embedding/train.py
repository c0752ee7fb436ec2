"""Trains a bag-of-words model with a large embedding on Zipf token data,
its gradients synchronised by commopt or by PyTorch DDP, and reports the
step time.

The model: nn.Embedding(vocab, dim) (sparse COO gradients with --coo, as
users of large embeddings run it), the mean over a sample's tokens, and a
linear classifier. Each rank trains on its shard of ZipfTokens
(zipf_data.py), SGD without momentum.

    mpirun -np 4 python3 train.py --comm commopt --plan plan.json --coo
    mpirun -np 4 python3 train.py --comm ddp --coo    # gloo, sparse allreduce
    mpirun -np 4 python3 train.py --comm local        # no communication

--comm local trains each rank alone: the compute-only step, the lower bound
of the others in the same run. --json writes the run's figures: the median
step time over the timed steps (after --warmup-steps), their wall time per
step until every rank has ended them (where ranks share cores and do not
keep in step, as in --comm local, the median step is one a rank ran
without being descheduled; this is what the cores take per step), the
median CPU time of the process per step, the loss and the largest
difference between the ranks' parameters (0 when they agree).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bag_of_words import CLASSES, DIM, VOCAB, BagOfWords  # noqa: E402
from zipf_data import (add_data_arguments, check_data_arguments,  # noqa: E402
                       rank_batches)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--comm", choices=("commopt", "ddp", "local"),
                        default="commopt")
    parser.add_argument("--plan", help="a plan from commopt-translate "
                        "--export-plan (default: commopt's default plan)")
    parser.add_argument("--coo", action="store_true",
                        help="nn.Embedding(sparse=True): COO gradients")
    parser.add_argument("--dim", type=int, default=DIM)
    add_data_arguments(parser, VOCAB, CLASSES)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", default="29591")
    parser.add_argument("--label", default="")
    parser.add_argument("--json", help="write the run's figures here")
    args = parser.parse_args(argv)
    check_data_arguments(parser, args)
    return args


def main(argv):
    args = parse(argv)
    torch.set_num_threads(1)
    import commopt
    commopt.init()
    rank, size = commopt.rank(), commopt.size()
    if args.comm == "ddp":
        # On the emulated cluster (bench/cluster/emulate.sh, one rank per
        # host) gloo must use the host's link, not the loopback.
        interface = f"commopt-p{rank}"
        if os.path.exists(f"/sys/class/net/{interface}"):
            os.environ.setdefault("GLOO_SOCKET_IFNAME", interface)
        elif args.master_addr == "127.0.0.1":
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        os.environ["MASTER_ADDR"] = args.master_addr
        os.environ["MASTER_PORT"] = args.master_port
        dist.init_process_group("gloo", rank=rank, world_size=size,
                                timeout=datetime.timedelta(seconds=300))

    torch.manual_seed(args.seed)
    model = BagOfWords(args.vocab, args.dim, args.classes, coo=args.coo)
    # The batches are drawn before the steps: the loader's CPU (collating
    # a batch took 0.6 ms on this benchmark's 2-core VM, as much as the
    # step's compute) would otherwise run between the timed steps, outside
    # their time and their CPU, while the other ranks' steps share the
    # cores with it.
    batches = rank_batches(args, rank, size)
    sgd = torch.optim.SGD(model.parameters(), lr=args.lr)
    if args.comm == "ddp":
        trained = nn.parallel.DistributedDataParallel(model)
        optimizer = sgd
    else:
        trained = model
        optimizer = sgd
        if args.comm == "commopt":
            plan = commopt.load_plan(args.plan) if args.plan else None
            optimizer = commopt.DistributedOptimizer(
                sgd, named_parameters=model.named_parameters(), plan=plan)

    # The ranks start their steps together, as the collectives of training
    # keep them together. Otherwise the ranks of a compute-only run
    # (--comm local), which mpirun starts apart, may compute alone or not
    # by chance: at 16 ranks on 2 cores, 0.82 ms a step in one run, 9.48 ms
    # in another.
    commopt.barrier()
    times, cpu, losses = [], [], []
    for step, (tokens, labels) in enumerate(batches):
        began = time.perf_counter()
        if step == args.warmup_steps:
            timed_began = began
        began_cpu = time.process_time()
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(trained(tokens), labels)
        loss.backward()
        optimizer.step()
        if step >= args.warmup_steps:
            times.append((time.perf_counter() - began) * 1e3)
            # The process's CPU (all its threads): ranks that share cores
            # are bound by their sum.
            cpu.append((time.process_time() - began_cpu) * 1e3)
        losses.append(loss.item())
    commopt.barrier()
    wall_step_ms = (time.perf_counter() - timed_began) * 1e3 / len(times)

    # The ranks' parameters agree unless they trained alone.
    spread = 0.0
    for param in model.parameters():
        mine = param.detach().double().contiguous()
        low, high = mine.clone(), mine.clone()
        commopt.runtime.check(commopt.runtime.fused_allreduce(
            [low.data_ptr()], [low.numel()], commopt.runtime.DTYPES["f64"],
            commopt.runtime.REDUCES["min"], commopt.runtime.WIRE_NONE, 1.0),
            "min")
        commopt.runtime.check(commopt.runtime.fused_allreduce(
            [high.data_ptr()], [high.numel()], commopt.runtime.DTYPES["f64"],
            commopt.runtime.REDUCES["max"], commopt.runtime.WIRE_NONE, 1.0),
            "max")
        spread = max(spread, (high - low).abs().max().item())
    figures = {"label": args.label or args.comm, "ranks": size,
               "batch_size": args.batch_size, "steps": len(times),
               "step_ms": statistics.median(times), "step_ms_all": times,
               "wall_step_ms": wall_step_ms,
               "cpu_ms": statistics.median(cpu),
               "first_loss": losses[0], "last_loss": losses[-1],
               "parameter_spread": spread, "coo": args.coo,
               "vocab": args.vocab, "dim": args.dim}
    if rank == 0:
        print(f"{figures['label']}: {size} ranks x batch {args.batch_size}, "
              f"{len(times)} timed steps, median {figures['step_ms']:.2f} ms "
              f"(CPU {figures['cpu_ms']:.2f} ms); "
              f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; ranks' parameters "
              f"{'agree' if spread == 0 else f'differ by up to {spread:.3g}'}",
              flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(figures, out, indent=1)
    if args.comm == "ddp":
        # torch 1.13 joins gloo's worker threads in the process group's
        # destructor with the GIL held, while a worker may still be freeing
        # the last step's tensors, which takes the GIL: a hang at exit. A
        # barrier (its wait releases the GIL) lets the workers finish, and
        # DDP's reducer goes before the group, not at the interpreter's end.
        dist.barrier()
        del trained
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
