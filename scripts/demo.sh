#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine, builds commopt and runs
# its main job: plan the gradient communication of ResNet-50's training step
# (exported from torchvision by tools/commopt-export, examples/profiles/) for
# a preset cluster, print the plan and its estimated step time against
# PyTorch DDP's bucketing policy, and write a timeline for Perfetto.
#
#   bash scripts/demo.sh [PROFILE.json] [CLUSTER]
#
# CLUSTER is a preset (ethernet10-16, the default; gradientflow-64,
# ib100-512, nvlink-8, ib56-16) or a cluster description JSON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}
profile=${1:-$root/examples/profiles/resnet50.json}
cluster=${2:-ethernet10-16}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
opt=$build/bin/commopt-opt
translate=$build/bin/commopt-translate

# plan IMPORT-FLAG FILE NAME: import a profile, plan it, compare with DDP.
plan() {
  local step=$work/$3.mlir
  echo "== $3: $2"
  "$translate" "$1" "$2" -o "$step"
  # PyTorch DDP's policy: 25 MiB buckets (1 MiB first), each started when
  # it is full, one stream, no priorities.
  "$opt" "$step" -o /dev/null --comm-optimize="cluster=$cluster \
    fusion=threshold bucket-cap-mb=25 channels=1 priorities=false \
    estimate=step report=json report-file=$work/$3-ddp.json"
  "$opt" "$step" -o "$work/$3-plan.mlir" --comm-optimize="cluster=$cluster \
    estimate=step report=json report-file=$work/$3-plan.json"
  "$opt" "$step" -o /dev/null --comm-optimize="cluster=$cluster wire=f16 \
    estimate=step report=json report-file=$work/$3-f16.json"
  local timeline=$build/$3-timeline.json
  "$translate" --export-timeline --timeline-cluster="$cluster" \
    "$work/$3-plan.mlir" -o "$timeline"
  /usr/bin/python3 "$root/scripts/compare-plans.py" "$work/$3" "$step" \
    "$timeline"
}

echo "commopt-opt --comm-optimize=\"cluster=$cluster\" against DDP's policy"
plan --import-grad-profile "$profile" "$(basename "$profile" .json)"
# The same model as measured on a GPU by pipedream's profiler, when the
# shared profiles are beside the checkout.
pipedream=$root/../shared/profiles/pipedream/resnet50.graph.txt
if [[ $# -eq 0 && -f $pipedream ]]; then
  plan --import-pipedream "$pipedream" resnet50-pipedream
fi
