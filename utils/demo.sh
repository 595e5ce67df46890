#!/usr/bin/env bash
# The main job, from a fresh clone: installs what is missing, builds, imports
# a small GPT preset and predicts its step on an H100 cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh
bin=build/bin
out=build/demo
mkdir -p "$out"
set -x
"$bin/ddp-import" --preset=tiny -o "$out/tiny.mlir"
"$bin/ddp-opt" "$out/tiny.mlir" \
  --ddp-simulate="hw=h100-sxm-ib400 dp=64 trace=$out/tiny.trace.json timeline=$out/tiny.svg" \
  -o /dev/null
