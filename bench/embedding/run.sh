#!/usr/bin/env bash
#===- run.sh - Embedding gradients: dense, allgather and Zen's exchange ---===#
#
# Trains examples/zipf_embedding (a bag-of-words model whose embedding has
# 100,000 rows of 64, sparse COO gradients, Zipf-distributed token data) on
# the emulated cluster (bench/cluster/emulate.sh, 1 rank per host, $RATE
# links) at each rank count of $RANKS, its embedding gradient reduced by:
#
#   - commopt's dense allreduce (rows-exchange=dense: the COO gradient added
#     into a dense buffer, every zero sent),
#   - commopt's allgather of the touched rows (rows-exchange=allgather),
#   - commopt's hash-balanced exchange, Zen's (rows-exchange=hash),
#   - PyTorch DDP over gloo with sparse gradients (its sparse allreduce,
#     an allgather of indices and values), the peer,
#   - nothing (--comm local): the compute-only step, the lower bound.
#
# Steps:
#  1. profile: commopt-export.py times the model and samples the rows a
#     batch of $BATCH touches on 1, 2, 4, 8 and 16 ranks;
#  2. plans: for each rank count, the emulated cluster's description with
#     that many ranks, comm-optimize with each rows-exchange and with
#     auto (the planner's choice), with estimates;
#  3. runs: $STEPS timed steps (after $WARMUP) of each;
#  4. report.py writes the section "Embedding gradients: the rows exchange"
#     of BENCHMARKS.md: measured step and communication (step minus the
#     compute-only step of the same rank count) beside the model's, DDP's,
#     and the targets.
#
# Usage: bench/embedding/run.sh   (root: the emulated cluster)
# Environment: BUILD (default build), OUT (default $BUILD/embedding), RANKS
# ("4 8 16"), RATE (1gbit), BATCH (128 samples per rank), STEPS (20),
# WARMUP (3), CLUSTER (default bench/cluster/emulated-4x1gbit.json, whose
# links and overheads every rank count shares), DEVICE (default
# bench/cluster/host-2core-4ranks.json), PYTHON.
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/embedding}
RANKS=${RANKS:-4 8 16}
RATE=${RATE:-1gbit}
BATCH=${BATCH:-128}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-3}
CLUSTER=${CLUSTER:-bench/cluster/emulated-4x1gbit.json}
DEVICE=${DEVICE:-bench/cluster/host-2core-4ranks.json}
SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}
EXAMPLE=examples/zipf_embedding

for tool in commopt-opt commopt-translate; do
  [[ -x $BUILD/bin/$tool ]] || { echo "run.sh: build $BUILD first" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export COMMOPT_COMMRT_LIB=$ROOT/$BUILD/lib/libcommrt.so
export PYTHONPATH=$ROOT/python
export OMP_NUM_THREADS=1

echo "== profile: batch $BATCH, rows touched on 1..16 ranks" >&2
(cd "$EXAMPLE" && "$PYTHON" "$ROOT/tools/commopt-export/commopt-export.py" \
  bag_of_words:bag_of_words_coo --example-inputs zipf_data:example_batch \
  --batch-size "$BATCH" --steps 5 --sparse-ranks 16 --threads 1 -q \
  -o "$OUT/profile.json")

for ranks in $RANKS; do
  dir=$OUT/r$ranks
  mkdir -p "$dir"
  # The emulated links, with this many ranks.
  "$PYTHON" - "$CLUSTER" "$ranks" "$dir/cluster.json" <<'PY'
import json, sys
cluster = json.load(open(sys.argv[1]))
cluster["ranks"] = int(sys.argv[2])
cluster["name"] = f"{cluster['name']}-as-{sys.argv[2]}-ranks"
json.dump(cluster, open(sys.argv[3], "w"), indent=1)
PY
  for exchange in dense allgather hash auto; do
    "$BUILD/bin/commopt-translate" --import-grad-profile "$OUT/profile.json" |
      "$BUILD/bin/commopt-opt" --comm-optimize="cluster=$dir/cluster.json device=$DEVICE rows-exchange=$exchange estimate=step report=none" |
      "$BUILD/bin/commopt-translate" --export-plan -o "$dir/$exchange.plan.json"
  done
  RUNS=(
    "commopt-dense|--comm commopt --plan $dir/dense.plan.json"
    "commopt-allgather|--comm commopt --plan $dir/allgather.plan.json"
    "commopt-hash|--comm commopt --plan $dir/hash.plan.json"
    "ddp-sparse|--comm ddp"
    "compute-only|--comm local"
  )
  for run in "${RUNS[@]}"; do
    label=${run%%|*}
    arguments=${run#*|}
    echo "== $ranks x $RATE: $label" >&2
    # shellcheck disable=SC2086
    bench/cluster/emulate.sh run "$ranks" "$RATE" -- "$PYTHON" \
      "$ROOT/$EXAMPLE/train.py" $arguments --coo --batch-size "$BATCH" \
      --steps "$STEPS" --warmup-steps "$WARMUP" --master-addr "$SUBNET.1" \
      --label "$label" --json "$dir/$label.json"
  done
done

"$PYTHON" bench/embedding/report.py "$OUT" BENCHMARKS.md
