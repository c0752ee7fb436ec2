"""commopt.broadcast_parameters gives every rank the root's values exactly,
bit for bit, whatever their dtype: f32 (also non-contiguous), f64, f16,
bf16, integers of 64 bits beyond 2^53, of 32 and 16 bits (their bit
patterns include NaNs of the float of their size), 8-bit integers and
bools, an empty tensor, a model's parameters (requires_grad) and a batch
norm's buffers; the root's own values stay as they were. A dtype it cannot
send is a CommoptError on every rank.

    mpirun -np 4 python3 broadcast.py
"""

import torch
from torch import nn

import commopt
from common import bits, fail, run_main, say, start


def state(rank):
    """The tensors as `rank` holds them: the root's values when rank is
    the root, others elsewhere."""
    r = rank
    transposed = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 7 + r
    return {
        "a.int64": torch.tensor([2**53 + 1, -(2**62) - 3, 2**63 - 1,
                                 -(2**63), r], dtype=torch.int64),
        "b.int32": torch.tensor([2**31 - 1, -(2**31), 123456789 + r, -1],
                                dtype=torch.int32),
        "c.int16": torch.tensor([32767, -32768, -1, -2 - r, r],
                                dtype=torch.int16),
        "d.uint8": torch.tensor([0, 255, 17 + r], dtype=torch.uint8),
        "e.int8": torch.tensor([-128, 127, r], dtype=torch.int8),
        "f.bool": torch.tensor([True, False, r % 2 == 1]),
        "g.f16": torch.tensor([1 / 3, 65504, -0.0, float("inf"), r],
                              dtype=torch.float16),
        "h.bf16": torch.tensor([1 / 3, 3e38, -0.0, r],
                               dtype=torch.bfloat16),
        "i.f64": torch.tensor([1 / 3, 1e-310, r], dtype=torch.float64),
        "j.f32.transposed": transposed.t(),
        "k.empty": torch.zeros(0),
    }


def check(got, want, what):
    for name in want:
        if got[name].dtype != want[name].dtype or \
                got[name].shape != want[name].shape:
            fail(f"{what}: '{name}' changed dtype or shape")
        if want[name].numel() and not torch.equal(
                bits(got[name]) if got[name].is_floating_point()
                else got[name], bits(want[name])
                if want[name].is_floating_point() else want[name]):
            fail(f"{what}: '{name}' is {got[name].tolist()}, the root's is "
                 f"{want[name].tolist()}")


def main(argv):
    rank, size = start()
    for root in (0, size - 2):
        mine = state(rank)
        commopt.broadcast_parameters(mine, root_rank=root)
        check(mine, state(root), f"root {root}")
        # (name, tensor) pairs work too.
        pairs = state(rank)
        commopt.broadcast_parameters(list(pairs.items()), root_rank=root)
        check(pairs, state(root), f"root {root}, pairs")
        say(f"root {root}: {len(mine)} tensors of every dtype arrive bit for "
            "bit")

    # A model: parameters that require gradients, and batch norm buffers
    # (an int64 counter) that differ between ranks.
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    for _ in range(rank + 1):
        model(torch.randn(5, 3))
    torch.manual_seed(0)
    expected = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    expected(torch.randn(5, 3))
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    check(model.state_dict(), expected.state_dict(), "model state_dict")
    if not all(p.requires_grad for p in model.parameters()):
        fail("parameters no longer require gradients")
    say(f"model: state_dict (num_batches_tracked "
        f"{int(model[1].num_batches_tracked)}) equals rank 0's")

    try:
        commopt.broadcast_parameters(
            {"z": torch.zeros(2, dtype=torch.complex64)})
    except commopt.CommoptError as error:
        say(f"complex: CommoptError: {error}")
    else:
        fail("a complex tensor was broadcast")


if __name__ == "__main__":
    run_main(main)
