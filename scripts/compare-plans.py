#!/usr/bin/python3
"""Prints the estimates of several plans of one step against DDP's policy.

    compare-plans.py PREFIX STEP.mlir TIMELINE.json [TIMES]

reads the JSON reports of comm-estimate PREFIX-NAME.json for each plan that
scripts/demo.sh makes (NAME: ddp, horovod, xla, plan, f16, sparse; those
missing are left out) and, where there is one, the planned module
PREFIX-NAME.mlir, whose sparse collectives' density and exchange give their
bytes on the wire. STEP.mlir is the imported step; TIMES says where its
compute times come from, for the header.

Bytes on the wire are each rank's payload per step, before the collective's
algorithm moves it (a ring allreduce sends about twice its payload): a
dense collective's gradients in their wire type (f16 halves them); a sparse
one's selected values and indices (density x elements x (4 + 8) bytes, as
the runtime sends them), or, with the chunk exchange, its selected chunks
and the chunk norms (8-byte doubles).
"""

import json
import math
import os
import re
import sys

# (file suffix, row label), in the order printed.
PLANS = [
    ("ddp", "PyTorch DDP, 25 MiB"),
    ("horovod", "Horovod, 64 MiB"),
    ("xla", "XLA combiner, 30 MiB"),
    ("plan", "commopt, f32"),
    ("f16", "commopt, wire=f16"),
    ("sparse", "commopt, f16 + sparse"),
]
# Bytes of a sparse value (f32), of its index and of a chunk norm, as the
# runtime sends them (CollectiveCost.h).
VALUE_BYTES = 4
INDEX_BYTES = 8
NORM_BYTES = 8
# A sparse allreduce, blocking or started.
SPARSE_OPS = ("comm.sparse_allreduce", "comm.sparse_start")
SPARSE_OP = re.compile(r"comm\.sparse_(allreduce|start) .*\{(?P<attrs>.*)\}")


def sparse_collectives(module):
    """Name -> (density, exchange, chunk elements) of each sparse collective
    of a planned module."""
    found = {}
    for line in open(module):
        match = SPARSE_OP.search(line)
        if not match:
            continue
        attrs = match.group("attrs")
        name = re.search(r'name = "([^"]*)"', attrs).group(1)
        density = float(re.search(r"density = ([-+.0-9e]+)", attrs).group(1))
        exchange = re.search(r"exchange = #comm.exchange<(\w+)>",
                             attrs).group(1)
        chunk = re.search(r"chunk_elements = (\d+)", attrs)
        found[name] = (density, exchange, int(chunk.group(1)) if chunk
                       else 32768)
    return found


def wire_bytes(collective, sparse):
    """What one rank sends into `collective` (see the module's docstring)."""
    if collective["op"] not in SPARSE_OPS:
        return collective["bytes"]
    density, exchange, chunk = sparse[collective["name"]]
    elements = collective["bytes"] // VALUE_BYTES
    if exchange == "chunk":
        chunks = math.ceil(elements / chunk)
        selected = min(math.ceil(density * chunks) * chunk, elements)
        return chunks * NORM_BYTES + selected * VALUE_BYTES
    return math.ceil(density * elements) * (VALUE_BYTES + INDEX_BYTES)


def main(prefix, step, timeline, times="the profile's measured times"):
    plans = []
    for name, label in PLANS:
        path = f"{prefix}-{name}.json"
        if not os.path.exists(path):
            continue
        report = json.load(open(path))
        module = f"{prefix}-{name}.mlir"
        sparse = sparse_collectives(module) if os.path.exists(module) else {}
        function = report["functions"][0]
        wire = sum(wire_bytes(c, sparse) for c in function["collectives"])
        plans.append((name, label, report, function, wire, len(sparse)))

    _, _, report, ddp, _, _ = plans[0]
    gradients = open(step).read().count("comm.allreduce ")
    cluster = report["cluster"]
    print(f"model {ddp['model']}: {gradients} gradients, "
          f"{sum(c['bytes'] for c in ddp['collectives']) / 2**20:.1f} MiB "
          "per step")
    print(f"compute: {ddp['compute_us'] / 1e3:.2f} ms per step ({times})")
    print(f"cluster {cluster['name']}: {cluster['ranks']} ranks, "
          f"{cluster['allreduce']} allreduce")
    print(f"  {'plan':<24}{'step (ms)':>11}{'exposed (ms)':>14}"
          f"{'wire (MiB)':>12}{'collectives':>13}{'vs DDP':>9}")
    for _, label, _, result, wire, _ in plans:
        print(f"  {label:<24}{result['step_us'] / 1e3:>11.2f}"
              f"{result['exposed_us'] / 1e3:>14.2f}{wire / 2**20:>12.1f}"
              f"{len(result['collectives']):>13}"
              f"{ddp['step_us'] / result['step_us']:>8.3f}x")
    compute = ddp["compute_us"]
    print(f"  {'compute only, comm free':<24}{compute / 1e3:>11.2f}{'':>39}"
          f"{ddp['step_us'] / compute:>8.3f}x")
    for name, label, report, _, _, sparse in plans:
        search = report.get("plan_search")
        if not search or name != plans[-1][0]:
            continue
        print(f"{label}: comm-optimize compared {len(search)} plans")
        width = max(len(entry["options"]) for entry in search)
        for entry in search:
            step_time = f"{entry['step_us'] / 1e3:.2f} ms" \
                if "step_us" in entry else entry.get("failure", "failed")
            chosen = "  <- chosen" if entry.get("chosen") else ""
            print(f"  {entry['options']:<{width}}{step_time:>11}{chosen}")
        if sparse:
            print(f"  the chosen plan sends {sparse} of {gradients} "
                  "gradients sparse")
    print("wire: each rank's payload per step, in the wire type (sparse: "
          "the selected values and indices)")
    print(f"timeline for https://ui.perfetto.dev or chrome://tracing: "
          f"{timeline}\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
