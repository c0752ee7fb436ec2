#!/usr/bin/env bash
#===- device-check.sh - The MPI backend's device path on a lent GPU ------===#
#
# Runs, on a machine with a GPU and nothing built, what bundle.sh prepared
# here (carry .gpu-bundle with the working tree), with every rank on the
# machine's one GPU:
#   1. the GPU suites: the NCCL backend's kernels (one process); the staged
#      ring and every entry point of the MPI backend given device buffers
#      (commrt-gpu-mpi-tests, commrt-gpu-mpi-device-tests) at 1, 2 and 4
#      ranks, and at 4 ranks again over the ring for every size and over the
#      hierarchical allreduce of two emulated nodes; the fake-device suite,
#      which checks the bundle's MPI; and at one rank, collectives that
#      name their transport on both backends at once;
#   2. commrt-mpi-device-bench at 1, 2 and 4 ranks: latency and bus
#      bandwidth of the MPI backend's allreduce over device buffers against
#      host buffers holding the same data, small to large;
#   3. FashionNet trained on 4 ranks with --device cuda under the MPI
#      backend, with commopt's default plan and every plan bundle.sh made,
#      and DDP over gloo with CUDA tensors as the peer in the same run:
#      accuracy, step time, and whether the parameters are identical on
#      every rank.
# It writes the log and a markdown report (device-check.md, printed last)
# into OUT, and exits non-zero when a step failed. About 5 minutes on an
# H200.
#
# Usage (from the checkout's root):
#   bash bench/gpu/device-check.sh
# Environment: BUNDLE (default .gpu-bundle), OUT (default
# /tmp/device-check), PYTHON (default python3: one with PyTorch),
# TRAIN_DEVICE (default cuda; cpu checks the script where no GPU is),
# TRAIN_SAMPLES (default 16384), TRAIN_ARGS (added to every training run),
# BENCH_SIZES (default commrt-mpi-device-bench's), STEP_TIMEOUT_S (default
# 240).
#
#===----------------------------------------------------------------------===#

set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
BUNDLE=$(cd "${BUNDLE:-.gpu-bundle}" 2>/dev/null && pwd) || {
  echo "device-check.sh: no bundle: run bench/gpu/bundle.sh first and carry" \
    "${BUNDLE:-.gpu-bundle}" >&2
  exit 2
}
OUT=${OUT:-/tmp/device-check}
PYTHON=${PYTHON:-python3}
TRAIN_DEVICE=${TRAIN_DEVICE:-cuda}
TRAIN_SAMPLES=${TRAIN_SAMPLES:-16384}
TRAIN_ARGS=${TRAIN_ARGS:-}
STEP_TIMEOUT_S=${STEP_TIMEOUT_S:-240}
mkdir -p "$OUT"
LOG=$OUT/device-check.log
REPORT=$OUT/device-check.md
: >"$LOG"

# NCCL is not in the bundle: libcommrt needs libnccl.so.2, which PyTorch's
# NVIDIA packages or the CUDA toolkit hold.
nccl_dir() {
  "$PYTHON" - <<'PYTHON' 2>/dev/null && return
import os, nvidia.nccl
for base in nvidia.nccl.__path__:
    if os.path.exists(os.path.join(base, "lib", "libnccl.so.2")):
        print(os.path.join(base, "lib"))
        break
else:
    raise SystemExit(1)
PYTHON
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    [[ -e $dir/libnccl.so.2 ]] && echo "$dir" && return
  done
}
NCCL_DIR=$(nccl_dir)
# The bundle's C++ runtime only where the machine's lacks what the programs
# were built against (PyTorch keeps the machine's otherwise).
needed=$(strings "$BUNDLE/fallback/libstdc++.so.6" |
  grep -E '^GLIBCXX_3\.4\.[0-9]+$' | sort -V | tail -1)
system_cxx=$(ldconfig -p | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
FALLBACK=$BUNDLE/fallback
if [[ -n $system_cxx ]] && strings "$system_cxx" | grep -x "$needed" >/dev/null; then
  FALLBACK=
fi
export PATH=$BUNDLE/bin:$PATH
export LD_LIBRARY_PATH=$BUNDLE/lib${NCCL_DIR:+:$NCCL_DIR}${FALLBACK:+:$FALLBACK}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Open MPI and PMIx find their plugins and help files under the bundle.
export OPAL_PREFIX=$BUNDLE/prefix PMIX_INSTALL_PREFIX=$BUNDLE/prefix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1
# Containers and sandboxes lack the ptrace rights of single-copy transfers.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_show_load_errors=0
export COMMOPT_COMMRT_LIB=$BUNDLE/lib/libcommrt.so
export FASHION_MNIST_DIR=$BUNDLE/data
export OMP_NUM_THREADS=1

# The outcome of every step, for the report: name|result|seconds.
STEPS=()
failures=0

# Runs step $1 (a name) with the command after it, under STEP_TIMEOUT_S,
# appending its output to the log and to $OUT/<name>.txt.
step() {
  local name=$1
  shift
  echo "== $name: $*" >>"$LOG"
  local begin=$SECONDS status=0
  timeout "$STEP_TIMEOUT_S" "$@" >"$OUT/$name.txt" 2>&1 || status=$?
  cat "$OUT/$name.txt" >>"$LOG"
  local result=passed
  if ((status == 124)); then
    result="timed out (${STEP_TIMEOUT_S} s)"
  elif ((status != 0)); then
    result="FAILED (exit $status)"
  elif grep -q 'SKIPPED' "$OUT/$name.txt" &&
    ! grep -q '\[  PASSED  \] [1-9]' "$OUT/$name.txt"; then
    result="skipped"
  elif grep -q '\[  SKIPPED \]' "$OUT/$name.txt"; then
    result="passed ($(grep -o '\[  SKIPPED \] [0-9]*' "$OUT/$name.txt" |
      head -1 | grep -o '[0-9]*$') skipped)"
  fi
  [[ $result == passed* || $result == skipped ]] || failures=$((failures + 1))
  STEPS+=("$name|$result|$((SECONDS - begin))")
  echo "device-check: $name: $result" >&2
}

{
  echo "device-check.sh $(date -u +%Y-%m-%dT%H:%MZ), bundle $(cat "$BUNDLE/BUILD-ID")"
  nvidia-smi -L 2>&1 || echo "nvidia-smi: none"
  echo "NCCL from: ${NCCL_DIR:-nowhere}; C++ runtime: ${FALLBACK:-the system one}"
  ldd --version | head -1
  ldd "$BUNDLE/lib/libcommrt.so" | grep -E 'not found|nccl|cudart|mpi'
  mpirun --version | head -1
} >"$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt" >>"$LOG"

# 1. The suites.
step gpu-kernels "$BUNDLE/bin/commrt-gpu-tests"
for ranks in 1 2 4; do
  step "staged-ring-np$ranks" mpirun -np "$ranks" \
    "$BUNDLE/bin/commrt-gpu-mpi-tests"
  step "device-buffers-np$ranks" mpirun -np "$ranks" \
    "$BUNDLE/bin/commrt-gpu-mpi-device-tests"
done
step device-buffers-ring-np4 env COMMRT_ALLREDUCE=ring COMMRT_RING_MIN_BYTES=0 \
  mpirun -np 4 "$BUNDLE/bin/commrt-gpu-mpi-device-tests"
step device-buffers-hierarchical-np4 env COMMRT_ALLREDUCE=hierarchical \
  COMMRT_RANKS_PER_NODE=2 mpirun -np 4 "$BUNDLE/bin/commrt-gpu-mpi-device-tests"
step fake-device-np4 mpirun -np 4 "$BUNDLE/bin/commrt-mpi-device-tests"
# Both backends at once, each carrying the collectives that name it: NCCL
# beside MPI and MPI beside NCCL (one rank: NCCL takes one rank a GPU).
# Without a GPU, NCCL is only checked to fail on every rank.
backends=(mpi)
[[ $TRAIN_DEVICE == cpu ]] || backends+=(nccl)
for backend in "${backends[@]}"; do
  step "transports-$backend-np1" env COMMRT_BACKEND="$backend" mpirun -np 1 \
    "$BUNDLE/bin/commrt-mpi-group-tests" --gtest_filter='Transport.*'
done

# 2. Device path against host path.
for ranks in 1 2 4; do
  step "bench-np$ranks" mpirun -np "$ranks" \
    "$BUNDLE/bin/commrt-mpi-device-bench" \
    --label="np$ranks" ${BENCH_SIZES:+--sizes=$BENCH_SIZES}
done

# 3. Training, 4 ranks on the GPU: commopt's plans under the MPI backend,
# DDP over gloo beside them.
train() {
  local name=$1
  shift
  # shellcheck disable=SC2086 # TRAIN_ARGS holds several arguments.
  step "train-$name" env COMMRT_BACKEND=mpi mpirun -np 4 "$PYTHON" \
    examples/fashion_mnist/train.py --device "$TRAIN_DEVICE" --epochs 1 \
    --train-samples "$TRAIN_SAMPLES" --batch-size 64 --threads 1 \
    --json "$OUT/train-$name.json" --label "$name" $TRAIN_ARGS "$@"
}
train ddp-gloo --comm ddp --ddp-backend gloo --master-port 29661
train commopt-default --comm commopt
for plan in "$BUNDLE"/plans/*.json; do
  name=$(basename "$plan" .json)
  [[ $name == profile ]] && continue
  train "commopt-$name" --comm commopt --plan "$plan"
done

# The report.
{
  echo "## GPU check of the MPI backend's device buffers ($(date -u +%Y-%m-%d))"
  echo
  echo '```'
  cat "$OUT/environment.txt"
  echo '```'
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---|"
  for entry in "${STEPS[@]}"; do
    IFS='|' read -r name result seconds <<<"$entry"
    echo "| $name | $result | $seconds |"
  done
  for ranks in 1 2 4; do
    echo
    echo "### Allreduce over device and host buffers, $ranks ranks on one GPU"
    grep -A100 '^| bytes' "$OUT/bench-np$ranks.txt" 2>/dev/null ||
      echo "(no table: see bench-np$ranks.txt)"
  done
  echo
  echo "### FashionNet, 4 ranks on one GPU, 1 epoch of $TRAIN_SAMPLES samples"
  echo
  "$PYTHON" - "$OUT" <<'PYTHON'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "train-*.json"))):
    run = json.load(open(path))
    epoch = run["epochs"][-1]
    rows.append((run["label"], run["description"],
                 epoch.get("test_accuracy"), epoch["step_ms_median"],
                 run.get("parameters_identical")))
print("| run | synchronisation | test accuracy (%) | step (ms, median) "
      "| parameters identical on all ranks |")
print("|---|---|---|---|---|")
peer = next((r[2] for r in rows if r[0] == "ddp-gloo"), None)
for label, description, accuracy, step, identical in rows:
    versus = "" if peer is None or accuracy is None or label == "ddp-gloo" \
        else f" ({accuracy - peer:+.2f} against DDP)"
    shown = "-" if accuracy is None else f"{accuracy:.2f}{versus}"
    print(f"| {label} | {description} | {shown} | {step:.1f} | "
          f"{'yes' if identical else 'NO' if identical is False else '-'} |")
PYTHON
  echo
  if ((failures)); then
    echo "**$failures step(s) failed: see device-check.log.**"
  else
    echo "Every step passed."
  fi
} >"$REPORT" 2>>"$LOG"
cat "$REPORT"
((failures == 0))
