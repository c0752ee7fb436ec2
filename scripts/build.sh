#!/usr/bin/env bash
# Configures and builds commopt in ./build (or $COMMOPT_BUILD_DIR) with
# clang 22, lld and Ninja. Extra arguments go to CMake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}
export PATH=/usr/lib/llvm-22/bin:$PATH
# CMake looks for nvcc on PATH or in CUDACXX; the toolkit lives here.
if [[ -z ${CUDACXX:-} && -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi

if [[ ! -f $build/build.ninja ]]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    "$@"
fi
cmake --build "$build" -j "${COMMOPT_JOBS:-$(nproc)}"
