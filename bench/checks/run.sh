#!/usr/bin/env bash
#===- run.sh - What the runtime's consistency checks cost a training step -===#
#
# Runs commrt-bench's per-tensor plan (one commrt_allreduce per gradient:
# 161 collectives a step for ResNet-50, the most checks a step can need) and
# its fused-f32 plan (one collective) with 4 ranks on shared memory, once for
# each COMMRT_CHECK setting, back to back: 0 (no checks, the baseline), first
# (the default: the first call of each distinct collective, so only the
# untimed warm-up step pays) and 1 (every call). Writes the section
# "Consistency checks" of BENCHMARKS.md (report.py).
#
# Usage (from anywhere; needs `ninja -C build commrt-bench`):
#   bench/checks/run.sh
# Environment: BUILD (default build), OUT (default $BUILD/checksbench),
# REPETITIONS (default 9), MODELS (default "resnet50 vgg16"),
# PYTHON (default /usr/bin/python3).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/checksbench}
REPETITIONS=${REPETITIONS:-9}
MODELS=${MODELS:-resnet50 vgg16}
BENCH=$BUILD/bin/commrt-bench

[[ -x $BENCH ]] || { echo "run.sh: build $BENCH first" >&2; exit 2; }
mkdir -p "$OUT"
# shellcheck disable=SC2086
"$PYTHON" bench/runtime/model_sizes.py "$OUT" $MODELS

ROOTFLAG=()
[[ $(id -u) == 0 ]] && ROOTFLAG=(--allow-run-as-root)

: >"$OUT/results.txt"
for model in $MODELS; do
  for checks in 0 first 1; do
    echo "== $model, COMMRT_CHECK=$checks" >&2
    mpirun "${ROOTFLAG[@]}" --oversubscribe --mca btl self,vader,tcp \
      --mca mpi_yield_when_idle 1 -np 4 -x COMMRT_CHECK="$checks" \
      "$BENCH" --sizes="$OUT/$model.sizes" --label="$model" \
      --plans=per-tensor,fused-f32 --repetitions="$REPETITIONS" 2>&1 |
      tee -a "$OUT/log.txt" | grep '^RESULT' |
      sed "s/^RESULT /RESULT checks=$checks /" | tee -a "$OUT/results.txt"
  done
done

"$PYTHON" bench/checks/report.py "$OUT/results.txt" BENCHMARKS.md
