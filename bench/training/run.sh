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
#  2. calibration (root, the emulated 4 x $RATE cluster): four plans (dense
#     f32, threshold with momentum correction, top-k, chunk), made for the
#     host as bench/cluster/host-2core-4ranks.json describes it, each train
#     $CALIBRATION_STEPS steps with their measured timeline
#     (COMMOPT_TIMELINE); commopt-timeline fit turns the traces into the
#     device description the plans are made for (the host's local-work
#     rates, the bridge's costs, how fast collectives progress while the
#     ranks compute), the cluster with what a collective costs within the
#     step, and the profile with the compute as measured;
#  3. plans: comm-optimize plans each kind from the calibrated profile for
#     $CLUSTER and the calibrated device, with momentum correction for the
#     -mc runs, and commopt-translate --export-plan writes it with its
#     estimate; the same kinds planned as before calibration (the
#     exporter's profile, the default device) give the "before" estimates;
#  4. fidelity: every run trains $EPOCHS epochs of $TRAIN_SAMPLES samples on
#     shared memory, batch 16 per rank, once per seed of $SEEDS (the
#     model's initialisation and the data order), and reports test
#     accuracy per epoch; for each architecture of $MODELS: FashionNet
#     (cnn) and the patch transformer (transformer, whose plans are made
#     from its own profile, uncalibrated, with exactly the options given:
#     search=false, and every gradient of 64 KiB or more sparse under the
#     sparse plans' scheme, sparse-all=true; its largest are 144 KiB);
#     so do threshold and chunk selection at 0.001 with Deep Gradient
#     Compression's warm-up over the first epoch (-warmup: density 0.25
#     falling to 0.001 over $WARMUP_STEPS steps), chunk selection at
#     0.001 in chunks of 512 elements (-c512) beside chunk-0.001's 2048,
#     and the sparse plans' floor: DDP with the parameters they make
#     sparse frozen at their initial values (ddp-frozen);
#  5. speed: every run takes $SPEED_STEPS steps on the emulated
#     4 x 1 Gbit/s cluster (bench/cluster/emulate.sh, root) at each batch
#     size of $SPEED_BATCHES, with its measured timeline, and so does a
#     compute-only run (no communication), the step's lower bound;
#     commopt-timeline compare sets each commopt run's trace beside its
#     plan's predicted timeline;
#  6. report.py writes the section "Training on Fashion-MNIST" of
#     BENCHMARKS.md: accuracy, step times and CPU time per step as ratios to
#     DDP/gloo measured in the same run, and each plan's predicted vs
#     measured step, before and after calibration.
#
# Usage: bench/training/run.sh [fidelity] [speed]   (default: both; root:
# both phases plan with a model calibrated on the emulated cluster)
# Environment: BUILD (default build), OUT (default $BUILD/training), EPOCHS
# (3), SEEDS ("0 1 2"), MODELS ("cnn transformer", for fidelity), TRAIN_SAMPLES (20000), WARMUP_STEPS (one epoch
# at batch 16: TRAIN_SAMPLES / 64), SPEED_STEPS (40), SPEED_BATCHES
# ("16 4"), CALIBRATION_STEPS (20), CLUSTER (default
# bench/cluster/emulated-4x1gbit.json), HOST_DEVICE (default
# bench/cluster/host-2core-4ranks.json, what calibration starts from), RATE
# (1gbit), PYTHON, ONLY (run only the runs with these labels, e.g. "ddp
# commopt-f16"; the report keeps the others' last results).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/training}
EPOCHS=${EPOCHS:-3}
SEEDS=${SEEDS:-0 1 2}
MODELS=${MODELS:-cnn transformer}
TRAIN_SAMPLES=${TRAIN_SAMPLES:-20000}
WARMUP_STEPS=${WARMUP_STEPS:-$((TRAIN_SAMPLES / 64))}
SPEED_STEPS=${SPEED_STEPS:-40}
SPEED_BATCHES=${SPEED_BATCHES:-16 4}
CALIBRATION_STEPS=${CALIBRATION_STEPS:-20}
CLUSTER=${CLUSTER:-bench/cluster/emulated-4x1gbit.json}
HOST_DEVICE=${HOST_DEVICE:-bench/cluster/host-2core-4ranks.json}
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
# Deep Gradient Compression's momentum correction on the sparsest plans:
# planned with it, so that the bridge runs it and the estimate prices it.
MC_PLANS=()
for entry in "${PLANS[@]}"; do
  case ${entry%%|*} in
  threshold-0.001 | topk-0.001 | chunk-0.001)
    MC_PLANS+=("${entry%%|*}-mc|${entry#*|} momentum-correction=true")
    ;;
  esac
done
# Deep Gradient Compression's warm-up, for accuracy: after it the plans
# are the ones above, so the speed phase leaves them out.
WARMUP_PLANS=()
for entry in "${PLANS[@]}"; do
  case ${entry%%|*} in
  threshold-0.001 | chunk-0.001)
    WARMUP_PLANS+=("${entry%%|*}-warmup|${entry#*|} sparse-warmup-steps=$WARMUP_STEPS sparse-warmup-density=0.25")
    ;;
  esac
done
# Chunk selection at 0.001 in chunks of 512 elements beside
# chunk-0.001's 2048, for accuracy: at one density the chunk size moves
# accuracy by points, and not in one direction on both models
# (BENCHMARKS.md, "Training on Fashion-MNIST", its notes).
FINE_CHUNK_PLANS=(
  "chunk-0.001-c512|sparse=true density=0.001 sparse-exchange=chunk sparse-chunk-elements=512"
)
# What calibration measures: every selection, the dense passes, the
# bridge's momentum correction, collectives beside compute.
CALIBRATION_PLANS=(
  "f32|fusion=cost"
  "threshold-0.01-mc|sparse=true density=0.01 sparse-select=threshold sparse-exchange=allgather momentum-correction=true"
  "topk-0.001|sparse=true density=0.001 sparse-select=topk sparse-exchange=allgather"
  "chunk-0.01|sparse=true density=0.01 sparse-exchange=chunk sparse-chunk-elements=4096"
)

# Plans the kind `entry` ("name|options") from profile $2 for the cluster
# $3 and the device $4 into $1/NAME.json (the plan) and
# $1/NAME.timeline.json (its predicted timeline).
plan_kind() {
  local dir=$1 profile=$2 cluster=$3 device=$4 entry=$5
  local name=${entry%%|*}
  "$BUILD/bin/commopt-translate" --import-grad-profile "$profile" |
    "$BUILD/bin/commopt-opt" -o "$dir/$name.mlir" \
      --comm-optimize="cluster=$cluster device=$device estimate=step report=none ${entry#*|}"
  "$BUILD/bin/commopt-translate" --export-plan "$dir/$name.mlir" \
    -o "$dir/$name.json"
  "$BUILD/bin/commopt-translate" --export-timeline "$dir/$name.mlir" \
    --timeline-device="$device" -o "$dir/$name.timeline.json"
}

# Trains with each plan of "name|options" entries $3... (made in folder $2)
# for $CALIBRATION_STEPS steps at batch $1 on the emulated cluster, each
# writing its measured timeline to $2/NAME.rank<R>.json.
calibration_runs() {
  local batch=$1 dir=$2
  shift 2
  for entry in "$@"; do
    local name=${entry%%|*}
    echo "== calibration on 4 x $RATE, batch $batch: $name" >&2
    COMMOPT_TIMELINE=$dir/$name.json bench/cluster/emulate.sh run 4 "$RATE" -- \
      "$PYTHON" "$ROOT/$TRAIN" --plan "$dir/$name.json" --batch-size "$batch" \
      --epochs 1 --max-steps "$CALIBRATION_STEPS" --no-eval \
      --master-addr "$SUBNET.1" >&2
  done
}

# Profiles the model at batch $1 per rank, calibrates the cost model on the
# emulated cluster and plans every kind for it into $OUT/plans/b$1/ (and
# as before calibration into $OUT/plans/b$1/before/).
make_plans() {
  local batch=$1 dir=$OUT/plans/b$1
  mkdir -p "$dir/before" "$dir/calibration"
  echo "== profile and plans, batch $batch per rank, for $CLUSTER" >&2
  PYTHONPATH=examples/fashion_mnist mpirun -np 4 "$PYTHON" \
    tools/commopt-export/commopt-export.py fashion_mnist:make_model \
    --input-shape 1,28,28 --batch-size "$batch" --threads 1 --warmup 5 \
    --steps 30 --name fashion-mnist -o "$dir/profile.json"
  for entry in "${PLANS[@]}" "${MC_PLANS[@]}"; do
    plan_kind "$dir/before" "$dir/profile.json" "$CLUSTER" v100 "$entry"
  done
  # Calibration: plans for the uncalibrated host, their measured timelines.
  for entry in "${CALIBRATION_PLANS[@]}"; do
    plan_kind "$dir/calibration" "$dir/profile.json" "$CLUSTER" \
      "$HOST_DEVICE" "$entry"
  done
  calibration_runs "$batch" "$dir/calibration" "${CALIBRATION_PLANS[@]}"
  # The rates, the compute, and (from each run's exchanges set beside its
  # plan's prediction) how fast collectives progress beside compute and
  # what one costs within the step.
  local traces=("$dir"/calibration/*.rank*.json) predicted=()
  for entry in "${CALIBRATION_PLANS[@]}"; do
    predicted+=(--predicted "$dir/calibration/${entry%%|*}.timeline.json")
  done
  "$PYTHON" tools/commopt-timeline/commopt-timeline.py fit "${traces[@]}" \
    --base "$HOST_DEVICE" -o "$dir/device.json" "${predicted[@]}" \
    --cluster-base "$CLUSTER" --cluster-output "$dir/cluster.json" \
    --profile "$dir/profile.json" --profile-output "$dir/profile-fitted.json"
  for entry in "${PLANS[@]}" "${MC_PLANS[@]}" "${WARMUP_PLANS[@]}" \
    "${FINE_CHUNK_PLANS[@]}"; do
    plan_kind "$dir" "$dir/profile-fitted.json" "$dir/cluster.json" \
      "$dir/device.json" "$entry"
  done
}

# The transformer's plans for batch $1 per rank, for accuracy: from its own
# profile, for $CLUSTER and $HOST_DEVICE as they are, into
# $OUT/plans/transformer-b$1/.
make_transformer_plans() {
  local batch=$1 dir=$OUT/plans/transformer-b$1
  mkdir -p "$dir"
  echo "== transformer: profile and plans, batch $batch per rank" >&2
  PYTHONPATH=examples/fashion_mnist mpirun -np 4 "$PYTHON" \
    tools/commopt-export/commopt-export.py fashion_mnist:make_transformer \
    --input-shape 1,28,28 --batch-size "$batch" --threads 1 --warmup 2 \
    --steps 10 --name patch-transformer -o "$dir/profile.json"
  for entry in "${PLANS[@]}" "${MC_PLANS[@]}" "${WARMUP_PLANS[@]}" \
    "${FINE_CHUNK_PLANS[@]}"; do
    # Exactly the options given (the search would keep this small model
    # lossless), its gradients from 64 KiB sparse under each scheme.
    entry="$entry search=false"
    [[ $entry == *sparse=true* ]] &&
      entry="$entry sparse-min-bytes=65536 sparse-all=true"
    plan_kind "$dir" "$dir/profile.json" "$CLUSTER" "$HOST_DEVICE" "$entry"
  done
}

# Every run: label and train.py arguments; @PLANS@ stands for the folder of
# the plans made for the run's batch size.
RUNS=(
  "ddp|--comm ddp"
  "ddp-fp16|--comm ddp-fp16"
  "ddp-powersgd-2|--comm ddp-powersgd --powersgd-rank 2"
)
for entry in "${PLANS[@]}" "${MC_PLANS[@]}"; do
  name=${entry%%|*}
  RUNS+=("commopt-$name|--plan @PLANS@/$name.json")
done
FIDELITY_RUNS=("${RUNS[@]}")
for entry in "${WARMUP_PLANS[@]}" "${FINE_CHUNK_PLANS[@]}"; do
  name=${entry%%|*}
  FIDELITY_RUNS+=("commopt-$name|--plan @PLANS@/$name.json")
done
# The sparse plans' floor: DDP with the parameters the sparse plans make
# sparse (@SPARSE_BYTES@ bytes or more) kept at their initial values. A
# sparse plan's accuracy says something about its sparse layers only
# where it is above this one's.
FIDELITY_RUNS+=("ddp-frozen|--comm ddp --freeze-min-bytes @SPARSE_BYTES@")

# Whether run $1 is selected by ONLY.
selected() {
  [[ -z ${ONLY:-} ]] && return 0
  [[ " $ONLY " == *" $1 "* ]]
}

for phase in $PHASES; do
  case $phase in
  fidelity)
    BATCH=16
    for model in $MODELS; do
      case $model in
      cnn)
        make_plans $BATCH
        plans=$OUT/plans/b$BATCH results=$OUT/fidelity
        # comm-optimize's sparse-min-bytes default: fc1.weight alone.
        sparse_bytes=1048576
        ;;
      transformer)
        make_transformer_plans $BATCH
        plans=$OUT/plans/transformer-b$BATCH results=$OUT/fidelity/transformer
        sparse_bytes=65536
        ;;
      *)
        echo "run.sh: unknown model '$model' (cnn, transformer)" >&2
        exit 2
        ;;
      esac
      mkdir -p "$results"
      for run in "${FIDELITY_RUNS[@]}"; do
        label=${run%%|*}
        selected "$label" || continue
        echo "== fidelity, $model: $label" >&2
        arguments=${run#*|}
        arguments=${arguments//@PLANS@/$plans}
        arguments=${arguments//@SPARSE_BYTES@/$sparse_bytes}
        # shellcheck disable=SC2086
        for seed in $SEEDS; do
          mpirun -np 4 "$PYTHON" "$TRAIN" $arguments --model "$model" \
            --batch-size $BATCH --epochs "$EPOCHS" \
            --train-samples "$TRAIN_SAMPLES" --seed "$seed" --label "$label" \
            --json "$results/$label.seed$seed.json"
        done
      done
    done
    ;;
  speed)
    for BATCH in $SPEED_BATCHES; do
      make_plans "$BATCH"
      speed=$OUT/speed/b$BATCH
      mkdir -p "$speed/traces"
      for run in "${RUNS[@]}" "compute-only|--comm local"; do
        label=${run%%|*}
        selected "$label" || continue
        echo "== speed on 4 x $RATE, batch $BATCH: $label" >&2
        arguments=${run#*|}
        arguments=${arguments//@PLANS@/$OUT/plans/b$BATCH}
        # shellcheck disable=SC2086
        COMMOPT_TIMELINE=$speed/traces/$label.json \
          bench/cluster/emulate.sh run 4 "$RATE" -- "$PYTHON" "$ROOT/$TRAIN" \
          $arguments --batch-size "$BATCH" --epochs 1 \
          --max-steps "$SPEED_STEPS" --no-eval --master-addr "$SUBNET.1" \
          --label "$label" --json "$speed/$label.json"
        if [[ $label == commopt-* ]]; then
          "$PYTHON" tools/commopt-timeline/commopt-timeline.py compare \
            "$OUT/plans/b$BATCH/${label#commopt-}.timeline.json" \
            "$speed/traces/$label".rank*.json >"$speed/$label.compare.txt"
        fi
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
