#!/usr/bin/env bash
# Builds commopt with sanitizers into build-sanitize-<sanitizers>/ (or
# $COMMOPT_BUILD_DIR) and runs the lit suite and every ctest suite, the multi-rank ones
# included, under them:
#
#   bash scripts/sanitize.sh                 # address;undefined
#   bash scripts/sanitize.sh thread          # ThreadSanitizer, ctest only
#
# Every report fails the run (halt_on_error). Leak reports come from the
# GoogleTest suites, whose processes are built with the sanitizers; the lit
# suite also runs hosts built without them (mlir-runner and python3 load
# libcommrt.so with the sanitizer runtime preloaded), whose own leaks are
# not ours, so leak detection is off there. What OpenMPI leaks itself is
# suppressed by scripts/sanitizer-suppressions/lsan.txt, one reviewed entry
# per library.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sanitizers=${1:-"address;undefined"}
# One build folder per sanitizer set: a folder is configured once.
build=${COMMOPT_BUILD_DIR:-$root/build-sanitize-${sanitizers//;/-}}

"$root/scripts/install-deps.sh"
# The sanitizer runtimes.
if ! dpkg -s libclang-rt-22-dev >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends libclang-rt-22-dev
fi

# Release with line tables (LLVM's sanitizer flags add them) keeps the
# build as fast as the normal one and the reports readable.
COMMOPT_BUILD_DIR=$build "$root/scripts/build.sh" \
  -DCOMMOPT_SANITIZER="$sanitizers"

runtime_dir=$(clang-22 -print-runtime-dir)
suppressions=$root/scripts/sanitizer-suppressions
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$suppressions/lsan.txt:print_suppressions=0"
case $sanitizers in
  *thread*)
    preload=$runtime_dir/libclang_rt.tsan-x86_64.so
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$suppressions/tsan.txt"
    ;;
  *address*)
    preload=$runtime_dir/libclang_rt.asan-x86_64.so
    # The slow unwinder follows allocations through OpenMPI's frames, which
    # the suppressions name.
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:suppressions=$suppressions/asan.txt"
    ;;
  *) preload= ;;
esac
# OpenMPI keeps its components loaded, so that the stacks of what they
# allocate stay readable.
export OMPI_MCA_mca_base_component_disable_dlclose=1
# Binaries built with -shared-libsan find the runtime here.
export LD_LIBRARY_PATH=$runtime_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

passed=0 failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi; }

echo "== ctest under $sanitizers"
record ctest --test-dir "$build" --output-on-failure

# ThreadSanitizer is for the runtime, whose channels run a thread each: the
# GoogleTest suites above cover it (the stress test of the asynchronous
# path included, at 2 and 4 ranks). The lit suite's MLIR tools share
# MLIR's thread pool and uniquer, built without ThreadSanitizer, whose
# locking it cannot see; they run under address;undefined.
if [[ $sanitizers == *thread* ]]; then
  echo "sanitizer suites ($sanitizers): $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
  exit
fi

echo "== lit under $sanitizers"
lit_env=()
if [[ -n $preload ]]; then
  # Uninstrumented hosts load the runtime first; their leaks are not ours.
  lit_env=(env LD_PRELOAD="$preload"
           ASAN_OPTIONS="halt_on_error=1:detect_leaks=0:suppressions=$suppressions/asan.txt"
           TSAN_OPTIONS="halt_on_error=1:suppressions=$suppressions/tsan.txt")
fi
record "${lit_env[@]}" /usr/lib/llvm-22/bin/lit -sv "$build/test"

echo "sanitizer suites ($sanitizers): $passed passed, $failed failed"
[[ $failed -eq 0 ]]
