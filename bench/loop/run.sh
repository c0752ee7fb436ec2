#!/usr/bin/env bash
#===- run.sh - Closing the loop: predicted vs measured step times --------===#
#
# Imports pipedream's ResNet-50 profile, plans it eight times for the
# calibrated emulated cluster (comm-optimize's default plan, the same with
# f16 on the wire, DDP's policy: 25 MiB threshold buckets, one channel,
# no priorities, a sparse plan: comm-sparsify's choice, priced with the
# host CPU as the device of its local steps, its sparse allreduces started
# on channels, the same with them blocking, and sharded plans: ZeRO-2,
# ZeRO-3/FSDP, and ZeRO-3 within SHARD_LIMIT_MB per rank), takes comm-estimate's
# prediction of each plan (step and steady state, JSON), appends a timing
# @main (comm-add-step-driver), lowers with comm.compute taking its cost
# (compute-delay), runs them on 4 ranks of bench/cluster/emulate.sh at 1 Gbit/s
# (ROUNDS rounds, the plans alternating; every run one warm-up step and
# STEPS timed ones, each after a barrier, slowest rank) and replaces the
# section "Closing the loop" of BENCHMARKS.md (report.py).
#
# Usage (as root, from anywhere, after
# `ninja -C build commopt-opt commopt-translate commrt commrt-in-step-bench`):
#   bench/loop/run.sh
# Environment: BUILD (default build), OUT (default $BUILD/loop), STEPS
# (default 5), ROUNDS (default 4), RATE (default 1gbit), CLUSTER (default
# bench/cluster/emulated-4x1gbit.json), DEVICE (default
# bench/cluster/host-2core-4ranks.json), MEASURE_DEVICE (default 0; 1 first
# measures DEVICE's memory rate and channel slowdown on the cluster with
# commrt-in-step-bench and plans with what it writes), PROFILE (default
# ../shared/profiles/pipedream/resnet50.graph.txt, pipedream's measured
# profile beside the checkout), LLVM_BIN (default
# /usr/lib/llvm-22/bin), PYTHON (default /usr/bin/python3), SHARD_LIMIT_MB
# (default 100).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

# ROOT, BUILD, PYTHON and the MPI settings.
source "$(dirname "$0")/../common.sh"
# A lowered skeleton allocates its gradients afresh every step, where a
# framework keeps them (PyTorch's caching allocator). glibc would hand the
# freed blocks back to the kernel and fault them in again, zeroed, the next
# step: 2-5% of a step on 4 ranks of the emulated cluster. Keep them, as
# commopt-tune does.
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296}
OUT=${OUT:-$BUILD/loop}
STEPS=${STEPS:-5}
ROUNDS=${ROUNDS:-4}
RATE=${RATE:-1gbit}
CLUSTER=${CLUSTER:-bench/cluster/emulated-4x1gbit.json}
# The device of the ranks' local work (the sparse plan's selection and
# residual run on the host CPU here, two ranks to a core).
DEVICE=${DEVICE:-bench/cluster/host-2core-4ranks.json}
PROFILE=${PROFILE:-../shared/profiles/pipedream/resnet50.graph.txt}
# The memory limit of the third sharded plan, in MiB per rank: about half
# of what the replicated plans hold for ResNet-50 (195 MiB).
SHARD_LIMIT_MB=${SHARD_LIMIT_MB:-100}
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-22/bin}
BUILD=$(cd "$BUILD" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

OPT=$BUILD/bin/commopt-opt
TRANSLATE=$BUILD/bin/commopt-translate
BENCH=$BUILD/bin/commrt-in-step-bench
for tool in "$OPT" "$TRANSLATE" "$BUILD/lib/libcommrt.so" "$BENCH"; do
  [[ -e $tool ]] || {
    echo "run.sh: build $tool first" >&2
    exit 2
  }
done
LIBS=$BUILD/lib/libcommrt.so,$("$LLVM_BIN/llvm-config" --libdir)/libmlir_c_runner_utils.so
LIBS=$LIBS,$("$LLVM_BIN/llvm-config" --libdir)/libmlir_runner_utils.so

# The host's speed drifts by several percent over hours on this VM, and the
# sparse plans' local steps track it; MEASURE_DEVICE=1 measures the device
# in the same run (BENCHMARKS.md, "Closing the loop", says how that fared).
MEASURED_DEVICE=
if [[ ${MEASURE_DEVICE:-0} == 1 ]]; then
  MEASURED_DEVICE=$OUT/device.json
  echo "== device: commrt-in-step-bench on 4 ranks at $RATE" >&2
  bench/cluster/emulate.sh run 4 "$RATE" -- "$BENCH" --cluster="$CLUSTER" \
    --base="$DEVICE" --output="$MEASURED_DEVICE" 2>&1 |
    tee "$OUT/device.log" >&2
  PLAN_DEVICE=$MEASURED_DEVICE
else
  PLAN_DEVICE=$DEVICE
fi

declare -A PLAN_OPTIONS=(
  [optimized]="cluster=$CLUSTER"
  [optimized-f16]="cluster=$CLUSTER wire=f16"
  [ddp]="cluster=$CLUSTER fusion=threshold bucket-cap-mb=25 channels=1 priorities=false"
  [sparse]="cluster=$CLUSTER sparse=true search=false device=$PLAN_DEVICE"
  [sparse-blocking]="cluster=$CLUSTER sparse=true sparse-overlap=false search=false device=$PLAN_DEVICE"
  [zero2]="cluster=$CLUSTER shard=grad"
  [zero3]="cluster=$CLUSTER shard=full"
  [zero3-limited]="cluster=$CLUSTER shard=full shard-memory-limit-mb=$SHARD_LIMIT_MB"
)
PLANS=(optimized optimized-f16 ddp sparse sparse-blocking zero2 zero3 zero3-limited)

"$TRANSLATE" --import-pipedream "$PROFILE" -o "$OUT/resnet50.mlir"
for plan in "${PLANS[@]}"; do
  options=${PLAN_OPTIONS[$plan]}
  echo "== plan $plan: --comm-optimize=\"$options\"" >&2
  "$OPT" "$OUT/resnet50.mlir" \
    --comm-optimize="$options estimate=step report=json report-file=$OUT/$plan.step.json" \
    -o "$OUT/$plan.planned.mlir"
  "$OPT" "$OUT/resnet50.mlir" \
    --comm-optimize="$options estimate=steady report=json report-file=$OUT/$plan.steady.json" \
    -o /dev/null
  "$OPT" "$OUT/$plan.planned.mlir" \
    --comm-add-step-driver="steps=$((STEPS + 1))" \
    --commopt-lower-to-llvm="compute-delay" -o "$OUT/$plan.lowered.mlir"
  : >"$OUT/$plan.log"
done

for ((round = 1; round <= ROUNDS; round++)); do
  for plan in "${PLANS[@]}"; do
    echo "== round $round, plan $plan, 4 ranks at $RATE" >&2
    bench/cluster/emulate.sh run 4 "$RATE" -- "$LLVM_BIN/mlir-runner" \
      "$OUT/$plan.lowered.mlir" -e main -entry-point-result=void \
      -shared-libs="$LIBS" 2>&1 | sed "s/^/round $round: /" |
      tee -a "$OUT/$plan.log" >&2
  done
done

"$PYTHON" bench/loop/report.py "$OUT" BENCHMARKS.md \
  --rate="$RATE" --steps="$STEPS" --rounds="$ROUNDS" \
  --cluster="$CLUSTER" --device="$DEVICE" --profile="$PROFILE" \
  --shard-limit-mb="$SHARD_LIMIT_MB" \
  ${MEASURED_DEVICE:+--measured-device="$MEASURED_DEVICE"}
