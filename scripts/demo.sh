#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine, builds commopt and runs
# its main job: a module whose gradients are reduced by comm ops is lowered
# to the LLVM dialect and run on 4 MPI ranks against the commrt runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

example=$root/examples/end-to-end/allreduce.mlir
lowered=$(mktemp --suffix=.mlir)
trap 'rm -f "$lowered"' EXIT

echo "== commopt-opt --commopt-lower-to-llvm $example"
"$build/bin/commopt-opt" "$example" --commopt-lower-to-llvm -o "$lowered"
echo "== mpirun -np 4 mlir-runner (each line tagged with [job,rank])"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
OMPI_MCA_rmaps_base_oversubscribe=1 \
OMPI_MCA_btl_vader_single_copy_mechanism=none \
  mpirun -np 4 --tag-output /usr/lib/llvm-22/bin/mlir-runner "$lowered" \
    -e main -entry-point-result=void \
    -shared-libs="$build/lib/libcommrt.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_runner_utils.so" |
  sort -s -t, -k2,2n
