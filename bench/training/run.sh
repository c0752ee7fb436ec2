#!/usr/bin/env bash
#===- run.sh - Training fidelity and real-step speed of commopt plans -----===#
#
# Trains examples/fashion_mnist on 4 ranks with the gradients synchronised by
# PyTorch DDP over gloo (plain, fp16_compress_hook, powerSGD_hook) and by
# commopt plans (dense f32, f16 wire, sparse threshold/top-k and chunk at
# densities 0.01 and 0.001), all with the same seeds and data order:
#
#  1. profile: for each batch size per rank, commopt-export.py times the
#     model under 4 ranks' load (mpirun -np 4, rank 0 writes the profile);
#  2. plans: comm-optimize plans each kind from it for $CLUSTER and
#     commopt-translate --export-plan writes it, with its estimate;
#  3. fidelity: every run trains $EPOCHS epochs of $TRAIN_SAMPLES samples on
#     shared memory, batch 16 per rank, and reports test accuracy per epoch;
#  4. speed: every run takes $SPEED_STEPS steps on the emulated
#     4 x 1 Gbit/s cluster (bench/cluster/emulate.sh, root) at each batch
#     size of $SPEED_BATCHES, and so does a compute-only run (no
#     communication), the step's lower bound;
#  5. report.py writes the section "Training on Fashion-MNIST" of
#     BENCHMARKS.md: accuracy, step times as ratios to DDP/gloo measured in
#     the same run, and each plan's predicted vs measured step.
#
# Usage: bench/training/run.sh [fidelity] [speed]   (default: both)
# Environment: BUILD (default build), OUT (default $BUILD/training), EPOCHS
# (3), TRAIN_SAMPLES (20000), SPEED_STEPS (40), SPEED_BATCHES ("16 4"),
# CLUSTER (default
# bench/cluster/emulated-4x1gbit.json), RATE (1gbit), PYTHON, ONLY (run
# only the runs with these labels, e.g. "ddp commopt-f16"; the report keeps
# the others' last results).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/training}
EPOCHS=${EPOCHS:-3}
TRAIN_SAMPLES=${TRAIN_SAMPLES:-20000}
SPEED_STEPS=${SPEED_STEPS:-40}
SPEED_BATCHES=${SPEED_BATCHES:-16 4}
CLUSTER=${CLUSTER:-bench/cluster/emulated-4x1gbit.json}
RATE=${RATE:-1gbit}
SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}
PHASES=${*:-fidelity speed}

for tool in commopt-opt commopt-translate; do
  [[ -x $BUILD/bin/$tool ]] || { echo "run.sh: build $BUILD first" >&2; exit 2; }
done
mkdir -p "$OUT/fidelity"
# Absolute: the speed runs start in other directories.
OUT=$(cd "$OUT" && pwd)
export COMMOPT_COMMRT_LIB=$ROOT/$BUILD/lib/libcommrt.so
# Ranks waiting in MPI leave the 2 cores to those computing.
export OMPI_MCA_mpi_yield_when_idle=1
TRAIN=examples/fashion_mnist/train.py

# The commopt plans: name and comm-optimize options.
PLANS=(
  "f32|fusion=cost"
  "f16|fusion=cost wire=f16"
  "threshold-0.01|sparse=true density=0.01 sparse-select=threshold sparse-exchange=allgather"
  "threshold-0.001|sparse=true density=0.001 sparse-select=threshold sparse-exchange=allgather"
  "topk-0.001|sparse=true density=0.001 sparse-select=topk sparse-exchange=allgather"
  "chunk-0.01|sparse=true density=0.01 sparse-exchange=chunk sparse-chunk-elements=4096"
  "chunk-0.001|sparse=true density=0.001 sparse-exchange=chunk sparse-chunk-elements=2048"
)

# Profiles the model at batch $1 per rank and plans every kind for it into
# $OUT/plans/b$1/.
make_plans() {
  local batch=$1 dir=$OUT/plans/b$1
  mkdir -p "$dir"
  echo "== profile and plans, batch $batch per rank, for $CLUSTER" >&2
  PYTHONPATH=examples/fashion_mnist mpirun -np 4 "$PYTHON" \
    tools/commopt-export/commopt-export.py fashion_mnist:make_model \
    --input-shape 1,28,28 --batch-size "$batch" --threads 1 --warmup 5 \
    --steps 30 --name fashion-mnist -o "$dir/profile.json"
  for entry in "${PLANS[@]}"; do
    "$BUILD/bin/commopt-translate" --import-grad-profile "$dir/profile.json" |
      "$BUILD/bin/commopt-opt" \
        --comm-optimize="cluster=$CLUSTER estimate=step report=none ${entry#*|}" |
      "$BUILD/bin/commopt-translate" --export-plan -o "$dir/${entry%%|*}.json"
  done
}

# Every run: label and train.py arguments; @PLANS@ stands for the folder of
# the plans made for the run's batch size.
RUNS=(
  "ddp|--comm ddp"
  "ddp-fp16|--comm ddp-fp16"
  "ddp-powersgd-2|--comm ddp-powersgd --powersgd-rank 2"
)
for entry in "${PLANS[@]}"; do
  name=${entry%%|*}
  RUNS+=("commopt-$name|--plan @PLANS@/$name.json")
done
# Deep Gradient Compression's momentum correction on the sparsest plans.
for name in threshold-0.001 topk-0.001 chunk-0.001; do
  RUNS+=("commopt-$name-mc|--plan @PLANS@/$name.json --momentum-correction")
done

# Whether run $1 is selected by ONLY.
selected() {
  [[ -z ${ONLY:-} ]] && return 0
  [[ " $ONLY " == *" $1 "* ]]
}

for phase in $PHASES; do
  case $phase in
  fidelity)
    BATCH=16
    make_plans $BATCH
    for run in "${RUNS[@]}"; do
      label=${run%%|*}
      selected "$label" || continue
      echo "== fidelity: $label" >&2
      arguments=${run#*|}
      arguments=${arguments//@PLANS@/$OUT/plans/b$BATCH}
      # shellcheck disable=SC2086
      mpirun -np 4 "$PYTHON" "$TRAIN" $arguments --batch-size $BATCH \
        --epochs "$EPOCHS" --train-samples "$TRAIN_SAMPLES" --label "$label" \
        --json "$OUT/fidelity/$label.json"
    done
    ;;
  speed)
    for BATCH in $SPEED_BATCHES; do
      make_plans "$BATCH"
      mkdir -p "$OUT/speed/b$BATCH"
      for run in "${RUNS[@]}" "compute-only|--comm local"; do
        label=${run%%|*}
        selected "$label" || continue
        echo "== speed on 4 x $RATE, batch $BATCH: $label" >&2
        arguments=${run#*|}
        arguments=${arguments//@PLANS@/$OUT/plans/b$BATCH}
        # shellcheck disable=SC2086
        bench/cluster/emulate.sh run 4 "$RATE" -- "$PYTHON" "$ROOT/$TRAIN" \
          $arguments --batch-size "$BATCH" --epochs 1 \
          --max-steps "$SPEED_STEPS" --no-eval --master-addr "$SUBNET.1" \
          --label "$label" --json "$OUT/speed/b$BATCH/$label.json"
      done
    done
    ;;
  *)
    echo "run.sh: unknown phase '$phase' (fidelity, speed)" >&2
    exit 2
    ;;
  esac
done

"$PYTHON" bench/training/report.py "$OUT" BENCHMARKS.md
