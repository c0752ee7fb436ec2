#!/usr/bin/env bash
#===- run.sh - Sharded data parallelism against ZeroRedundancyOptimizer ---===#
#
# Trains examples/fashion_mnist (FashionNet, 3.25 M parameters, and the patch
# transformer, 0.34 M) on the emulated cluster (bench/cluster/emulate.sh,
# one rank per host, $RATE links) at $RANKS ranks, SGD with momentum, with:
#
#   - commopt's sharded optimizer (--comm commopt-sharded, ZeRO-2: a
#     reduce-scatter of the gradients, each rank's shard of the optimizer,
#     an all-gather of the parameters),
#   - torch's ZeroRedundancyOptimizer over DDP (--comm zero, ZeRO-1: DDP's
#     allreduce of the gradients, each rank's share of the optimizer by
#     whole parameters, a broadcast of every rank's share), the peer,
#   - DDP over gloo (--comm ddp), the unsharded baseline,
#   - nothing (--comm local): the compute-only step, the lower bound,
#
# all in the same run, $STEPS steps each (batch $BATCH per rank), the
# median step reported. Each run also records the bytes its rank's link sent
# per step (the emulated link's tx_bytes) and each rank's optimizer state.
# The model's prediction of the sharded step is the compute-only step plus
# the reduce-scatter and the all-gather of the flat parameters priced by
# comm-estimate on the cluster commopt-calibrate measured in the same run
# (allreduces only: nothing of the sharded collectives is fitted).
#
# Usage: bench/sharded/run.sh   (root: the emulated cluster)
# Environment: BUILD (default build), OUT (default $BUILD/sharded), RANKS
# (4), RATE (1gbit), STEPS (20), BATCH (16), MODELS ("cnn transformer"),
# PYTHON.
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
OUT=${OUT:-$BUILD/sharded}
RANKS=${RANKS:-4}
RATE=${RATE:-1gbit}
STEPS=${STEPS:-20}
BATCH=${BATCH:-16}
MODELS=${MODELS:-cnn transformer}
SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}

for tool in commopt-opt commopt-calibrate; do
  [[ -x $BUILD/bin/$tool ]] || { echo "run.sh: build $BUILD first" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export COMMOPT_COMMRT_LIB=$ROOT/$BUILD/lib/libcommrt.so
export PYTHONPATH=$ROOT/python
export OMP_NUM_THREADS=1

echo "== $RANKS x $RATE: calibration" >&2
bench/cluster/emulate.sh run "$RANKS" "$RATE" -- \
  "$BUILD/bin/commopt-calibrate" --output="$OUT/cluster.json" \
  --name="emulated-${RANKS}x$RATE" --max-bytes=16777216 --repetitions=5

port=29700
for model in $MODELS; do
  mkdir -p "$OUT/$model"
  for comm in local commopt-sharded zero ddp; do
    echo "== $RANKS x $RATE: $model, $comm" >&2
    port=$((port + 1))
    bench/cluster/emulate.sh run "$RANKS" "$RATE" -- "$PYTHON" \
      "$ROOT/examples/fashion_mnist/train.py" --model "$model" \
      --comm "$comm" --epochs 1 --max-steps "$STEPS" \
      --batch-size "$BATCH" --no-eval --master-addr "$SUBNET.1" \
      --master-port "$port" --json "$OUT/$model/$comm.json"
  done
  # The model's sharded step: the compute-only step, then the
  # reduce-scatter and the all-gather of the flat parameters.
  "$PYTHON" - "$OUT/$model" "$RANKS" <<'PY' >"$OUT/$model/sharded.mlir"
import json, os, sys
folder, ranks = sys.argv[1], int(sys.argv[2])
local = json.load(open(os.path.join(folder, "local.json")))
n = local["parameters"]
shard = -(-n // ranks)
cost = local["epochs"][0]["step_ms_median"] * 1e3
print(f"""func.func @step() -> tensor<{n}xf32> {{
  %g = comm.compute () {{cost_us = {cost} : f64, name = "step"}}
      : () -> tensor<{n}xf32>
  %s = comm.reduce_scatter %g {{reduce = #comm.reduce<avg>,
      shards = {ranks} : i64, name = "gradients"}}
      : tensor<{n}xf32> -> tensor<{shard}xf32>
  %w = comm.all_gather %s {{shards = {ranks} : i64, name = "parameters"}}
      : tensor<{shard}xf32> -> tensor<{n}xf32>
  return %w : tensor<{n}xf32>
}}""")
PY
  "$BUILD/bin/commopt-opt" "$OUT/$model/sharded.mlir" -o /dev/null \
    --comm-estimate="cluster=$OUT/cluster.json report=json" \
    2>"$OUT/$model/estimate.json"
done

"$PYTHON" bench/sharded/report.py "$OUT" BENCHMARKS.md
