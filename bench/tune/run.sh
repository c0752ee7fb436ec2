#!/usr/bin/env bash
#===- run.sh - Measured autotuning against the model's first choice -----===#
#
# Runs tools/commopt-tune on pipedream's ResNet-50 and AlexNet profiles for
# the calibrated emulated cluster of 4 hosts at 1 Gbit/s (bench/cluster/
# emulate.sh, bench/cluster/emulated-4x1gbit.json), with f16 allowed: the
# model ranks the candidates (bucketings x channels x wires), the MEASURE
# best distinct plans run on the 4 emulated hosts with their compute slept
# (compute-delay), ROUNDS rounds of STEPS timed steps, and the fastest
# measured is kept. report.py replaces the section "Measured autotuning"
# of BENCHMARKS.md: the measured choice against the model's first choice,
# and every measured candidate's prediction against its measurement.
#
# Usage (as root, after `ninja -C build commopt-opt commopt-translate
# commrt`): bench/tune/run.sh
# Environment: BUILD (default build), OUT (default $BUILD/tune), MODELS
# (default "resnet50 alexnet"), MEASURE (default 4), STEPS (default 3),
# ROUNDS (default 2), RATE (default 1gbit), CLUSTER (default
# bench/cluster/emulated-4x1gbit.json), PROFILES (default
# ../shared/profiles/pipedream), PYTHON.
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/tune}
MODELS=${MODELS:-resnet50 alexnet}
MEASURE=${MEASURE:-4}
STEPS=${STEPS:-3}
ROUNDS=${ROUNDS:-2}
RATE=${RATE:-1gbit}
CLUSTER=${CLUSTER:-bench/cluster/emulated-4x1gbit.json}
PROFILES=${PROFILES:-../shared/profiles/pipedream}
mkdir -p "$OUT"

for model in $MODELS; do
  profile=$PROFILES/$model.graph.txt
  [[ -f $profile ]] || { echo "run.sh: $profile not found" >&2; exit 2; }
  echo "== $model on 4 x $RATE" >&2
  "$PYTHON" tools/commopt-tune/commopt-tune.py "$profile" --build="$BUILD" \
    --options="cluster=$CLUSTER wire=f16" --measure="$MEASURE" \
    --steps="$STEPS" --rounds="$ROUNDS" \
    --launcher="bench/cluster/emulate.sh run 4 $RATE --" \
    --report-file="$OUT/$model.json" -o "$OUT/$model.tuned.mlir" |
    tee "$OUT/$model.txt"
done

# shellcheck disable=SC2086
"$PYTHON" bench/tune/report.py BENCHMARKS.md "$RATE" "$CLUSTER" \
  "$OUT"/*.json
