#!/usr/bin/env bash
# The installed package, as an embedder sees it (CTest `schedule-tool-installed`):
# installs BUILD into WORK/prefix, builds examples/schedule-tool against it
# with find_package(DDP), and checks that the tool, the installed ddp-opt and,
# where there are plugins, Debian's mlir-opt with the installed plugins
# schedule a step identically.
#
#   test-installed.sh BUILD WORK
set -euo pipefail
build=$1
work=$2
example=$(cd "$(dirname "$0")" && pwd)

# Installed and built afresh each time, in the same WORK so that the paths,
# and so ccache's keys, stay the same.
rm -rf "$work/prefix" "$work/build"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# Every ddp header an installed header includes is installed too.
include=$work/prefix/include
missing=$(grep -rhoE '#include "ddp/[^"]+"' "$include/ddp" | sed -E 's/#include "(.*)"/\1/' |
  sort -u | while read -r header; do [[ -f $include/$header ]] || echo "$header"; done)
if [[ -n $missing ]]; then
  echo "installed headers include headers that are not installed: $missing" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -G Ninja -S "$example" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >"$work/configure.log"
ninja -C "$work/build" -j2 >"$work/build.log"

bin=$work/prefix/bin
"$bin/ddp-import" --preset=tiny >"$work/step.mlir"
options="policy=megatron bucket-size=40000 use-distributed-optimizer overlap-param-gather"
"$bin/ddp-opt" "$work/step.mlir" --ddp-schedule="$options" >"$work/ddp-opt.mlir"
"$work/build/schedule-tool" "$work/step.mlir" --schedule="$options" \
  >"$work/schedule-tool.mlir"
diff -u "$work/ddp-opt.mlir" "$work/schedule-tool.mlir"
# The schedule did happen: buckets, asynchronous reduce-scatters, gathers.
grep -q 'ddp.bucket_pack' "$work/schedule-tool.mlir"
grep -q 'ddp.reduce_scatter.*async' "$work/schedule-tool.mlir"
grep -q 'ddp.all_gather.*async' "$work/schedule-tool.mlir"

plugins=$work/prefix/lib
if [[ -e $plugins/libDDPPassPlugin.so ]] && command -v mlir-opt-22 >/dev/null; then
  mlir-opt-22 --load-dialect-plugin="$plugins/libDDPDialectPlugin.so" \
    --load-pass-plugin="$plugins/libDDPPassPlugin.so" "$work/step.mlir" \
    --pass-pipeline="builtin.module(ddp-schedule{$options})" >"$work/mlir-opt.mlir"
  diff -u "$work/ddp-opt.mlir" "$work/mlir-opt.mlir"
fi
echo "schedule-tool, ddp-opt and mlir-opt agree on the installed package"
