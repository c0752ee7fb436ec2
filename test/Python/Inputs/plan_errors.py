"""Plans that do not fit the model or the job fail with a CommoptError that
says why, on every rank, before any collective could hang. Rank 0 prints
each case's message for FileCheck; a case that raises nothing (or
something else) fails the job. Afterwards the ranks still train together.

    mpirun -np 4 -x COMMRT_CHANNELS=2 -x COMMRT_CHECK=1 \
        python3 plan_errors.py SCRATCH_PREFIX
"""

import json
import sys

import torch

import commopt
from common import (batch, check_identical, dense, fail, gradient, loss_fn,
                    make_model, param_gradient, plan_document, run_main, say,
                    shard, start)


def good_collectives(model):
    g = lambda name: param_gradient(model, name)  # noqa
    return [dense([g("fc2.weight"), g("fc2.bias"), g("fc1.bias")], channel=0),
            dense([g("fc1.weight")], channel=1),
            dense([g("conv.weight"), g("conv.bias")], channel=0)]


def optimizer_for(model, the_plan):
    return commopt.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), model.named_parameters(),
        plan=the_plan)


def train_step(model, optimizer, step=0):
    rank, size = commopt.rank(), commopt.size()
    x, y = shard(batch(step), rank, size)
    optimizer.zero_grad()
    loss_fn(model, x, y).backward()
    optimizer.step()


def expect_error(case, action):
    """Runs `action`, which must raise CommoptError; prints its message."""
    try:
        action()
    except commopt.CommoptError as error:
        say(f"{case}: CommoptError: {error}")
        return
    except Exception as error:  # noqa: BLE001
        fail(f"{case}: raised {type(error).__name__}, not CommoptError: "
             f"{error}")
    fail(f"{case}: no error")


def main(argv):
    scratch = argv[0]
    rank, size = start()
    model = make_model()

    def with_document(edit, source="test plan"):
        document = plan_document(good_collectives(model), world_size=size)
        edit(document)
        return lambda: optimizer_for(
            model, commopt.parse_plan(document, source=source))

    def rename(document):
        document["collectives"][0]["gradients"][1]["name"] = "fc3.bias"

    def reshape(document):
        document["collectives"][1]["gradients"][0] = gradient("fc1.weight",
                                                              [16, 145])

    def retype(document):
        for g in document["collectives"][2]["gradients"]:
            g["dtype"] = "f64"

    def drop(document):
        document["collectives"][2]["gradients"].pop()

    def world(document):
        document["world_size"] = 8

    def version(document):
        document["version"] = 2

    def channel(document):
        document["collectives"][1]["channel"] = 2

    def narrow_without_wire(document):
        document["collectives"][0]["gradients"][0]["narrowed"] = True
        document["collectives"][0]["gradients"][1]["narrowed"] = False
        document["collectives"][0]["gradients"][2]["narrowed"] = False

    def narrow_some(document):
        narrow_without_wire(document)
        document["collectives"][0]["wire"] = "f16"
        del document["collectives"][0]["gradients"][2]["narrowed"]

    def transport(name, index=0):
        def edit(document):
            document["collectives"][index]["transport"] = name
        return edit

    def mixed_on_mpi(document):
        narrow_without_wire(document)
        document["collectives"][0]["wire"] = "f16"
        document["collectives"][0]["transport"] = "mpi"

    def rows_on_mpi(document):
        rows(144)(document)
        document["collectives"][1]["transport"] = "mpi"

    def momentum_text(document):
        document["momentum_correction"] = "yes"

    def rows(chunk_elements):
        def edit(document):
            # fc1.weight (16 x 144) by the lossless rows exchange.
            spec = {"select": "rows", "exchange": "hash", "density": 0.5}
            if chunk_elements is not None:
                spec["chunk_elements"] = chunk_elements
            document["collectives"][1].update(kind="sparse", sparse=spec)
        return edit

    expect_error("momentum correction not a bool",
                 with_document(momentum_text))
    expect_error("narrowed without a wire", with_document(narrow_without_wire))
    expect_error("narrowed not said for all", with_document(narrow_some))
    expect_error("unknown parameter", with_document(rename))
    expect_error("other shape", with_document(reshape))
    expect_error("other dtype", with_document(retype))
    expect_error("missing parameter", with_document(drop))
    expect_error("other world size", with_document(world))
    expect_error("unknown version", with_document(version))
    expect_error("channel out of range", with_document(channel))
    expect_error("rows without their length", with_document(rows(None)))
    expect_error("rows of another length", with_document(rows(16)))
    expect_error("unknown transport", with_document(transport("gloo")))
    expect_error("transport of a sparse collective", with_document(rows_on_mpi))
    expect_error("transport of a mixed-wire bucket",
                 with_document(mixed_on_mpi))
    if not torch.cuda.is_available():
        # NCCL needs a GPU: every rank fails when the optimizer is made.
        expect_error("transport without its backend",
                     with_document(transport("nccl", 1)))
    else:
        say("transport without its backend: (a GPU is present)")

    # Files: not JSON, and a JSON plan of another version through
    # load_plan.
    not_json = f"{scratch}.not-json.{rank}.json"
    with open(not_json, "w") as handle:
        handle.write('{"format": "commopt-plan", "version": 1,\n'
                     ' "collectives": [ oops ]}\n')
    expect_error("not JSON", lambda: commopt.load_plan(not_json))
    version_2 = f"{scratch}.version-2.{rank}.json"
    document = plan_document(good_collectives(model), world_size=size,
                             version=2)
    with open(version_2, "w") as handle:
        json.dump(document, handle)
    expect_error("version 2 file", lambda: commopt.load_plan(version_2))
    expect_error("no file", lambda: commopt.load_plan(
        f"{scratch}.nowhere.json"))

    # Ranks that run different plans: rank 3 sends fc1.weight in f16. The
    # ranks compare their plans' fingerprints when the optimizer is made,
    # and every rank fails there, before any collective could pair wrong
    # buffers (the runtime's COMMRT_CHECK would catch it at the start).
    document = plan_document(good_collectives(model), world_size=size)
    if rank == 3:
        document["collectives"][1]["wire"] = "f16"
    expect_error("ranks disagree", lambda: optimizer_for(
        model, commopt.parse_plan(document)))
    # Or rank 3 runs fc1.weight on another transport.
    document = plan_document(good_collectives(model), world_size=size)
    if rank == 3:
        document["collectives"][1]["transport"] = "mpi"
    expect_error("ranks disagree on a transport", lambda: optimizer_for(
        model, commopt.parse_plan(document)))

    # The job still works.
    model = make_model()
    optimizer = optimizer_for(model, commopt.parse_plan(
        plan_document(good_collectives(model), world_size=size)))
    for step in range(3):
        train_step(model, optimizer, step)
    check_identical(model, "after the errors")
    say("after the errors: 3 steps with a good plan, parameters identical")

    # Collectives that name the backend in use (MPI here) train as the same
    # plan without it, bit for bit, blocking and on channels.
    trained = {}
    for named in (None, "mpi"):
        model = make_model()
        document = plan_document(good_collectives(model), world_size=size)
        document["collectives"][2]["channel"] = None
        if named:
            for entry in document["collectives"]:
                entry["transport"] = named
        optimizer = optimizer_for(model, commopt.parse_plan(document))
        for step in range(3):
            train_step(model, optimizer, step)
        trained[named] = [p.detach().clone() for p in model.parameters()]
    check_identical(model, "on the MPI transport")
    same = all(torch.equal(a, b) for a, b in zip(trained[None], trained["mpi"]))
    if not same:
        fail("a plan on the MPI transport trained other parameters")
    say("on the MPI transport: 3 steps, the same parameters as without it")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    run_main(main)
