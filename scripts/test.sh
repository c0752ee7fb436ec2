#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs every test: the
# lit suite (dialect, passes, lowering, 4-rank end-to-end runs), the
# GoogleTest suites (runtime under mpirun with 1, 2 and 4 ranks, cost model),
# the embedding check (examples/embed built against an installed commopt
# must plan a training step), the first two again under
# AddressSanitizer and UndefinedBehaviorSanitizer, and the fuzz targets for a
# minute each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

# Each suite counts once in the closing line; their own summaries say more.
passed=0 failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }

echo "== lit: check-commopt"
record cmake --build "$build" --target check-commopt
echo "== GoogleTest and MPI tests: ctest"
record ctest --test-dir "$build" --output-on-failure

# Installs commopt into $1, builds examples/embed against that install in $2
# and checks that it plans a training step. Each step is checked by hand:
# set -e does not apply inside a function called left of `||`.
check_embedding() {
  local prefix=$1 example=$2
  cmake --install "$build" --prefix "$prefix" >/dev/null || return 1
  cmake -G Ninja -S "$root/examples/embed" -B "$example" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
    -DCommOpt_DIR="$prefix/lib/cmake/commopt" >/dev/null || return 1
  cmake --build "$example" || return 1
  "$example/plan-step" --options="cluster=nvlink-8 fusion=cost" \
    >"$example/planned.mlir" || return 1
  if ! grep -q "comm.start" "$example/planned.mlir"; then
    cat "$example/planned.mlir"
    echo "examples/embed: no comm.start in the planned module" >&2
    return 1
  fi
  # The installed autotuner finds the installed tools and runtime: it gets
  # as far as comm-optimize's verdict on a bad wire type.
  # (Its exit status is 1: the output says how far it got.)
  local tuned
  tuned=$("$prefix/bin/commopt-tune" "$root/test/Tools/Inputs/tune-profile.json" \
    --options="cluster=nvlink-8 wire=fp16" 2>&1 || true)
  if [[ $tuned != *"comm-optimize rejects them"* ]]; then
    echo "the installed commopt-tune did not run commopt-opt: $tuned" >&2
    return 1
  fi
  # The installed training bridge finds the installed runtime.
  local site
  site=$(find "$prefix" -type d -path "*python3/dist-packages" | head -n 1)
  [[ -n $site ]] || { echo "no installed python package" >&2; return 1; }
  PYTHONPATH=$site /usr/bin/python3 -c "
import commopt, commopt.runtime as rt
commopt.init()
assert commopt.size() == 1, commopt.size()
assert rt.library()._name.startswith('$prefix'), rt.library()._name
print('python/commopt from the install: runtime', rt.library()._name)
" || return 1
}

echo "== embedding: examples/embed and python/commopt from an installed commopt"
prefix=$(mktemp -d)
example=$(mktemp -d)
trap 'rm -rf "$prefix" "$example"' EXIT
record check_embedding "$prefix" "$example"

# The same suites built with AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/sanitize.sh), so that memory errors and undefined behaviour fail
# CI, not only crashes.
echo "== sanitizers: address;undefined"
record bash "$root/scripts/sanitize.sh" "address;undefined"

# The readers and the planner under libFuzzer with the sanitizers, a minute
# per target (scripts/fuzz.sh, docs/Robustness.md).
echo "== fuzzing: 60 s per target"
record bash "$root/scripts/fuzz.sh" 60

echo "suites: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
