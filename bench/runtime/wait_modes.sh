#!/usr/bin/env bash
#===- wait_modes.sh - How commrt's ranks wait: time and CPU, both ways ---===#
#
# Runs commrt-bench on ResNet-50's and VGG-16's gradients with 4 ranks, on
# plain shared memory and on the emulated 4 x 1 Gbit/s cluster, once with
# the runtime's default waits (COMMRT_WAIT=auto: over the network, tests,
# then tests between sleeps; over shared memory, polling) and once with
# MPI_Waitall's polling everywhere (COMMRT_WAIT=poll), in alternating
# rounds, and writes the section "Waiting without polling" of BENCHMARKS.md:
# each plan's median time and CPU seconds per run, and the ratios of auto to
# poll measured in the same round.
#
# Usage: bench/runtime/wait_modes.sh   (root, for the emulated cluster)
# Environment: BUILD (default build), OUT (default $BUILD/waits), ROUNDS
# (default 2), REPETITIONS (default 5), SETTINGS (default "shm 1gbit"),
# MODELS (default "resnet50 vgg16").
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/waits}
ROUNDS=${ROUNDS:-2}
REPETITIONS=${REPETITIONS:-5}
SETTINGS=${SETTINGS:-shm 1gbit}
MODELS=${MODELS:-resnet50 vgg16}
BENCH=$BUILD/bin/commrt-bench

[[ -x $BENCH ]] || { echo "wait_modes.sh: build $BENCH first" >&2; exit 2; }
mkdir -p "$OUT"
: >"$OUT/results.txt"
# shellcheck disable=SC2086
"$PYTHON" bench/runtime/model_sizes.py "$OUT" $MODELS

ROOTFLAG=()
[[ $(id -u) == 0 ]] && ROOTFLAG=(--allow-run-as-root)

for round in $(seq "$ROUNDS"); do
  for setting in $SETTINGS; do
    for model in $MODELS; do
      for wait in auto poll; do
        echo "== round $round, $setting, $model, COMMRT_WAIT=$wait" >&2
        command=("$BENCH" --sizes="$OUT/$model.sizes" --label="$model"
          --repetitions="$REPETITIONS"
          --plans=per-tensor,fused-f32,fused-f16,sparse-allgather,sparse-chunk)
        if [[ $setting == shm ]]; then
          COMMRT_WAIT=$wait mpirun "${ROOTFLAG[@]}" --oversubscribe \
            --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 -np 4 \
            "${command[@]}"
        else
          COMMRT_WAIT=$wait bench/cluster/emulate.sh run 4 "$setting" -- \
            "${command[@]}"
        fi 2>&1 | grep '^RESULT' |
          sed "s/^RESULT /RESULT round=$round setting=$setting wait=$wait /" |
          tee -a "$OUT/results.txt"
      done
    done
  done
done

"$PYTHON" bench/runtime/wait_modes_report.py "$OUT/results.txt" BENCHMARKS.md
