#!/usr/bin/env bash
#===- two_level.sh - Flat ring, hierarchical and gloo on emulated nodes ---===#
#
# Times the fused f32 allreduce of ResNet-50's and VGG-16's gradients
# (model_sizes.py) on two emulated clusters at RATE (default 1gbit) between
# hosts (bench/cluster/emulate.sh):
#
#   4x1  four hosts of one rank: the flat ring (fused-f32) against DDP/gloo
#        and the link's limit;
#   2x2  two hosts of two ranks sharing memory: the flat ring, the
#        hierarchical allreduce and MPI_Allreduce, each asked per call
#        (fused-f32-ring, fused-f32-hierarchical, fused-f32-tree), and
#        DDP/gloo;
#
# then, with CALIBRATE=1 (default), calibrates the 2x2 cluster's two levels
# (commopt-calibrate --ranks-per-node=2), lets commopt price both plans on
# that description and choose the algorithm of each collective, and replaces
# the section "Two levels on emulated nodes" of BENCHMARKS.md with the table
# (two_level_report.py).
#
# Usage (as root, after `ninja -C build commrt-bench commopt-calibrate
# commopt-opt`): bench/runtime/two_level.sh
# Environment: BUILD (default build), OUT (default $BUILD/rtbench-two-level),
# REPETITIONS (default 3), RATE (default 1gbit), MODELS (default
# "resnet50 vgg16"), SHAPES (default "4x1 2x2"; a shape re-run replaces its
# own results only), CALIBRATE (default 1), PYTHON, COMMOPT_CLUSTER_MTU.
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/rtbench-two-level}
REPETITIONS=${REPETITIONS:-3}
RATE=${RATE:-1gbit}
MODELS=${MODELS:-resnet50 vgg16}
SHAPES=${SHAPES:-4x1 2x2}
CALIBRATE=${CALIBRATE:-1}
BENCH=$BUILD/bin/commrt-bench
SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}

[[ -x $BENCH ]] || { echo "two_level.sh: build $BENCH first" >&2; exit 2; }
mkdir -p "$OUT"
# shellcheck disable=SC2086
"$PYTHON" bench/runtime/model_sizes.py "$OUT" $MODELS

# Runs "PROGRAM ARGS..." on HOSTS hosts of PER ranks, appending its RESULT
# lines, tagged with the shape, to $OUT/results-<shape>.txt.
launch() {
  local hosts=$1 per=$2
  shift 2
  bench/cluster/emulate.sh run "$hosts" "$RATE" "$per" -- "$@" 2>&1 |
    tee -a "$OUT/log.txt" | grep '^RESULT' |
    sed "s/^RESULT /RESULT setting=${hosts}x$per rate=$RATE /" |
    tee -a "$OUT/results-${hosts}x$per.txt"
}

for shape in $SHAPES; do
  [[ $shape =~ ^[0-9]+x[0-9]+$ ]] || { echo "two_level.sh: bad shape $shape" >&2; exit 2; }
  hosts=${shape%x*} per=${shape#*x}
  : >"$OUT/results-$shape.txt"
  plans=fused-f32
  [[ $shape == 2x2 ]] && plans=fused-f32-ring,fused-f32-hierarchical,fused-f32-tree
  for model in $MODELS; do
    echo "== $model, $shape at $RATE" >&2
    launch "$hosts" "$per" "$BENCH" --sizes="$OUT/$model.sizes" \
      --label="$model" --plans="$plans" --repetitions="$REPETITIONS"
    launch "$hosts" "$per" "$PYTHON" bench/runtime/ddp_gloo.py \
      --sizes="$OUT/$model.sizes" --label="$model" --master-addr="$SUBNET.1" \
      --repetitions="$REPETITIONS"
  done
done

if [[ $CALIBRATE == 1 ]]; then
  echo "== calibrating 2x2 at $RATE" >&2
  bench/cluster/emulate.sh run 2 "$RATE" 2 -- "$BUILD/bin/commopt-calibrate" \
    --output="$OUT/emulated-2x2.json" --name="emulated-2x2-$RATE" \
    --ranks-per-node=2 --repetitions=5 2>&1 | tee -a "$OUT/log.txt" |
    tail -n 40 >"$OUT/calibration.txt"
fi

cat "$OUT"/results-*.txt >"$OUT/results.txt"
"$PYTHON" bench/runtime/two_level_report.py "$OUT" BENCHMARKS.md
