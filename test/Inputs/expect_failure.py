"""Runs a command that must fail without hanging:

    python3 expect_failure.py LIMIT_S COMMAND ARGS...

prints the command's output (stdout and stderr together) and exits 0 when
the command exited with a non-zero status, and 1 when it succeeded or was
still running after LIMIT_S seconds (a hang; then it is stopped, the whole
process group, and the output so far is printed with "TIMED OUT"). LIMIT_S
is a guard against hanging the test suite, far above the seconds the
command needs; `not timeout ...` would count a hang as the failure
expected.
"""

import os
import signal
import subprocess
import sys


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    limit = float(argv[0])
    process = subprocess.Popen(argv[1:], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                output, _ = process.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                output = b""
        sys.stdout.write(output.decode(errors="replace"))
        print(f"expect_failure: TIMED OUT: still running after {limit:g} s: "
              f"{' '.join(argv[1:])}")
        return 1
    sys.stdout.write(output.decode(errors="replace"))
    if process.returncode == 0:
        print(f"expect_failure: the command succeeded: {' '.join(argv[1:])}")
        return 1
    print(f"expect_failure: exit status {process.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
