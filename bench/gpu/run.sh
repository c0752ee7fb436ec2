#!/usr/bin/env bash
#===- run.sh - commrt's GPU benchmark, end to end ------------------------===#
#
# Runs commrt-gpu-bench (wire conversion, ResNet-50 fused pack, selection,
# sparse allreduce on one rank) and torch_topk.py (PyTorch's top-k on the
# same data size) on this machine's GPU, and appends a markdown report with
# one table per part to REPORT. The raw output and the RESULT lines stay in
# $OUT.
#
# Usage (from anywhere, on a machine with a GPU, after
# `ninja -C build commrt-gpu-bench`):
#   bench/gpu/run.sh REPORT.md
# Environment: BUILD (default build), OUT (default $BUILD/gpubench), PYTHON
# (default python3: one whose torch has CUDA, else the baseline is skipped),
# LABEL (default gpu), REPETITIONS (default 20), WARMUP (default 3),
# ELEMENTS (default 100000000), DENSITY (default 0.001), PARTS (default
# convert,fused-pack,select,sparse).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

REPORT=${1:?usage: bench/gpu/run.sh REPORT.md}
REPORT=$(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
OUT=${OUT:-$BUILD/gpubench}
PYTHON=${PYTHON:-python3}
LABEL=${LABEL:-gpu}
REPETITIONS=${REPETITIONS:-20}
WARMUP=${WARMUP:-3}
ELEMENTS=${ELEMENTS:-100000000}
DENSITY=${DENSITY:-0.001}
PARTS=${PARTS:-convert,fused-pack,select,sparse}
BENCH=$BUILD/bin/commrt-gpu-bench

[[ -x $BENCH ]] || {
  echo "run.sh: build $BENCH first (ninja -C $BUILD commrt-gpu-bench)" >&2
  exit 2
}
mkdir -p "$OUT"
: >"$OUT/log.txt"

status=0
"$BENCH" --label="$LABEL" --parts="$PARTS" --repetitions="$REPETITIONS" \
  --warmup="$WARMUP" --select-elements="$ELEMENTS" --density="$DENSITY" \
  >>"$OUT/log.txt" 2>&1 || status=$?
if [[ ,$PARTS, == *,select,* ]]; then
  "$PYTHON" bench/gpu/torch_topk.py --label="$LABEL" --elements="$ELEMENTS" \
    --density="$DENSITY" --repetitions="$REPETITIONS" --warmup="$WARMUP" \
    >>"$OUT/log.txt" 2>&1 || status=$?
fi
cat "$OUT/log.txt"
grep '^RESULT' "$OUT/log.txt" >"$OUT/results.txt" || true

# One markdown table per part, from the key=value fields of the RESULT lines.
{
  echo
  echo "## commrt GPU benchmark: $LABEL ($(date -u +%Y-%m-%d))"
  echo
  grep -m1 '^commrt-gpu-bench: ' "$OUT/log.txt" | sed 's/^commrt-gpu-bench: //'
  grep '^torch_topk.py: ' "$OUT/log.txt" || true
  [[ $status == 0 ]] || echo "**A program failed (exit $status); see $OUT/log.txt.**"
  awk '
    function parse(line,   n, i, kv, fields) {
      delete f
      n = split(line, fields, " ")
      for (i = 2; i <= n; ++i) {
        split(fields[i], kv, "=")
        f[kv[1]] = substr(fields[i], length(kv[1]) + 2)
      }
    }
    function ms(seconds) { return sprintf("%.3f", seconds * 1000) }
    NR == FNR {
      parse($0)
      if (f["plan"] == "topk-sort") sortMedian = f["median_s"]
      lines[++count] = $0
      next
    }
    END {
      header = 0
      for (i = 1; i <= count; ++i) {
        parse(lines[i])
        if (f["part"] != "convert" && f["part"] != "fused-pack") continue
        if (!header++) {
          print "\n### Wire conversion (commrt::cuda::convert)\n"
          print "| part | plan | buffers | median (ms) | GB/s moved | memcpy GB/s | ratio to memcpy |"
          print "|---|---|---:|---:|---:|---:|---:|"
        }
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", f["part"], f["plan"],
          f["buffers"], ms(f["median_s"]), f["gbps"], f["memcpy_gbps"], f["ratio"]
      }
      header = 0
      for (i = 1; i <= count; ++i) {
        parse(lines[i])
        if (f["part"] != "select") continue
        if (!header++) {
          print "\n### Selection\n"
          print "| plan | elements | k | selected | median (ms) | vs topk-sort | check |"
          print "|---|---:|---:|---:|---:|---:|---|"
        }
        ratio = sortMedian > 0 ? sprintf("%.2fx", f["median_s"] / sortMedian) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", f["plan"], f["elements"],
          f["k"], f["selected"], ms(f["median_s"]), ratio, f["check"]
      }
      header = 0
      for (i = 1; i <= count; ++i) {
        parse(lines[i])
        if (f["part"] != "sparse") continue
        if (!header++) {
          print "\n### commrt_sparse_allreduce, device buffers, NCCL, one rank\n"
          print "| plan | elements | density | median (ms) | min (ms) | max (ms) |"
          print "|---|---:|---:|---:|---:|---:|"
        }
        printf "| %s | %s | %s | %s | %s | %s |\n", f["plan"], f["elements"],
          f["density"], ms(f["median_s"]), ms(f["min_s"]), ms(f["max_s"])
      }
    }
  ' "$OUT/results.txt" "$OUT/results.txt"
  echo
  echo "Medians of $REPETITIONS runs after $WARMUP warm-up runs; raw RESULT lines in $OUT/results.txt."
} >>"$REPORT"
echo "run.sh: appended the report to $REPORT"
exit "$status"
