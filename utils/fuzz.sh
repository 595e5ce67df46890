#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (docs/Fuzzing.md) in build-asan/, the
# sanitized build (clang-22 through ccache, everything instrumented with
# AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage), and
# runs each target on its seed corpus (fuzz/corpus/<target>/) for a bounded
# time or number of inputs.
#
#   utils/fuzz.sh --quick      a few seconds per target (utils/test.sh)
#   utils/fuzz.sh --runs=N     N inputs per target
#   utils/fuzz.sh --build-only
#
# Prints executions and failures per target and exits non-zero if any target
# failed. A failing input is saved as build-asan/crashes/<target>-crash-*;
# rerun it with build-asan/bin/<target> <file>. New corpus entries go to
# build-asan/corpus/<target>/ (the seeds in the tree stay as they are).
#
# Environment: DDP_JOBS (parallel build jobs, default 2), DDP_FUZZ_SECONDS
# (time per target with --quick, default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=
runs=0
case "${1:-}" in
  --quick) mode=quick ;;
  --runs=*) mode=runs; runs=${1#--runs=} ;;
  --build-only) mode=build ;;
  *) echo "usage: utils/fuzz.sh --quick|--runs=N|--build-only" >&2; exit 2 ;;
esac
[[ $runs =~ ^[0-9]+$ ]] || { echo "fuzz: --runs needs a number" >&2; exit 2; }

targets=(fuzz-parse-ir fuzz-schedule fuzz-model-config fuzz-param-inventory
         fuzz-hardware-profile)
build=build-asan

start=$SECONDS
# The sanitized test build is the fuzz build too (utils/setup.sh --sanitize).
utils/setup.sh --sanitize ddp-fuzzers
echo "== fuzz: built in $((SECONDS - start)) s"
[[ $mode == build ]] && exit 0

# As in utils/test.sh: the Debian LLVM/MLIR libraries are not instrumented,
# so their BumpPtrAllocator must not poison memory our code then touches.
export ASAN_OPTIONS="allow_user_poisoning=0:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

if [[ $mode == quick ]]; then
  limit=(-max_total_time="${DDP_FUZZ_SECONDS:-5}")
else
  limit=(-runs="$runs")
fi

failed=0
mkdir -p "$build/crashes"
for target in "${targets[@]}"; do
  corpus=$build/corpus/$target
  mkdir -p "$corpus"
  log=$build/$target.log
  status=0
  "$build/bin/$target" "${limit[@]}" -max_len=16384 -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$target-" \
    "$corpus" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if ((status)); then
    failed=$((failed + 1))
    echo "fuzz: $target: FAILED after ${executions:-?} executions (log: $log)"
    grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)" "$log" | head -5 || true
  else
    echo "fuzz: $target: ${executions:-?} executions, 0 failures"
  fi
done
echo "== fuzz: $((${#targets[@]} - failed)) of ${#targets[@]} targets passed in $((SECONDS - start)) s"
((failed == 0))
