#!/usr/bin/env bash
# Builds commopt's libFuzzer targets (tools/fuzzers) with AddressSanitizer
# and UndefinedBehaviorSanitizer into build-fuzz/ (or $COMMOPT_BUILD_DIR),
# gathers seed corpora from the tree's tests and examples (and ../shared
# when it is there), and fuzzes each target for a bounded time:
#
#   bash scripts/fuzz.sh               # 60 s per target (or $COMMOPT_FUZZ_SECONDS)
#   bash scripts/fuzz.sh 300           # 300 s per target
#   bash scripts/fuzz.sh --campaign 3600
#                                      # 3600 s in all, shared by weight
#                                      # (the slow IR target gets most), and
#                                      # a summary table for docs/Robustness.md
#
# Before fuzzing, every target replays the reproducers under test/Fuzz/Inputs
# that belong to it, so that a fixed finding stays fixed under the
# sanitizers. The run fails when a target finds a crash, a sanitizer report,
# a leak, a timeout (an input running longer than $COMMOPT_FUZZ_TIMEOUT,
# 10 s) or an out-of-memory (over $COMMOPT_FUZZ_RSS_MB, 2048 MiB), and
# prints the reproducer and the command that replays it. The corpora grow in
# the work folder ($COMMOPT_FUZZ_WORK, default <build>/fuzz) from run to run;
# $COMMOPT_FUZZ_TARGETS (e.g. "cluster device") limits the run to some
# targets; COMMOPT_FUZZ_SKIP_BUILD=1 fuzzes what is built already.
# docs/Robustness.md has the targets, the figures and the findings.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${COMMOPT_BUILD_DIR:-$root/build-fuzz}
work=${COMMOPT_FUZZ_WORK:-$build/fuzz}
shared=$root/../shared
timeout_s=${COMMOPT_FUZZ_TIMEOUT:-10}
rss_mb=${COMMOPT_FUZZ_RSS_MB:-2048}

usage() {
  echo "usage: $0 [SECONDS_PER_TARGET] | --campaign TOTAL_SECONDS" >&2
  exit 2
}
campaign=0
seconds=${COMMOPT_FUZZ_SECONDS:-60}
case ${1:-} in
  --campaign) campaign=1; seconds=${2:-3600} ;;
  -h|--help) usage ;;
  "") ;;
  *) seconds=$1 ;;
esac
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || usage

# Targets, the largest input each may grow to (the biggest seeds: the
# ResNet-50 profiles), and their shares of a campaign's time.
all_targets=(grad-profile pipedream cluster device ir)
declare -A max_len=([grad-profile]=32768 [pipedream]=40960 [cluster]=4096
                    [device]=4096 [ir]=16384)
declare -A weight=([grad-profile]=2 [pipedream]=2 [cluster]=1 [device]=1
                   [ir]=4)
read -r -a targets <<<"${COMMOPT_FUZZ_TARGETS:-${all_targets[*]}}"
for target in "${targets[@]}"; do
  [[ -n ${max_len[$target]:-} ]] || {
    echo "unknown fuzz target '$target' (known: ${all_targets[*]})" >&2
    exit 2
  }
done

#===- Tools and build -----------------------------------------------------===#
"$root/scripts/install-deps.sh"
# libFuzzer and the sanitizer runtimes.
if ! dpkg -s libclang-rt-22-dev >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends libclang-rt-22-dev
fi
export PATH=/usr/lib/llvm-22/bin:$PATH

build_start=$SECONDS
# COMMOPT_FUZZ_SKIP_BUILD=1 fuzzes what is built already.
if [[ ${COMMOPT_FUZZ_SKIP_BUILD:-0} != 1 ]]; then
  if [[ ! -f $build/build.ninja ]]; then
    cmake -G Ninja -S "$root" -B "$build" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
      -DLLVM_USE_LINKER=lld \
      -DCOMMOPT_SANITIZER="address;undefined" -DCOMMOPT_FUZZERS=ON \
      -DCOMMOPT_BUILD_TESTS=OFF -DCOMMOPT_BUILD_BENCHMARKS=OFF
  fi
  # The targets, and the tools that replay a finding as a user meets it.
  build_targets=(commopt-opt commopt-translate)
  for target in "${all_targets[@]}"; do
    build_targets+=("commopt-$target-fuzzer")
  done
  cmake --build "$build" -j "${COMMOPT_JOBS:-$(nproc)}" \
    --target "${build_targets[@]}" -- --quiet
fi
for target in "${targets[@]}"; do
  [[ -x $build/bin/commopt-$target-fuzzer ]] || {
    echo "no $build/bin/commopt-$target-fuzzer: build it first" >&2
    exit 1
  }
done
echo "== fuzz build: $((SECONDS - build_start)) s"

#===- Seed corpora --------------------------------------------------------===#
# Seeds are gathered afresh into <work>/seeds/<target> on every run, named
# by their content; nothing from ../shared is copied into the tree.
add_seed() { # target file
  local sum
  sum=$(sha1sum "$2" | cut -c1-40)
  cp "$2" "$work/seeds/$1/$sum"
}
# The fenced ```json blocks of the Markdown file $2 that contain $3.
add_doc_seeds() { # target markdown pattern
  local tmp
  tmp=$(mktemp -d)
  awk -v dir="$tmp" '
    /^```json/ { inside = 1; n++; next }
    /^```/ { inside = 0; next }
    inside { print > (dir "/" n ".json") }' "$2"
  grep -l -- "$3" "$tmp"/*.json 2>/dev/null |
    while read -r file; do add_seed "$1" "$file"; done
  rm -rf "$tmp"
}
# Each case of a test file split at `// -----`, as -split-input-file does.
add_split_seeds() { # target file
  local tmp
  tmp=$(mktemp -d)
  awk -v dir="$tmp" '
    BEGIN { n = 0 }
    /^\/\/ -----/ { n++; next }
    { print > (dir "/" n ".mlir") }' "$2"
  for file in "$tmp"/*.mlir; do
    [[ -s $file ]] && add_seed "$1" "$file"
  done
  rm -rf "$tmp"
}

gather_seeds() {
  rm -rf "$work/seeds"
  # Every target's folder: seeds are gathered for all, fuzzed for some.
  mkdir -p "${all_targets[@]/#/$work/seeds/}"
  local file
  for file in "$root"/test/Target/Inputs/grad-profile-*.json \
              "$root"/examples/profiles/*.json; do
    add_seed grad-profile "$file"
  done
  if [[ -d $shared/profiles ]]; then
    find "$shared/profiles" -name '*.json' -size -32k |
      while read -r file; do
        grep -q commopt-grad-profile "$file" && add_seed grad-profile "$file"
      done
  fi
  for file in "$root"/test/Target/Inputs/pipedream-*.graph.txt \
              "$root"/test/Target/Inputs/tiny-model/graph.txt; do
    add_seed pipedream "$file"
  done
  if [[ -d $shared/profiles/pipedream ]]; then
    for file in "$shared"/profiles/pipedream/*.graph.txt; do
      add_seed pipedream "$file"
    done
  fi
  grep -rl --include='*.json' ranks_per_node "$root/test" "$root/bench" \
    "$root/examples" | while read -r file; do add_seed cluster "$file"; done
  add_doc_seeds cluster "$root/docs/Cluster.md" ranks_per_node
  grep -rl --include='*.json' peak_tflops "$root/test" "$root/bench" \
    "$root/examples" | while read -r file; do add_seed device "$file"; done
  add_doc_seeds device "$root/docs/Cluster.md" peak_tflops
  find "$root/test" "$root/examples" -name '*.mlir' -not -path '*/Fuzz/*' |
    while read -r file; do add_split_seeds ir "$file"; done
}

#===- Runs ----------------------------------------------------------------===#
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# The reproducers of test/Fuzz/Inputs that belong to target $1, named
# <target>-*.
replay_inputs() {
  local target=$1 inputs=()
  shopt -s nullglob
  inputs=("$root/test/Fuzz/Inputs/$target"-*)
  shopt -u nullglob
  [[ ${#inputs[@]} -gt 0 ]] || return 0
  "$build/bin/commopt-$target-fuzzer" -timeout="$timeout_s" \
    -rss_limit_mb="$rss_mb" "${inputs[@]}" >"$work/logs/$target-replay.log" 2>&1
}

# The findings libFuzzer wrote into the artifact folder $1.
reproducers() {
  find "$1" -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \)
}

declare -A execs=() rates=() corpus=() found=()
failed=0
fuzz_target() { # target seconds
  local target=$1 time=$2
  local fuzzer=$build/bin/commopt-$target-fuzzer
  local artifacts=$work/artifacts/$target log=$work/logs/$target.log
  local dict=$root/tools/fuzzers/commopt-$target-fuzzer/commopt-$target-fuzzer.dict
  mkdir -p "$work/corpus/$target" "$artifacts"
  if ! replay_inputs "$target"; then
    echo "$target: a reproducer of test/Fuzz/Inputs fails again:" >&2
    tail -n 40 "$work/logs/$target-replay.log" >&2
    found[$target]="regression"
    failed=$((failed + 1))
    return
  fi
  local before
  before=$(reproducers "$artifacts" | wc -l)
  echo "== $target: ${time} s"
  local status=0
  "$fuzzer" -max_total_time="$time" -timeout="$timeout_s" \
    -rss_limit_mb="$rss_mb" -max_len="${max_len[$target]}" -dict="$dict" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$work/corpus/$target" "$work/seeds/$target" >"$log" 2>&1 || status=$?
  # The final stats (-print_final_stats), or after a finding the last
  # status line, "#<runs> ... corp: <inputs>/<bytes> ... exec/s: <rate>".
  execs[$target]=$(grep -a '^stat::number_of_executed_units:' "$log" |
                   awk '{print $2}' | tail -n 1)
  [[ -n ${execs[$target]} ]] ||
    execs[$target]=$(grep -ao '^#[0-9]*' "$log" | tail -n 1 | tr -d '#')
  rates[$target]=$(grep -a '^stat::average_exec_per_sec:' "$log" |
                   awk '{print $2}' | tail -n 1)
  corpus[$target]=$(grep -ao 'corp: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  if [[ $status -ne 0 || $(reproducers "$artifacts" | wc -l) -gt $before ]]; then
    local kind
    kind=$(grep -aoE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer): [a-zA-Z-]+|runtime error|Assertion .* failed|LLVM ERROR' "$log" |
           head -n 1)
    found[$target]="${kind:-exit status $status}"
    failed=$((failed + 1))
    echo "$target: FOUND ${found[$target]} (log: $log)" >&2
    grep -a -m 1 -A 30 -E 'ERROR:|runtime error|Assertion|LLVM ERROR' "$log" >&2 || true
    local latest
    latest=$(reproducers "$artifacts" | xargs -r ls -t | head -n 1)
    if [[ -n $latest ]]; then
      echo "$target: reproducer $latest" >&2
      echo "$target: replay with $fuzzer $latest" >&2
    fi
  else
    found[$target]=none
  fi
  echo "$target: ${execs[$target]} executions, ${rates[$target]:-?} exec/s," \
       "corpus ${corpus[$target]:-?} inputs, findings: ${found[$target]}"
}

mkdir -p "$work/logs"
gather_seeds
for target in "${targets[@]}"; do
  echo "seeds $target: $(find "$work/seeds/$target" -type f | wc -l)"
done

total_weight=0
for target in "${targets[@]}"; do total_weight=$((total_weight + weight[$target])); done
declare -A budget=()
for target in "${targets[@]}"; do
  if [[ $campaign -eq 1 ]]; then
    budget[$target]=$((seconds * weight[$target] / total_weight))
    [[ ${budget[$target]} -gt 0 ]] || budget[$target]=1
  else
    budget[$target]=$seconds
  fi
done

fuzz_start=$SECONDS
for target in "${targets[@]}"; do
  fuzz_target "$target" "${budget[$target]}"
done
fuzz_time=$((SECONDS - fuzz_start))

#===- Summary -------------------------------------------------------------===#
summary=$work/summary.md
{
  echo "| target | seconds | executions | exec/s | corpus | findings |"
  echo "|---|---:|---:|---:|---:|---|"
  total_execs=0
  for target in "${targets[@]}"; do
    echo "| commopt-$target-fuzzer | ${budget[$target]} | ${execs[$target]:-0}" \
         "| ${rates[$target]:-?} | ${corpus[$target]:-?} | ${found[$target]:-none} |"
    total_execs=$((total_execs + ${execs[$target]:-0}))
  done
  echo "| all | $fuzz_time | $total_execs | | | $failed target(s) with findings |"
} >"$summary"
echo "== fuzz summary ($(date -u +%Y-%m-%d), $(nproc) cores; $summary)"
cat "$summary"
[[ $failed -eq 0 ]]
