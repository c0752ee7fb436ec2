#!/usr/bin/python3
"""Data-parallel training of FashionNet (or, with --model transformer, a
small ViT-style transformer) on Fashion-MNIST, one rank per process, with the gradients synchronised by a commopt plan or by a peer
(PyTorch DDP over gloo, with its fp16 or PowerSGD hooks), on the CPU or,
with --device cuda, on each rank's GPU (commopt's runtime then reduces over
NCCL, and DDP uses its NCCL process group).

    mpirun -np 4 python3 train.py --plan plan.json           # commopt's plan
    mpirun -np 4 python3 train.py                            # default plan
    mpirun -np 4 python3 train.py --comm ddp-powersgd        # a peer

Every mode sees the same data in the same order: each epoch draws a seeded
permutation of the training set, every step takes the next global batch of
it and rank r trains on the r-th slice; the model starts from the same seed
on every rank. Prints a line per epoch (loss, test accuracy, step time) and,
with --json, writes the run's figures.
"""

import argparse
import datetime
import hashlib
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fashion_mnist  # noqa: E402

try:
    import commopt  # noqa: F401  (an install, or PYTHONPATH)
except ImportError:
    # The checkout's own package.
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

MODES = ("commopt", "commopt-sharded", "ddp", "ddp-fp16", "ddp-powersgd",
         "zero", "local")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comm", choices=MODES, default="commopt",
                        help="who synchronises gradients (default commopt; "
                        "'commopt-sharded': commopt's sharded optimizer, "
                        "ZeRO-2; 'zero': torch's ZeroRedundancyOptimizer "
                        "over DDP; 'local': nobody, the compute-only step)")
    parser.add_argument("--plan", help="a plan from commopt-translate "
                        "--export-plan (default: commopt's default plan)")
    parser.add_argument("--momentum-correction", action="store_true",
                        help="Deep Gradient Compression's momentum "
                        "correction for the plan's sparse parameters (default: "
                        "as the plan says)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16,
                        help="samples per rank and step (default 16)")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-samples", type=int, default=60000,
                        help="use the first N of each epoch's permutation")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="stop each epoch after N steps (timing runs)")
    parser.add_argument("--no-eval", action="store_true",
                        help="skip the test set (timing runs)")
    parser.add_argument("--powersgd-rank", type=int, default=2)
    parser.add_argument("--powersgd-start", type=int, default=10,
                        help="steps of plain allreduce before PowerSGD")
    parser.add_argument("--model", choices=("cnn", "transformer"),
                        default="cnn",
                        help="FashionNet (cnn) or the patch transformer")
    parser.add_argument("--tiny", action="store_true",
                        help="a small model of the same shape (tests)")
    parser.add_argument("--master-addr", default="127.0.0.1",
                        help="gloo's rendezvous address (DDP modes)")
    parser.add_argument("--master-port", default="29581")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads per rank (default 1)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where each rank trains: 'cuda' is the GPU of "
                        "its local rank modulo the GPUs it sees")
    parser.add_argument("--ddp-backend", choices=("nccl", "gloo"),
                        help="the process group of the DDP modes (default "
                        "nccl with --device cuda, gloo otherwise); gloo runs "
                        "several ranks on one GPU, which NCCL refuses")
    parser.add_argument("--deterministic", action="store_true",
                        help="PyTorch's deterministic algorithms, so that "
                        "runs that reduce the same gradients train the same "
                        "parameters bit for bit (on GPUs too)")
    parser.add_argument("--freeze-min-bytes", type=int, default=0,
                        metavar="N",
                        help="with the DDP modes: parameters of N bytes or "
                        "more keep their initial values, the accuracy of a "
                        "sparse plan that never moved them (default 0: "
                        "none)")
    parser.add_argument("--json", help="write the run's figures here")
    parser.add_argument("--label", default="", help="the run's name")
    parser.add_argument("--save-parameters", metavar="FILE",
                        help="rank 0 saves the trained parameters here "
                        "(torch.save of name -> tensor), for comparing runs")
    arguments = parser.parse_args(argv)
    if (arguments.plan or arguments.momentum_correction) and \
            arguments.comm != "commopt":
        parser.error("--plan and --momentum-correction go with --comm "
                     "commopt")
    if arguments.freeze_min_bytes < 0:
        parser.error(f"--freeze-min-bytes {arguments.freeze_min_bytes}: "
                     "expected 0 or more")
    if arguments.freeze_min_bytes and \
            arguments.comm not in ("ddp", "ddp-fp16", "ddp-powersgd"):
        parser.error("--freeze-min-bytes goes with --comm ddp, ddp-fp16 "
                     "or ddp-powersgd")
    return arguments


def env_int(*names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    return 0 if "RANK" in names[-1] else 1


class Commopt:
    """Gradients synchronised by a commopt plan."""

    def __init__(self, model, optimizer, arguments, device):
        import commopt
        commopt.init()
        self.commopt = commopt
        self.rank, self.size = commopt.rank(), commopt.size()
        commopt.broadcast_parameters(model.state_dict(), root_rank=0)
        self.model = model
        if arguments.comm == "commopt-sharded":
            # Each rank keeps the optimizer state of its shard of the
            # parameters (ZeRO-2).
            self.optimizer = commopt.ShardedOptimizer(
                model.parameters(), type(optimizer),
                **optimizer.defaults)
            self.description = "commopt sharded (ZeRO-2)"
            return
        plan = commopt.load_plan(arguments.plan) if arguments.plan else None
        self.optimizer = commopt.DistributedOptimizer(
            optimizer, model.named_parameters(), plan=plan,
            momentum_correction=arguments.momentum_correction or None)
        self.model = model
        self.description = "commopt " + \
            (arguments.plan or "default plan") + ": " + \
            self.optimizer.plan.kinds + \
            (", momentum correction" if self.optimizer.velocities else "")

    def all_sum(self, values):
        tensor = torch.tensor(values, dtype=torch.float64)
        from commopt import runtime
        runtime.check(runtime.fused_allreduce(
            [tensor.data_ptr()], [tensor.numel()], runtime.DTYPES["f64"],
            runtime.REDUCES["sum"], runtime.WIRE_NONE, 1.0), "all_sum")
        return tensor.tolist()


class Peer:
    """Gradients synchronised by PyTorch DDP over gloo, or not at all."""

    def __init__(self, model, optimizer, arguments, device):
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        self.dist = dist
        self.rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK")
        self.size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE")
        interface = f"commopt-p{self.rank}"
        if os.path.exists(f"/sys/class/net/{interface}"):
            os.environ.setdefault("GLOO_SOCKET_IFNAME", interface)
        elif arguments.master_addr == "127.0.0.1":
            os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        os.environ["MASTER_ADDR"] = arguments.master_addr
        os.environ["MASTER_PORT"] = arguments.master_port
        self.device = device
        backend = arguments.ddp_backend or \
            ("nccl" if device.type == "cuda" else "gloo")
        dist.init_process_group(backend,
                                rank=self.rank, world_size=self.size,
                                timeout=datetime.timedelta(seconds=300))
        for tensor in model.state_dict().values():
            dist.broadcast(tensor, 0)
        self.optimizer = optimizer
        self.model = model
        self.description = arguments.comm + \
            (f" over {backend}" if device.type == "cuda" else "")
        if arguments.comm == "local":
            return
        if arguments.comm == "ddp-powersgd":
            # PowerSGD's hook (torch 1.13) waits for an allreduce inside a
            # callback on one of gloo's two worker threads, so two buckets
            # in flight deadlock (more threads misorder gloo's collectives):
            # it runs with one bucket, DDP's first bucket made as large as
            # the others.
            dist._DEFAULT_FIRST_BUCKET_BYTES = 25 * 2**20
        self.model = DistributedDataParallel(
            model, device_ids=[device] if device.type == "cuda" else None)
        if arguments.comm == "ddp-fp16":
            from torch.distributed.algorithms.ddp_comm_hooks import \
                default_hooks
            self.model.register_comm_hook(None,
                                          default_hooks.fp16_compress_hook)
        elif arguments.comm == "ddp-powersgd":
            from torch.distributed.algorithms.ddp_comm_hooks import \
                powerSGD_hook
            state = powerSGD_hook.PowerSGDState(
                process_group=None,
                matrix_approximation_rank=arguments.powersgd_rank,
                start_powerSGD_iter=arguments.powersgd_start,
                use_error_feedback=True, warm_start=True)
            self.model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
            self.description += f" (rank {arguments.powersgd_rank})"
        elif arguments.comm == "zero":
            # DDP averages the gradients; each rank steps the optimizer of
            # its share of the parameters and broadcasts them (ZeRO-1).
            from torch.distributed.optim import ZeroRedundancyOptimizer
            self.optimizer = ZeroRedundancyOptimizer(
                self.model.parameters(), optimizer_class=type(optimizer),
                **optimizer.defaults)
            self.description = "ZeroRedundancyOptimizer over DDP"

    def all_sum(self, values):
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        self.dist.all_reduce(tensor)
        return tensor.tolist()


def parameters_digest(model):
    """The sha256 of `model`'s parameters, bit for bit."""
    digest = hashlib.sha256()
    for param in model.parameters():
        digest.update(param.detach().cpu().contiguous().numpy().tobytes())
    return digest.digest()


def freeze_large_parameters(model, min_bytes):
    """Stops the gradients of `model`'s parameters of `min_bytes` bytes or
    more, so that they keep their initial values; returns a description of
    what it froze."""
    frozen = [param for param in model.parameters()
              if param.numel() * param.element_size() >= min_bytes]
    for param in frozen:
        param.requires_grad_(False)
    elements = sum(param.numel() for param in frozen)
    total = sum(param.numel() for param in model.parameters())
    return (f"{len(frozen)} parameter{'' if len(frozen) == 1 else 's'} of "
            f"{min_bytes} bytes or more frozen ({elements:,} of {total:,} "
            "elements)")


def parameters_identical(model, sync):
    """Whether every rank holds the same parameters, bit for bit: each
    rank's parameters_digest, in three 20-bit pieces p, goes through an
    all-sum of p and p * p (exact in float64), and the pieces are equal on
    every rank exactly when size * sum(p * p) == sum(p) ** 2."""
    bits = int.from_bytes(parameters_digest(model)[:8], "little")
    pieces = [(bits >> (20 * i)) & 0xFFFFF for i in range(3)]
    sums = sync.all_sum([float(v) for p in pieces for v in (p, p * p)])
    return all(sync.size * sums[2 * i + 1] == sums[2 * i] ** 2
               for i in range(3))


def process_cpu_s():
    """CPU seconds (user and system) of every thread of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def optimizer_state_elements(optimizer):
    """The elements of the tensors of `optimizer`'s state on this rank
    (momentum, Adam's moments): a torch optimizer's, commopt's optimizers'
    (their shard's, sharded), ZeroRedundancyOptimizer's local one's."""
    inner = getattr(optimizer, "optim", optimizer)
    return sum(t.numel() for s in inner.state.values() for t in s.values()
               if torch.is_tensor(t) and t.dim() > 0)


def sent_bytes(rank):
    """Bytes this rank's host has sent on the emulated cluster's link
    (bench/cluster/emulate.sh names it commopt-p<rank>), or None where
    there is no such link."""
    path = f"/sys/class/net/commopt-p{rank}/statistics/tx_bytes"
    try:
        with open(path) as handle:
            return int(handle.read())
    except OSError:
        return None


def evaluate(model, sync, test_x, test_y):
    """Test accuracy in percent; each rank scores its share of the set."""
    share = len(test_x) // sync.size + 1
    begin = sync.rank * share
    x, y = test_x[begin:begin + share], test_y[begin:begin + share]
    correct = 0
    model.eval()
    with torch.no_grad():
        for start in range(0, len(x), 500):
            logits = model(x[start:start + 500])
            correct += (logits.argmax(1) == y[start:start + 500]).sum().item()
    model.train()
    total_correct, total = sync.all_sum([correct, len(x)])
    return 100.0 * total_correct / total


def main(argv):
    arguments = parse_arguments(argv)
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(arguments.seed)
    if arguments.deterministic:
        # cuBLAS is deterministic only with a fixed workspace, set before
        # its first use.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    device = torch.device("cpu")
    if arguments.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device")
        local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                             "LOCAL_RANK")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    factories = {("cnn", False): fashion_mnist.make_model,
                 ("cnn", True): fashion_mnist.make_tiny_model,
                 ("transformer", False): fashion_mnist.make_transformer,
                 ("transformer", True): fashion_mnist.make_tiny_transformer}
    model = factories[arguments.model, arguments.tiny]()
    model.to(device)
    frozen = freeze_large_parameters(model, arguments.freeze_min_bytes) \
        if arguments.freeze_min_bytes else None
    optimizer = torch.optim.SGD(model.parameters(), lr=arguments.lr,
                                momentum=arguments.momentum)
    sync = (Commopt if arguments.comm.startswith("commopt") else Peer)(
        model, optimizer, arguments, device)
    if frozen:
        sync.description += ", " + frozen
    optimizer = sync.optimizer
    train_x, train_y = (t.to(device) for t in fashion_mnist.load("train"))
    test_x, test_y = (t.to(device) for t in fashion_mnist.load("t10k"))
    samples = min(arguments.train_samples, len(train_x))
    global_batch = arguments.batch_size * sync.size
    steps = samples // global_batch
    if arguments.max_steps:
        steps = min(steps, arguments.max_steps)
    if sync.rank == 0:
        print(f"{sync.description}; {sync.size} ranks x batch "
              f"{arguments.batch_size}, {steps} steps per epoch", flush=True)

    history = []
    run_started = time.perf_counter()
    sent_before, total_steps = sent_bytes(sync.rank), 0
    for epoch in range(1, arguments.epochs + 1):
        order = torch.randperm(len(train_x), generator=torch.Generator()
                               .manual_seed(arguments.seed * 1000 + epoch))
        losses, step_ms, cpu_ms = [], [], []
        for step in range(steps):
            begin = step * global_batch + sync.rank * arguments.batch_size
            index = order[begin:begin + arguments.batch_size].to(device)
            started = time.perf_counter()
            cpu_started = process_cpu_s()
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(sync.model(train_x[index]), train_y[index])
            loss.backward()
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            total_steps += 1
            step_ms.append((time.perf_counter() - started) * 1e3)
            cpu_ms.append((process_cpu_s() - cpu_started) * 1e3)
            losses.append(loss.item())
        loss_sum, count, cpu_sum = sync.all_sum(
            [sum(losses), len(losses), statistics.median(cpu_ms)])
        record = {"epoch": epoch, "train_loss": loss_sum / count,
                  "step_ms_median": statistics.median(step_ms),
                  "step_ms_mean": statistics.fmean(step_ms),
                  # CPU time per step of all of a rank's threads (MPI's,
                  # gloo's and the runtime's channels included): the median
                  # of each rank's steps, averaged over the ranks.
                  "cpu_ms_median": cpu_sum / sync.size}
        if not arguments.no_eval:
            record["test_accuracy"] = evaluate(model, sync, test_x, test_y)
        history.append(record)
        if sync.rank == 0:
            accuracy = f"test accuracy {record['test_accuracy']:.2f}%  " \
                if "test_accuracy" in record else ""
            print(f"epoch {epoch}/{arguments.epochs}  loss "
                  f"{record['train_loss']:.4f}  {accuracy}step "
                  f"{record['step_ms_median']:.1f} ms (median of {steps})",
                  flush=True)
    if arguments.deterministic and sync.rank == 0:
        # Runs whose parameters agree bit for bit print the same digest.
        print(f"parameters sha256 {parameters_digest(model).hex()[:16]}",
              flush=True)
    if arguments.save_parameters and sync.rank == 0:
        torch.save({name: param.detach().cpu().clone()
                    for name, param in model.named_parameters()},
                   arguments.save_parameters)
    # Per rank, averaged over the ranks: the link's bytes per step (the
    # evaluation's included where it runs) and the optimizer's state.
    sent_after = sent_bytes(sync.rank)
    sent_per_step = (sent_after - sent_before) / max(1, total_steps) \
        if sent_before is not None and sent_after is not None else -1.0
    identical = parameters_identical(model, sync) \
        if arguments.comm != "local" else None
    if identical is not None and sync.rank == 0:
        print(f"parameters identical on all {sync.size} ranks: "
              f"{'yes' if identical else 'NO'}", flush=True)
    # Each rank's state in its own slot: the largest is what a rank needs.
    slots = [0.0] * sync.size
    slots[sync.rank] = float(optimizer_state_elements(optimizer))
    sums = sync.all_sum([sent_per_step] + slots)
    sent_sum, states = sums[0], sums[1:]
    if arguments.json and sync.rank == 0:
        with open(arguments.json, "w") as handle:
            json.dump({"label": arguments.label or arguments.comm,
                       "comm": arguments.comm, "plan": arguments.plan,
                       "description": sync.description,
                       "model": arguments.model,
                       "ranks": sync.size, "batch_size": arguments.batch_size,
                       "seed": arguments.seed,
                       "train_samples": samples,
                       "seconds": time.perf_counter() - run_started,
                       "parameters": sum(p.numel()
                                         for p in model.parameters()),
                       "optimizer_state_elements": states,
                       "sent_bytes_per_step": sent_sum / sync.size
                       if sent_per_step >= 0 else None,
                       "parameters_identical": identical,
                       "epochs": history}, handle, indent=1)
            handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
