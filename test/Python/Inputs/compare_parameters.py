"""Compares two parameter files saved by train.py --save-parameters.

Prints the largest difference of any element relative to the largest
magnitude of its tensor, and whether it is within TOLERANCE; exits non-zero
where the files name different parameters or shapes, or differ beyond it.

usage: compare_parameters.py A B TOLERANCE
"""

import sys

import torch


def main(argv):
    first, second = (torch.load(path) for path in argv[1:3])
    tolerance = float(argv[3])
    if sorted(first) != sorted(second):
        sys.exit(f"different parameters: {sorted(first)} and "
                 f"{sorted(second)}")
    worst, where = 0.0, ""
    for name, tensor in first.items():
        other = second[name]
        if tensor.shape != other.shape:
            sys.exit(f"{name}: shapes {tuple(tensor.shape)} and "
                     f"{tuple(other.shape)}")
        scale = max(tensor.abs().max().item(), 1e-30)
        difference = (tensor - other).abs().max().item() / scale
        if difference > worst:
            worst, where = difference, name
    verdict = "within" if worst <= tolerance else "beyond"
    print(f"largest relative difference {worst:.1e} ({where or 'none'}), "
          f"{verdict} {tolerance:g}")
    return 0 if worst <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
