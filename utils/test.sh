#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds,
# runs lit and CTest in the Release build, then again in the sanitizer build
# (build-asan/: clang, AddressSanitizer + UndefinedBehaviorSanitizer and
# libFuzzer's coverage; there the integration tests are a slice: the long
# mpirun matrices marked `UNSUPPORTED: sanitized` run in the Release stage
# only), and finally a bounded run of each libFuzzer target from the same
# build (utils/fuzz.sh --quick, 5 s each; docs/Fuzzing.md). One build serves
# the sanitized tests and the fuzzers: it compiled in 15 minutes from a cold
# cache on this 2-core machine, where a GCC ASan build and a separate clang
# fuzz build had taken about 35 and 21.
#
#   utils/test.sh               everything
#   utils/test.sh --no-sanitize only the Release build (no ASan, no fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
[[ "${1:-}" == --no-sanitize ]] && sanitize=0

lit=/usr/lib/llvm-22/bin/lit

run_suite() {
  local build=$1
  echo "== lit ($build)"
  "$lit" -sv "$build/test"
  echo "== ctest ($build)"
  # lit already ran above; CTest runs everything else (unit tests, MPI tests).
  ctest --test-dir "$build" --output-on-failure -E '^lit$'
}

start=$SECONDS
utils/setup.sh
run_suite build

if ((sanitize)); then
  utils/setup.sh --sanitize
  # LLVM's BumpPtrAllocator poisons its slabs only when the code including
  # its header is built with ASan; the Debian LLVM/MLIR libraries are not,
  # so their uninstrumented copies would trip over our instrumented ones.
  export ASAN_OPTIONS="allow_user_poisoning=0:detect_stack_use_after_return=0"
  # Leaks inside OpenMPI/hwloc are theirs, not ours.
  export LSAN_OPTIONS="suppressions=$PWD/utils/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  run_suite build-asan
  echo "== fuzz (build-asan)"
  utils/fuzz.sh --quick
fi
echo "== all tests passed in $((SECONDS - start)) s"
