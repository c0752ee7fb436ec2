"""Checks an exported gradient profile against the model it came from.

    check-exported-profile.py PROFILE.json MODEL

Every trainable parameter of the torchvision model MODEL must appear exactly
once, with its shape; layers must come in an order consistent with backward
(for the numbered blocks of `features`, non-increasing block numbers, and the
classifier before them); every time must be positive.
"""

import json
import re
import sys

import torchvision


def main(profile_path, model_name):
    profile = json.load(open(profile_path))
    errors = []
    if profile.get("format") != "commopt-grad-profile" or \
            profile.get("version") != 1:
        errors.append("not a commopt-grad-profile v1")
    model = getattr(torchvision.models, model_name)(weights=None)
    expected = {name: list(p.shape) for name, p in model.named_parameters()
                if p.requires_grad}
    seen = {}
    for layer in profile["layers"]:
        for key in ("forward_us", "backward_us"):
            if not layer[key] > 0:
                errors.append(f"layer {layer['name']}: {key} {layer[key]} "
                              "is not positive")
        for param in layer["params"]:
            if param["name"] in seen:
                errors.append(f"parameter {param['name']} appears twice")
            seen[param["name"]] = param["shape"]
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
    if not profile["forward_us"] > 0:
        errors.append("forward_us is not positive")
    if not profile.get("update_us", 0) > 0:
        errors.append("update_us (the optimizer's step) is missing or not "
                      "positive")

    for error in errors:
        print(f"error: {error}")
    print(f"checked {len(seen)} parameters in {len(profile['layers'])} layers: "
          f"{'FAIL' if errors else 'OK'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
