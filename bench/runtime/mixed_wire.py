"""Times a mixed-wire bucket against its two kinds sent apart.

One large gradient travels in f16 (prescale 1/4) and NSMALL small ones stay
f32, as comm-lower-precision leaves small gradients: once as one
commrt_mixed_allreduce (one message, each segment reduced in its own type),
once as two commrt_fused_allreduce calls (the f16 bucket, then the f32
one), alternating, each call after commrt_barrier, REPS timed calls per
round, two rounds; rank 0 prints the medians and their ratio.

    mpirun -np 4 python3 bench/runtime/mixed_wire.py BIG SMALL NSMALL REPS
    bench/cluster/emulate.sh run 4 1gbit -- python3 \\
        bench/runtime/mixed_wire.py 262144 1024 20 10

BIG and SMALL are element counts.
"""

import os
import statistics
import sys
import types

# The runtime's ctypes module alone: the package's __init__ imports torch,
# which this benchmark does not need.
_here = os.path.dirname(os.path.abspath(__file__))
_package = types.ModuleType("commopt")
_package.__path__ = [os.path.join(_here, "..", "..", "python", "commopt")]
sys.modules["commopt"] = _package
from commopt import runtime  # noqa: E402


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    big, small, nsmall, reps = (int(a) for a in sys.argv[1:])
    import ctypes
    runtime.init()
    buffers = [(ctypes.c_float * big)()] + \
        [(ctypes.c_float * small)() for _ in range(nsmall)]
    pointers = [ctypes.addressof(b) for b in buffers]
    counts = [big] + [small] * nsmall
    f32, f16 = runtime.DTYPES["f32"], runtime.DTYPES["f16"]
    avg = runtime.REDUCES["avg"]

    def mixed():
        runtime.check(runtime.mixed_allreduce(
            pointers, counts, [1] + [0] * nsmall, f32, avg, f16, 0.25),
            "commrt_mixed_allreduce")

    def apart():
        runtime.check(runtime.fused_allreduce(
            pointers[:1], counts[:1], f32, avg, f16, 0.25), "f16 bucket")
        runtime.check(runtime.fused_allreduce(
            pointers[1:], counts[1:], f32, avg, runtime.WIRE_NONE, 1.0),
            "f32 bucket")

    times = {"mixed": [], "apart": []}
    for name, run in [("mixed", mixed), ("apart", apart)] * 2:
        run()  # untimed: buffers and connections
        for _ in range(reps):
            runtime.barrier()
            start = runtime.time_us()
            run()
            times[name].append(runtime.time_us() - start)
    if runtime.rank() == 0:
        m = statistics.median(times["mixed"])
        a = statistics.median(times["apart"])
        print(f"RESULT ranks={runtime.size()} big={big} small={small}x"
              f"{nsmall} mixed_us={m:.1f} apart_us={a:.1f} "
              f"apart/mixed={a / m:.3f} calls={len(times['mixed'])}")


if __name__ == "__main__":
    main()
