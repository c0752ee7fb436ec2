"""comm-optimize never gives a slower plan when an option is turned on.

Plans each module with every subset of the plan-changing options (wire,
sparse, partition-mb) on several clusters, reads the simulated step time of
each plan from comm-estimate's JSON report, and checks that a set of options
is never slower than any of its subsets (in the model, with no lossy
margin), that the plan comm-optimize keeps is the one its search reported
fastest as its lossy margin weighs the plans, that the margin never lets a
lossy plan through that gains less than it, and that the estimate priced
every collective op of the plan.

usage: never_worse.py BIN_DIR PIPEDREAM_DIR WORK_DIR
"""

import itertools
import json
import os
import random
import re
import subprocess
import sys

FREEDOMS = ["wire=f16", "sparse=true", "partition-mb=4"]
# The channels of the presets the modules are planned for (ClusterModel.cpp).
CLUSTER_CHANNELS = {"ethernet10-16": 1, "gradientflow-64": 2, "ib56-16": 1,
                    "nvlink-8": 2, "ib100-512": 2}
# Relative slack for float sums of the same simulated events.
TOLERANCE = 1e-9
# comm-optimize's default lossy-margin.
DEFAULT_MARGIN = 0.02


def random_profile(seed):
    """A gradient profile with layers of mixed sizes, small norm gradients
    among them (what splits f16 buckets) and a few large embeddings (where
    sparse pays)."""
    rng = random.Random(seed)
    layers = []
    for index in range(rng.randint(20, 120)):
        kind = rng.choice(["conv", "norm", "linear", "embedding"])
        if kind == "norm":
            params = [{"name": f"l{index}.norm.weight",
                       "shape": [rng.choice([64, 256, 1024])], "dtype": "f32"}]
        elif kind == "embedding":
            params = [{"name": f"l{index}.embedding.weight",
                       "shape": [rng.randint(5000, 40000), 512],
                       "dtype": "f32"}]
        else:
            params = [{"name": f"l{index}.{kind}.weight",
                       "shape": [rng.randint(16, 1024), rng.randint(16, 2048)],
                       "dtype": "f32"},
                      {"name": f"l{index}.{kind}.bias",
                       "shape": [rng.randint(16, 1024)], "dtype": "f32"}]
        layers.append({"name": f"l{index}",
                       "forward_us": rng.uniform(5, 2000),
                       "backward_us": rng.uniform(10, 4000),
                       "params": params})
    return {"format": "commopt-grad-profile", "version": 1,
            "model": f"random-{seed}", "forward_us": 100.0,
            "update_us": 50.0, "layers": layers}


def import_modules(translate, pipedream, work, pipedream_clusters, seeds,
                   random_clusters):
    """Imports pipedream's four profiles and `seeds` random gradient
    profiles into WORK; returns (module, clusters) pairs, the clusters each
    is planned for."""
    modules = []
    for model in ["alexnet", "gnmt", "resnet18", "resnet50"]:
        module = os.path.join(work, f"{model}.mlir")
        run([translate, "--import-pipedream",
             os.path.join(pipedream, f"{model}.graph.txt"), "-o", module])
        modules.append((module, pipedream_clusters))
    for seed in range(seeds):
        profile = os.path.join(work, f"random-{seed}.json")
        with open(profile, "w") as f:
            json.dump(random_profile(seed), f)
        module = os.path.join(work, f"random-{seed}.mlir")
        run([translate, "--import-grad-profile", profile, "-o", module])
        modules.append((module, random_clusters))
    return modules


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(command)}\n"
                 f"{result.stderr}")


# A collective op of a plan, as commopt-opt prints it.
COLLECTIVE = re.compile(r"^\s*(%\S+ = )?comm\.(allreduce|fused_allreduce|"
                        r"start|sparse_allreduce|sparse_start) ",
                        re.MULTILINE)


def require_no_slower(step_us, other_us, failure):
    """Exits with `failure` (which says what was slower than what) where a
    step of `step_us` is slower than `other_us`, beyond float slack."""
    if step_us > other_us * (1 + TOLERANCE):
        sys.exit(failure)


def margin_of(options):
    """The lossy-margin `options` give comm-optimize."""
    for option in options:
        if option.startswith("lossy-margin="):
            return float(option.split("=", 1)[1])
    return DEFAULT_MARGIN


def weighed_us(entry, margin):
    """A compared plan's step as the search weighs it: longer by `margin`
    for each kind of lossy choice it makes."""
    return entry["step_us"] * (1 + margin * len(entry["lossy"]))


def check_margin(search, margin, where):
    """Exits unless the chosen plan of `search` is the one of least weighed
    step, and no plan with fewer lossy kinds is slower than it by less than
    the margin asks; returns whether the margin declined a faster plan."""
    compared = [entry for entry in search if "step_us" in entry]
    chosen = [entry for entry in compared if entry["chosen"]][0]
    least = min(weighed_us(entry, margin) for entry in compared)
    if weighed_us(chosen, margin) > least * (1 + TOLERANCE):
        sys.exit(f"{where}: kept {chosen}, not the plan of least weighed "
                 f"step ({least} us at margin {margin})")
    for entry in compared:
        fewer = len(entry["lossy"]) < len(chosen["lossy"])
        # The chosen plan's lossy kinds beyond the entry's must each buy the
        # margin.
        bound = chosen["step_us"] * (1 + margin * len(chosen["lossy"])) / \
            (1 + margin * len(entry["lossy"]))
        if fewer and entry["step_us"] < bound * (1 - TOLERANCE):
            sys.exit(f"{where}: kept the lossy {chosen}, although {entry} "
                     f"is within the margin {margin}")
    declined = [entry for entry in compared if "declined" in entry]
    if declined and (declined[0]["step_us"] >= chosen["step_us"] or
                     len(declined[0]["lossy"]) <= len(chosen["lossy"])):
        sys.exit(f"{where}: {declined[0]} is marked declined, but it is "
                 f"not a faster, lossier plan than {chosen}")
    return bool(declined)


def plan(opt, module, cluster, options, report, searches=None):
    """Plans `module` for `cluster` with `options` and returns the step the
    estimate simulates; appends the plan search, if any, to `searches`."""
    planned = report + ".mlir"
    run([opt, module, "-o", planned,
         f"--comm-optimize=cluster={cluster} {' '.join(options)} "
         f"estimate=step report=json report-file={report}"])
    with open(report) as f:
        estimate = json.load(f)
    with open(planned) as f:
        ops = len(COLLECTIVE.findall(f.read()))
    priced = sum(len(function["collectives"])
                 for function in estimate["functions"])
    if ops == 0 or ops != priced:
        sys.exit(f"{module} {cluster} {options}: the plan has {ops} "
                 f"collective ops, the estimate priced {priced}")
    step_us = sum(function["step_us"] for function in estimate["functions"])
    search = estimate.get("plan_search", [])
    # comm-optimize searches when a plan-changing option is on.
    searched = any(option in FREEDOMS for option in options) and \
        "search=false" not in options
    if searched:
        chosen = [entry for entry in search if entry["chosen"]]
        if len(chosen) != 1:
            sys.exit(f"{module} {cluster} {options}: expected one chosen "
                     f"plan in {search}")
        check_margin(search, margin_of(options),
                     f"{module} {cluster} {options}")
        if searches is not None:
            searches.append(search)
        if abs(chosen[0]["step_us"] - step_us) > TOLERANCE * step_us:
            sys.exit(f"{module} {cluster} {options}: the search simulated "
                     f"{chosen[0]['step_us']} us for the plan it kept, the "
                     f"estimate of that plan says {step_us} us")
    elif search:
        sys.exit(f"{module} {options}: a search without a plan-changing "
                 f"option, or with search=false: {search}")
    return step_us


def main():
    bin_dir, pipedream, work = sys.argv[1:4]
    opt = os.path.join(bin_dir, "commopt-opt")
    translate = os.path.join(bin_dir, "commopt-translate")
    os.makedirs(work, exist_ok=True)

    modules = import_modules(
        translate, pipedream, work,
        ["ethernet10-16", "gradientflow-64", "ib56-16", "nvlink-8",
         "ib100-512"], 3, ["ethernet10-16", "gradientflow-64"])

    report = os.path.join(work, "estimate.json")
    checked = 0
    for module, clusters in modules:
        for cluster in clusters:
            subsets = [tuple(s) for size in range(len(FREEDOMS) + 1)
                       for s in itertools.combinations(FREEDOMS, size)]
            # Without a margin, every option set keeps the fastest plan.
            times = {s: plan(opt, module, cluster, s + ("lossy-margin=0",),
                             report)
                     for s in subsets}
            for larger in subsets:
                for smaller in subsets:
                    if set(smaller) <= set(larger):
                        require_no_slower(
                            times[larger], times[smaller],
                            f"{os.path.basename(module)} on {cluster}: "
                            f"{' '.join(larger)} plans "
                            f"{times[larger]:.3f} us, slower than "
                            f"{' '.join(smaller) or 'no option'} "
                            f"({times[smaller]:.3f} us)")
                    checked += 1
    # The cost bucketing is never slower than DDP's threshold rule, MG-WFBP
    # or no fusion, on one channel, also with an f16 wire, whose small f32
    # gradients form a class of their own that shares the channel with the
    # f16 buckets.
    policies = mixed = mixed_faster = 0
    for module, clusters in modules:
        for cluster in clusters:
            for wire in ("wire=none", "wire=f16"):
                common = ("channels=1", "priorities=false", wire,
                          "search=false")
                cost = plan(opt, module, cluster, ("fusion=cost",) + common,
                            report)
                ddp = plan(opt, module, cluster,
                           ("fusion=threshold", "bucket-cap-mb=25") + common,
                           report)
                unfused = plan(opt, module, cluster,
                               ("fusion=none",) + common, report)
                wfbp = plan(opt, module, cluster,
                            ("fusion=mgwfbp",) + common, report)
                for name, other in (("DDP's threshold", ddp),
                                    ("fusion=none", unfused),
                                    ("fusion=mgwfbp", wfbp)):
                    require_no_slower(
                        cost, other,
                        f"{os.path.basename(module)} on {cluster} with "
                        f"{wire}: fusion=cost plans {cost:.3f} us, slower "
                        f"than {name} ({other:.3f} us)")
                policies += 1
                if wire == "wire=none":
                    continue
                # Mixed-wire buckets (on by default) never slow it down.
                apart = plan(opt, module, cluster,
                             ("fusion=cost", "mixed-wire=false") + common,
                             report)
                require_no_slower(
                    cost, apart,
                    f"{os.path.basename(module)} on {cluster}: mixed-wire "
                    f"buckets plan {cost:.3f} us, slower than the kinds "
                    f"apart ({apart:.3f} us)")
                mixed_faster += cost < apart * (1 - TOLERANCE)
                mixed += 1
    # With sparse allreduces on the channel, started or blocking, the cost
    # bucketing is never slower than DDP's rule, MG-WFBP or no fusion either:
    # it simulates them beside its buckets, in the order
    # comm-schedule-overlap issues them. VGG-16 (the demo's profile, on a
    # V100's roofline) gets many sparse gradients on 10 GbE.
    vgg = os.path.join(work, "vgg16.mlir")
    run([translate, "--import-grad-profile", "--grad-profile-device=v100",
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "..", "examples", "profiles", "vgg16.json"),
         "-o", vgg])
    sparse_policies = 0
    for module, clusters in modules + [(vgg, ["ethernet10-16"])]:
        for overlap in ("sparse-overlap=true", "sparse-overlap=false"):
            common = ("channels=1", "priorities=false", "sparse=true",
                      overlap, "search=false")
            cost = plan(opt, module, clusters[0], ("fusion=cost",) + common,
                        report)
            for other_options in [("fusion=threshold", "bucket-cap-mb=25"),
                                  ("fusion=mgwfbp",), ("fusion=none",)]:
                other = plan(opt, module, clusters[0],
                             other_options + common, report)
                require_no_slower(
                    cost, other,
                    f"{os.path.basename(module)} on {clusters[0]} with "
                    f"sparse=true {overlap}: fusion=cost plans {cost:.3f} "
                    f"us, slower than {' '.join(other_options)} "
                    f"({other:.3f} us)")
            sparse_policies += 1
    # The search's sparse plans (sparse=true) are never slower than
    # comm-sparsify's own choice, started or blocking, without the search.
    sparse_cases = 0
    for module, clusters in modules:
        for cluster in clusters:
            searched = plan(opt, module, cluster,
                            ("sparse=true", "lossy-margin=0"), report)
            for fixed in [("sparse=true", "search=false"),
                          ("sparse=true", "sparse-overlap=false",
                           "search=false")]:
                alone = plan(opt, module, cluster, fixed, report)
                require_no_slower(
                    searched, alone,
                    f"{os.path.basename(module)} on {cluster}: sparse=true "
                    f"plans {searched:.3f} us, slower than "
                    f"{' '.join(fixed)} ({alone:.3f} us)")
                sparse_cases += 1
    # The cluster's channels (comm-optimize's default) are never slower than
    # one channel on these profiles, on every preset with more than one,
    # with f32 or f16 on the wire or sparse gradients (started on the
    # channels): concurrent collectives share the link, and the priorities
    # keep the gradients needed first ahead.
    channel_cases = 0
    for module, _ in modules:
        for cluster, channels in CLUSTER_CHANNELS.items():
            if channels < 2:
                continue
            for option in ("wire=none", "wire=f16", "sparse=true"):
                several = plan(opt, module, cluster, (option, "search=false"),
                               report)
                one = plan(opt, module, cluster,
                           (option, "channels=1", "search=false"), report)
                require_no_slower(
                    several, one,
                    f"{os.path.basename(module)} on {cluster} with "
                    f"{option}: {channels} channels plan {several:.3f} us, "
                    f"slower than one ({one:.3f} us)")
                channel_cases += 1
    # The lossy margin: with wire=f16 and sparse=true, at the default margin
    # and a wide one, the search keeps a lossy plan only where each lossy
    # kind buys the margin (plan() checks each search).
    margin_cases = declined = 0
    for module, clusters in modules + [(vgg, ["ethernet10-16"])]:
        for cluster in clusters:
            for margin in (DEFAULT_MARGIN, 0.25):
                searches = []
                plan(opt, module, cluster,
                     ("wire=f16", "sparse=true", f"lossy-margin={margin}"),
                     report, searches)
                declined += any("declined" in entry
                                for entry in searches[0])
                margin_cases += 1
    # Every bucketing policy and channel setting: the estimate prices every
    # collective op of the plan (plan() checks it).
    priced = 0
    for module, clusters in modules:
        for options in [("fusion=threshold",), ("fusion=mgwfbp",),
                        ("fusion=none",), ("channels=1", "priorities=false"),
                        ("fusion=threshold", "wire=f16", "sparse=true",
                         "search=false"),
                        ("sparse=true", "sparse-overlap=false",
                         "search=false")]:
            plan(opt, module, clusters[0], options, report)
            priced += 1
    print(f"never worse: {checked} option-set pairs on {len(modules)} "
          f"modules: OK")
    print(f"cost bucketing never slower than DDP's, MG-WFBP or no fusion: "
          f"{policies} cases: OK")
    print(f"with sparse gradients too: {sparse_policies} cases: OK")
    print(f"mixed-wire buckets never slower: {mixed} cases, faster in "
          f"{mixed_faster}: OK")
    print(f"sparse search never slower than comm-sparsify alone: "
          f"{sparse_cases} cases: OK")
    print(f"the cluster's channels never slower than one: {channel_cases} "
          f"cases: OK")
    print(f"lossy plans only past the margin: {margin_cases} searches, "
          f"a faster lossy plan declined in {declined}: OK")
    print(f"every collective priced: {priced} more plans: OK")


if __name__ == "__main__":
    main()
