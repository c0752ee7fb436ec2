#!/usr/bin/env bash
#===- run.sh - Profile, plan and train FashionNet on 4 ranks --------------===#
#
# The whole loop in one command:
#  1. commopt-export.py times FashionNet's layers under the load of 4 ranks
#     (mpirun -np 4; rank 0 writes the gradient profile);
#  2. comm-optimize plans its gradient communication for a cluster and
#     commopt-translate --export-plan writes the plan, with its estimate;
#  3. mpirun -np 4 train.py trains it on Fashion-MNIST with that plan.
#
# Usage: examples/fashion_mnist/run.sh [OPTIONS] [-- TRAIN.PY ARGUMENTS]
#   --cluster C   cluster preset or description (default: the emulated
#                 4 x 1 Gbit/s cluster measured in bench/cluster/)
#   --plan-options "O"  more comm-optimize options, e.g. "wire=f16" or
#                 "sparse=true density=0.001"
#   --epochs N    (default 3)
# Environment: BUILD (default build), OUT (default $BUILD/fashion-mnist),
# PYTHON (default /usr/bin/python3), RANKS (default 4).
#
#===----------------------------------------------------------------------===#

set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/fashion-mnist}
PYTHON=${PYTHON:-/usr/bin/python3}
RANKS=${RANKS:-4}
cluster=bench/cluster/emulated-4x1gbit.json
plan_options=""
epochs=3
while (($#)); do
  case $1 in
  --cluster) cluster=$2; shift 2 ;;
  --plan-options) plan_options=$2; shift 2 ;;
  --epochs) epochs=$2; shift 2 ;;
  --) shift; break ;;
  *) sed -n '/^# Usage:/,/^# PYTHON/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done

for tool in commopt-opt commopt-translate; do
  [[ -x $BUILD/bin/$tool ]] ||
    { echo "run.sh: no $BUILD/bin/$tool; build first (scripts/build.sh)" >&2; exit 2; }
done
mkdir -p "$OUT"
export COMMOPT_COMMRT_LIB=$ROOT/$BUILD/lib/libcommrt.so
MPIRUN=(mpirun -np "$RANKS")
if [[ $(id -u) == 0 ]]; then MPIRUN+=(--allow-run-as-root); fi
MPIRUN+=(--oversubscribe --mca mpi_yield_when_idle 1)

echo "== 1. profile: $OUT/profile.json"
PYTHONPATH=examples/fashion_mnist "${MPIRUN[@]}" "$PYTHON" \
  tools/commopt-export/commopt-export.py fashion_mnist:make_model \
  --input-shape 1,28,28 --batch-size 16 --threads 1 --warmup 5 --steps 30 \
  --name fashion-mnist -o "$OUT/profile.json"

echo "== 2. plan for $cluster: $OUT/plan.json"
"$BUILD/bin/commopt-translate" --import-grad-profile "$OUT/profile.json" |
  "$BUILD/bin/commopt-opt" \
    --comm-optimize="cluster=$cluster estimate=step $plan_options" |
  "$BUILD/bin/commopt-translate" --export-plan -o "$OUT/plan.json"

echo "== 3. train on $RANKS ranks with the plan"
"${MPIRUN[@]}" "$PYTHON" examples/fashion_mnist/train.py \
  --plan "$OUT/plan.json" --epochs "$epochs" "$@"
