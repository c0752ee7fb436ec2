"""commopt's training bridge: executes communication plans made by
`comm-optimize` (exported with `commopt-translate --export-plan`) in PyTorch
training loops over commrt, in the style of Horovod:

    import commopt
    commopt.init()
    model = make_model()
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    plan = commopt.load_plan("plan.json")      # or None: the default plan
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        model.named_parameters(), plan=plan)
    for x, y in loader:                         # this rank's shard
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()         # collectives start here
        optimizer.step()                        # waits, then updates

Run it with `mpirun -np N python3 train.py`. The library is found through
COMMOPT_COMMRT_LIB, an install prefix, or the checkout's build folder.
"""

from . import runtime
from .checkpoint import save_checkpoint
from .collectives import allgather, allreduce, allreduce_, broadcast, \
    broadcast_
from .errors import CommoptError
from .optimizer import DistributedOptimizer, broadcast_optimizer_state, \
    broadcast_parameters
from .plan import Collective, GradientRange, Plan, default_plan, load_plan, \
    parse_plan
from .sharded import ShardedOptimizer

__all__ = [
    "Collective", "CommoptError", "DistributedOptimizer", "GradientRange",
    "Plan", "allgather", "allreduce", "allreduce_", "barrier", "broadcast",
    "broadcast_", "broadcast_optimizer_state", "broadcast_parameters",
    "default_plan", "init", "load_plan", "local_rank", "local_size",
    "parse_plan", "rank", "save_checkpoint", "ShardedOptimizer", "size",
]


def init():
    """Initialises the runtime (and MPI) and makes an uncaught exception on
    any rank stop every rank (MPI_Abort) instead of leaving the others
    waiting. Idempotent; DistributedOptimizer and broadcast_parameters call
    it too."""
    runtime.init()


def rank():
    """This process's rank."""
    return runtime.rank()


def size():
    """The number of ranks."""
    return runtime.size()


def local_rank():
    """This process's rank among the ranks on its node (those sharing its
    memory), e.g. to pick its GPU: torch.cuda.set_device(local_rank())."""
    runtime.init()
    return runtime.local_rank()


def local_size():
    """The number of ranks on this process's node."""
    runtime.init()
    return runtime.local_size()


def barrier():
    """Waits until every rank has called it."""
    runtime.barrier()
