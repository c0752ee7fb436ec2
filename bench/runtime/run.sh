#!/usr/bin/env bash
#===- run.sh - commopt's runtime benchmark, end to end -------------------===#
#
# Writes the gradient sizes of ResNet-50 and VGG-16 (model_sizes.py), runs
# commrt-bench and ddp_gloo.py on both with 4 ranks on plain shared memory
# and on the emulated cluster (bench/cluster/emulate.sh) at 10gbit and 1gbit,
# collects their RESULT lines and replaces the section "Runtime on the
# emulated cluster" of BENCHMARKS.md with the table and ratios (report.py).
#
# Usage (from anywhere; needs root for the emulated cluster and a build with
# `ninja -C build commrt-bench`):
#   bench/runtime/run.sh
# Environment: BUILD (default build), OUT (default $BUILD/rtbench),
# REPETITIONS (default 3), SETTINGS (default "shm 10gbit 1gbit"),
# MODELS (default "resnet50 vgg16"), PYTHON (default /usr/bin/python3).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/rtbench}
REPETITIONS=${REPETITIONS:-3}
SETTINGS=${SETTINGS:-shm 10gbit 1gbit}
MODELS=${MODELS:-resnet50 vgg16}
BENCH=$BUILD/bin/commrt-bench
SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}

[[ -x $BENCH ]] || { echo "run.sh: build $BENCH first" >&2; exit 2; }
mkdir -p "$OUT"

# shellcheck disable=SC2086
"$PYTHON" bench/runtime/model_sizes.py "$OUT" $MODELS

ROOTFLAG=()
[[ $(id -u) == 0 ]] && ROOTFLAG=(--allow-run-as-root)

# Runs "PROGRAM ARGS..." with 4 ranks in setting $1, appending its RESULT
# lines to $OUT/results-<setting>.txt.
launch() {
  local setting=$1
  shift
  if [[ $setting == shm ]]; then
    mpirun "${ROOTFLAG[@]}" --oversubscribe --mca btl self,vader,tcp \
      --mca mpi_yield_when_idle 1 -np 4 "$@"
  else
    bench/cluster/emulate.sh run 4 "$setting" -- "$@"
  fi 2>&1 | tee -a "$OUT/log.txt" | grep '^RESULT' | sed "s/^RESULT /RESULT setting=$setting /" |
    tee -a "$OUT/results-$setting.txt"
}

# Every setting run replaces its own results; the report covers all settings
# measured so far, so that SETTINGS=1gbit re-runs one of them.
for setting in $SETTINGS; do
  : >"$OUT/results-$setting.txt"
  if [[ $setting == shm ]]; then master=127.0.0.1; else master=$SUBNET.1; fi
  for model in $MODELS; do
    echo "== $model, $setting" >&2
    launch "$setting" "$BENCH" --sizes="$OUT/$model.sizes" \
      --label="$model" --repetitions="$REPETITIONS"
    launch "$setting" "$PYTHON" bench/runtime/ddp_gloo.py \
      --sizes="$OUT/$model.sizes" --label="$model" --master-addr="$master" \
      --repetitions="$REPETITIONS"
  done
done

cat "$OUT"/results-*.txt >"$OUT/results.txt"
"$PYTHON" bench/runtime/report.py "$OUT/results.txt" BENCHMARKS.md
