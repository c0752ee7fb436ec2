"""Checks an exported gradient profile against the model it came from.

    check-exported-profile.py PROFILE.json MODEL

MODEL is a torchvision model name or 'module:factory' (the module found on
PYTHONPATH). Every trainable parameter of the model must appear exactly
once, under its name in model.named_parameters(), with its shape, and with
its other names (tied weights) as its `aliases`. Layers must come in an
order consistent with backward (for the numbered blocks of `features`,
non-increasing block numbers, and the classifier before them), with the
parameters marked `unused` in layers of their own after all the others,
taking no backward time. Every other time must be positive (for a
torchvision model) or at least not negative (any other, whose layers may
not all run as modules). The header's totals (num_layers, num_params,
num_elements) must be there and agree with the layers.

Prints "checked N parameters in M layers: OK" (or FAIL, after the errors),
then, if there are any, "aliases: NAME = ALIAS, ..." for each shared
parameter and "unused: NAME, ..." in profile order.
"""

import importlib
import json
import re
import sys


def make_model(spec):
    if ":" in spec:
        module_name, _, factory = spec.partition(":")
        return getattr(importlib.import_module(module_name), factory)()
    import torchvision
    return getattr(torchvision.models, spec)(weights=None)


def expected_aliases(model):
    """For each trainable parameter's first name, its other names."""
    first = {id(p): name for name, p in model.named_parameters()
             if p.requires_grad}
    aliases = {name: [] for name in first.values()}
    for prefix, module in model.named_modules(remove_duplicate=False):
        for pname, param in module._parameters.items():
            full = f"{prefix}.{pname}" if prefix else pname
            if param is not None and id(param) in first and \
                    full != first[id(param)] and \
                    full not in aliases[first[id(param)]]:
                aliases[first[id(param)]].append(full)
    return aliases


def main(profile_path, model_spec):
    profile = json.load(open(profile_path))
    errors = []
    if profile.get("format") != "commopt-grad-profile" or \
            profile.get("version") != 1:
        errors.append("not a commopt-grad-profile v1")
    model = make_model(model_spec)
    strict = ":" not in model_spec
    expected = {name: list(p.shape) for name, p in model.named_parameters()
                if p.requires_grad}
    aliases = expected_aliases(model)
    seen = {}
    shared = []  # "name = alias" as the profile lists them
    unused = []
    for layer in profile["layers"]:
        params = layer["params"]
        flags = {bool(p.get("unused")) for p in params}
        if len(flags) > 1:
            errors.append(f"layer {layer['name']} mixes used and unused "
                          "parameters")
        if flags == {True}:
            if layer["backward_us"] != 0:
                errors.append(f"layer {layer['name']} of unused parameters "
                              f"has backward_us {layer['backward_us']}")
            if not layer["forward_us"] >= 0:
                errors.append(f"layer {layer['name']}: forward_us "
                              f"{layer['forward_us']} is negative")
        else:
            if unused:
                errors.append(f"layer {layer['name']} comes after unused "
                              "parameters")
            for key in ("forward_us", "backward_us"):
                if not (layer[key] > 0 if strict or key == "backward_us"
                        else layer[key] >= 0):
                    errors.append(f"layer {layer['name']}: {key} "
                                  f"{layer[key]} is not positive")
        for param in params:
            name = param["name"]
            if name in seen:
                errors.append(f"parameter {name} appears twice")
            seen[name] = param["shape"]
            if param.get("unused"):
                unused.append(name)
            listed = param.get("aliases", [])
            if listed:
                shared.append(" = ".join([name] + listed))
            if "aliases" in param and not listed:
                errors.append(f"{name}: empty aliases")
            if name in aliases and listed != aliases[name]:
                errors.append(f"{name}: aliases {listed}, expected "
                              f"{aliases[name]}")
    missing = sorted(set(expected) - set(seen))
    extra = sorted(set(seen) - set(expected))
    if missing:
        errors.append(f"missing parameters: {missing}")
    if extra:
        errors.append(f"unknown parameters: {extra}")
    for name in set(expected) & set(seen):
        if expected[name] != seen[name]:
            errors.append(f"{name}: shape {seen[name]}, expected "
                          f"{expected[name]}")

    # Backward runs from the classifier back to features.0.
    blocks = []
    for layer in profile["layers"]:
        match = re.match(r"features\.(\d+)", layer["name"])
        if match:
            blocks.append(int(match.group(1)))
        elif blocks:
            errors.append(f"layer {layer['name']} comes after a features "
                          "block in backward order")
    if blocks != sorted(blocks, reverse=True):
        errors.append(f"features blocks out of backward order: {blocks}")
    # The totals the importer checks: written, and right.
    params = [p for layer in profile["layers"] for p in layer["params"]]
    elements = 0
    for param in params:
        count = 1
        for dim in param["shape"]:
            count *= dim
        elements += count
    for key, actual in (("num_layers", len(profile["layers"])),
                        ("num_params", len(params)),
                        ("num_elements", elements)):
        if key not in profile:
            errors.append(f"{key} is missing")
        elif profile[key] != actual:
            errors.append(f"{key} is {profile[key]}, but the layers give "
                          f"{actual}")
    if not profile["forward_us"] > 0:
        errors.append("forward_us is not positive")
    if not profile.get("update_us", 0) > 0:
        errors.append("update_us (the optimizer's step) is missing or not "
                      "positive")

    for error in errors:
        print(f"error: {error}")
    print(f"checked {len(seen)} parameters in {len(profile['layers'])} layers: "
          f"{'FAIL' if errors else 'OK'}")
    if shared:
        print(f"aliases: {', '.join(shared)}")
    if unused:
        print(f"unused: {', '.join(unused)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
