"""A 16-bit wire stays within its rounding error of the f32 average.

One backward of each rank's own batch, reduced (avg) by a plan whose
collectives travel in f16 (prescale 1/size) or bf16, is compared with the
exact average of the ranks' gradients: each rank records its own gradient
with tensor hooks before the plan reduces it, and an f64 allreduce of
those sums them exactly. Rounding each value to the wire type and summing
4 of them with a rounding after each addition errs by at most 4 u
(sum over ranks of |g_r|) / size <= 4 u max_r |g_r|, with u the unit
roundoff (2^-11 for f16, 2^-8 for bf16), plus, for f16, four roundings
of subnormals of at most 2^-25 / (prescale size) each. Every element must
be within 1.01 times that; the same step with a dense f32 plan, on a copy
of the model, must be within f32 rounding of it. A mixed-wire bucket
(weights in f16, biases in f32, one message) must keep each gradient
within its own type's bound. The wire results also differ from the f32
plan's, showing that the wire was used.

    mpirun -np 4 python3 wire_precision.py
"""

import copy

import torch

import commopt
from common import (all_reduce, batch, dense, fail, loss_fn, make_model,
                    param_gradient, plan, run_main, say, shard, start)

UNIT_ROUNDOFF = {"none": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
# Half the spacing of the wire type's subnormals.
TINY = {"none": 2.0**-150, "f16": 2.0**-25, "bf16": 2.0**-134}


def reduced_gradients(model, the_plan, x, y):
    """(this rank's own gradients, the gradients the plan reduced)."""
    model = copy.deepcopy(model)
    own = {}
    for name, param in model.named_parameters():
        param.register_hook(
            lambda grad, name=name: own.__setitem__(name, grad.clone()))
    optimizer = commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.0), model.named_parameters(),
        plan=the_plan)
    optimizer.zero_grad()
    loss_fn(model, x, y).backward()
    optimizer.synchronize()
    reduced = {n: p.grad.clone() for n, p in model.named_parameters()}
    optimizer.remove_hooks()
    return own, reduced


def main(argv):
    rank, size = start()
    model = make_model(seed=3)
    commopt.broadcast_parameters(model.state_dict(), root_rank=0)
    x, y = shard(batch(0, seed=4), rank, size)
    g = lambda name: param_gradient(model, name)  # noqa
    names = [n for n, _ in model.named_parameters()]
    wires = {"none": plan([dense([g(n) for n in names], channel=0)]),
             "f16": plan([dense([g(n) for n in names[:3]], channel=0,
                                wire="f16", prescale=1.0 / size),
                          dense([g(n) for n in names[3:]], channel=1,
                                wire="f16", prescale=1.0 / size)]),
             "bf16": plan([dense([g(n) for n in names], channel=1,
                                 wire="bf16")]),
             # One mixed-wire bucket: the weights in f16, the biases in f32,
             # blocking (no channel).
             "mixed": plan([dense([dict(g(n), narrowed="weight" in n)
                                   for n in names], channel=None,
                                  wire="f16", prescale=1.0 / size)])}
    results = {}
    for wire, the_plan in wires.items():
        own, reduced = reduced_gradients(model, the_plan, x, y)
        results[wire] = reduced
        worst = 0.0
        for name in names:
            # The type this gradient travelled in, and its prescale.
            travel, prescale = wire, the_plan.collectives[0].prescale
            if wire == "mixed":
                travel, prescale = ("f16", prescale) if "weight" in name \
                    else ("none", 1.0)
            exact = all_reduce(own[name], "sum") / size
            largest = all_reduce(own[name].abs(), "max")
            bound = 4 * UNIT_ROUNDOFF[travel] * largest + \
                4 * TINY[travel] / (prescale * size)
            # The f32 result of the widened sum and division.
            bound = 1.01 * bound + 2.0**-24 * exact.abs()
            error = (reduced[name].double() - exact).abs()
            ratio = (error / bound).max().item()
            worst = max(worst, ratio)
            if not ratio <= 1:
                i = (error / bound).argmax().item()
                fail(f"{wire} wire: '{name}' element {i}: reduced "
                     f"{reduced[name].flatten()[i].item():.9g}, exact "
                     f"{exact.flatten()[i].item():.9g}, error "
                     f"{error.flatten()[i].item():.3g} > bound "
                     f"{bound.flatten()[i].item():.3g}")
        say(f"{wire} wire ({the_plan.kinds}): every reduced gradient within "
            f"its bound of the exact average (error at most {worst:.2f} of "
            f"the bound)")
    for wire in ("f16", "bf16", "mixed"):
        narrowed = [n for n in names if wire != "mixed" or "weight" in n]
        same = sum(torch.equal(results[wire][n], results["none"][n])
                   for n in narrowed)
        if same == len(narrowed):
            fail(f"{wire} wire: the reduced gradients equal the f32 plan's "
                 "bit for bit: was the wire used?")
    say("the f16, bf16 and mixed results differ from the f32 plan's")


if __name__ == "__main__":
    run_main(main)
