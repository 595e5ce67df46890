#!/usr/bin/env bash
# Sets up ddp on a Debian 12 machine: installs the Debian packages that are
# missing (and runs `apt-get update` only then), configures and builds.
# Idempotent and quiet when everything is already in place.
#
#   utils/setup.sh                 packages + Release build in build/
#   utils/setup.sh --sanitize      packages + the clang ASan/UBSan build, with
#                                  the fuzz targets, in build-asan/
#   utils/setup.sh --sanitize T... the same, building only the ninja targets T
#   utils/setup.sh --packages-only
#
# Environment: DDP_JOBS (parallel build jobs, default 2); DDP_WITH_TORCH=1 also
# installs python3-torch (~320 packages, ~260 MiB download) for the lit
# feature `torch` (test/Bucketing/pytorch-random-inventories.test).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=release
case "${1:-}" in
  --sanitize) mode=sanitize ;;
  --packages-only) mode=packages ;;
  "") ;;
  *) echo "usage: utils/setup.sh [--sanitize [TARGET...]|--packages-only]" >&2; exit 2 ;;
esac
targets=("${@:2}")
[[ $mode == sanitize ]] || ((${#targets[@]} == 0)) ||
  { echo "usage: utils/setup.sh [--sanitize [TARGET...]|--packages-only]" >&2; exit 2; }

packages=(
  cmake ninja-build g++ python3
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libopenmpi-dev openmpi-bin
  libgtest-dev
  # The CPU backend's GEMMs in runs that measure (docs/Runtime.md, "GEMM").
  libopenblas-dev
  ccache
  # test/Sim/timeline-svg.test renders the timeline SVGs.
  librsvg2-bin
  # utils/fuzz.sh: libFuzzer needs clang and its runtime libraries.
  clang-22 libclang-rt-22-dev
)
[[ ${DDP_WITH_TORCH:-0} == 1 ]] && packages+=(python3-torch)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[[ $mode == packages ]] && exit 0

jobs=${DDP_JOBS:-2}
if [[ $mode == sanitize ]]; then
  build=build-asan
  # One clang build for the sanitized tests and the fuzzers (CMakeLists.txt):
  # a GCC RelWithDebInfo ASan build and a clang fuzz build had compiled
  # everything twice. -O1 with line tables is what libFuzzer recommends and
  # compiles much faster than -O2 -g. NDEBUG as Debian's LLVM/MLIR were
  # built: without it llvm/ADT/Statistic.h selects TrackingStatistic while
  # libMLIRPass was built with NoopStatistic, and every pass statistic reads
  # uninitialised memory.
  config=(-DCMAKE_BUILD_TYPE=None
          -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
          "-DCMAKE_C_FLAGS=-O1 -gline-tables-only -DNDEBUG"
          "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only -DNDEBUG"
          -DDDP_SANITIZE=ON -DDDP_FUZZ=ON
          # No GPU runs its CUDA backend; the Release build compiles and
          # links it. nvcc's kernels were a minute of this build's CPU.
          -DDDPRT_ENABLE_CUDA=OFF)
else
  build=build
  config=(-DCMAKE_BUILD_TYPE=Release)
fi

# ccache lets a second build tree (the sanitizer build, a git worktree) reuse
# the objects of the first instead of compiling MLIR-heavy files again.
# With precompiled headers (CMakeLists.txt) ccache needs to be told that
# a header's timestamps and __DATE__ do not change what it compiles.
config+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
         "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache")
# Both test builds check every storage plan the lowering makes.
config+=(-DDDP_VALIDATE_STORAGE=ON)

# A build-asan/ configured before it became the clang fuzz build is GCC's:
# CMake cannot change its compiler, so it is configured again from scratch.
if [[ $mode == sanitize && -f $build/CMakeCache.txt ]] &&
   ! grep -q '^DDP_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "setup: $build/ is the old GCC sanitizer build; configuring it again with clang"
  rm -rf "$build"
fi
if [[ ! -f $build/build.ninja ]]; then
  cmake -G Ninja -S . -B "$build" "${config[@]}" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; echo "setup: cmake failed (log above)" >&2; exit 1; }
  grep -E "^-- ddp:" "$build.configure.log" || true
  rm -f "$build.configure.log"
fi
ninja -C "$build" -j"$jobs" --quiet "${targets[@]}"
