#!/usr/bin/env python3
"""Times torch.topk(x.abs(), k) on CUDA: the PyTorch baseline of
commrt-gpu-bench's selection (part `select`), on the same number of gaussian
floats and the same k = ceil(density * elements).

Prints RESULT lines in commrt-gpu-bench's format (part=select,
plan=torch-topk and plan=torch-topk-unsorted). Where torch is missing or has
no CUDA, says so and exits 0, so that run.sh goes on.
"""

import argparse
import math
import statistics
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--label", default="gpu")
    parser.add_argument("--elements", type=int, default=100_000_000)
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_topk.py: torch is not installed here; skipped")
        return 0
    if not torch.cuda.is_available():
        print(f"torch_topk.py: torch has no CUDA here (torch "
              f"{torch.__version__}); skipped")
        return 0

    k = min(max(math.ceil(args.density * args.elements), 1), args.elements)
    generator = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(args.elements, device="cuda", generator=generator) * 1e-3
    for plan, is_sorted in (("torch-topk", True),
                            ("torch-topk-unsorted", False)):
        seconds = []
        for run in range(args.warmup + args.repetitions):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            values, indices = torch.topk(x.abs(), k, sorted=is_sorted)
            stop.record()
            stop.synchronize()
            if run >= args.warmup:
                seconds.append(start.elapsed_time(stop) * 1e-3)
        print(f"RESULT label={args.label} part=select plan={plan} "
              f"median_s={statistics.median(seconds):.6f} "
              f"min_s={min(seconds):.6f} max_s={max(seconds):.6f} "
              f"reps={args.repetitions} elements={args.elements} k={k} "
              f"selected={indices.numel()} check=ok "
              f"device={torch.cuda.get_device_name().replace(' ', '_')} "
              f"torch={torch.__version__}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
