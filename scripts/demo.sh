#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine, builds commopt and runs
# its main job: plan the gradient communication of VGG-16's training step
# (exported from torchvision by tools/commopt-export, examples/profiles/,
# with each layer's time the V100 roofline of its counted FLOPs and bytes)
# for a preset cluster, print the estimated step time of commopt's plans
# against the policies of PyTorch DDP, Horovod and XLA, and write a timeline
# for Perfetto and a picture of DDP's timeline against commopt's best plan
# (build/demo-timeline.svg, by scripts/timeline-svg.py).
#
#   bash scripts/demo.sh [PROFILE.json] [CLUSTER] [DEVICE]
#
# CLUSTER is a preset (ethernet10-16, the default; gradientflow-64,
# ib100-512, nvlink-8, ib56-16) or a cluster description JSON. DEVICE is a
# device preset (v100, the default; p40, a100, h100) or description JSON
# whose roofline times the profile's layers, or `measured` for the times
# measured when the profile was exported.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build}
profile=${1:-$root/examples/profiles/vgg16.json}
cluster=${2:-ethernet10-16}
device=${3:-v100}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
opt=$build/bin/commopt-opt
translate=$build/bin/commopt-translate

# baseline STEP NAME FUSION-OPTIONS: plan STEP with a framework's policy:
# threshold buckets, each started when it is closed, on one stream without
# priorities (docs/Design.md, section 3.3).
baseline() {
  "$opt" "$1" -o "$work/$2.mlir" --comm-record-cluster="cluster=$cluster" \
    --comm-fuse-buckets="policy=threshold $3" \
    --comm-schedule-overlap="channels=1 priorities=false" \
    --comm-estimate="report=json report-file=$work/$2.json"
}

# plan NAME SOURCE TIMES IMPORT-ARGS...: import a profile, plan it with
# commopt and with the frameworks' policies and compare them; with $picture
# set, also draw DDP's timeline against commopt's best plan there.
plan() {
  local name=$1 source=$2 times=$3
  shift 3
  local step=$work/$name.mlir
  echo "== $name: ${source#"$root"/}"
  "$translate" "$@" "$source" -o "$step"
  # PyTorch DDP: 25 MiB buckets (1 MiB first), each closed once it reaches
  # the cap. Horovod: a 64 MiB fusion buffer (its older documentation's
  # figure; 128 MiB in its code); XLA's all-reduce combiner: 30 MiB; both
  # close a buffer before it would overflow.
  baseline "$step" "$name-ddp" "bucket-cap-mb=25 first-bucket-mb=1"
  baseline "$step" "$name-horovod" \
    "bucket-cap-mb=64 first-bucket-mb=0 overflow=false"
  baseline "$step" "$name-xla" \
    "bucket-cap-mb=30 first-bucket-mb=0 overflow=false"
  # commopt's plans; comm-optimize tries each option given on and off.
  local options
  for options in "plan:" "f16:wire=f16" "sparse:wire=f16 sparse=true"; do
    "$opt" "$step" -o "$work/$name-${options%%:*}.mlir" \
      --comm-optimize="cluster=$cluster ${options#*:} estimate=step \
      report=json report-file=$work/$name-${options%%:*}.json"
  done
  local timeline=$build/$name-timeline.json
  "$translate" --export-timeline --timeline-cluster="$cluster" \
    "$work/$name-plan.mlir" -o "$timeline"
  local report
  report=$(/usr/bin/python3 "$root/scripts/compare-plans.py" "$work/$name" \
    "$step" "${timeline#"$root"/}" "$times")
  printf '%s\n' "$report"
  if [[ -n $picture ]]; then
    # The search with f16 and sparse allowed tries every combination of
    # both, dense f32 included: its plan is commopt's best.
    local ddp=$work/$name-ddp best=$work/$name-sparse
    "$translate" --export-timeline --timeline-cluster="$cluster" \
      "$ddp.mlir" -o "$build/$name-ddp-timeline.json"
    "$translate" --export-timeline --timeline-cluster="$cluster" \
      "$best.mlir" -o "$build/$name-best-timeline.json"
    "$translate" --export-plan "$ddp.mlir" -o "$ddp-plan.json"
    "$translate" --export-plan "$best.mlir" -o "$best-plan.json"
    /usr/bin/python3 "$root/scripts/timeline-svg.py" -o "$picture" \
      "$build/$name-ddp-timeline.json" "$build/$name-best-timeline.json" \
      --title "$name, PyTorch DDP's policy (25 MiB buckets, 1 MiB first)" \
      --title "$name, commopt's best plan (f16 and sparse allowed)" \
      --plan "$ddp-plan.json" --plan "$best-plan.json"
    echo "DDP's timeline against commopt's best plan, as a picture:" \
      "${picture#"$root"/}"
  fi
  echo
}

echo "commopt-opt --comm-optimize=\"cluster=$cluster\" against DDP's, \
Horovod's and XLA's policies"
picture=$build/demo-timeline.svg
if [[ $device == measured ]]; then
  plan "$(basename "$profile" .json)" "$profile" \
    "as measured by the exporter" --import-grad-profile
else
  plan "$(basename "$profile" .json)" "$profile" \
    "$device roofline of the profile's FLOPs and bytes" \
    --import-grad-profile --grad-profile-device="$device"
fi
# ResNet-50 as measured on a GPU by pipedream's profiler, when the shared
# profiles are beside the checkout.
pipedream=$root/../shared/profiles/pipedream/resnet50.graph.txt
if [[ $# -eq 0 && -f $pipedream ]]; then
  picture=
  plan resnet50-pipedream "$pipedream" "measured by pipedream's profiler" \
    --import-pipedream
fi
