#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs every test: the
# lit suite (dialect, passes, lowering, 4-rank end-to-end runs) and the
# GoogleTest suites (runtime under mpirun with 1, 2 and 4 ranks, cost model).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

status=0
echo "== lit: check-commopt"
cmake --build "$build" --target check-commopt || status=1
echo "== GoogleTest and MPI tests: ctest"
(cd "$build" && ctest --output-on-failure) || status=1
exit $status
