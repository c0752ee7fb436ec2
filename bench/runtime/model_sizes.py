#!/usr/bin/env python3
# ===- model_sizes.py - Gradient sizes of real torchvision models ---------=== #
#
# Writes the parameter (= gradient) sizes of torchvision models to text files,
# one tensor a line, in backward order: the reverse of model.parameters(),
# which is the order in which autograd produces the gradients and in which
# DDP fills its buckets. Each line is "<elements> <shape>", e.g.
# "2359296 512x512x3x3". The models are built with weights=None, so nothing
# is downloaded.
#
# Usage: model_sizes.py OUTDIR [MODEL...]   (default: resnet50 vgg16)
#
# ===----------------------------------------------------------------------=== #

import os
import sys

import torchvision


def main(argv):
    if len(argv) < 2:
        print("usage: model_sizes.py OUTDIR [MODEL...]", file=sys.stderr)
        return 2
    outdir = argv[1]
    models = argv[2:] or ["resnet50", "vgg16"]
    os.makedirs(outdir, exist_ok=True)
    for name in models:
        model = getattr(torchvision.models, name)(weights=None)
        params = list(model.parameters())
        path = os.path.join(outdir, name + ".sizes")
        with open(path, "w") as out:
            out.write("# %s: %d gradients, %d elements, backward order\n" %
                      (name, len(params), sum(p.numel() for p in params)))
            for p in reversed(params):
                out.write("%d %s\n" % (p.numel(),
                                       "x".join(str(d) for d in p.shape)))
        print("%s: %d tensors, %d elements -> %s" %
              (name, len(params), sum(p.numel() for p in params), path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
