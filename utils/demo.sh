#!/usr/bin/env bash
# The main job, from a fresh clone: installs what is missing, builds, and
# runs ddp on an example step and on an imported GPT-3 175B step.
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh
set -x
build/bin/ddp-opt examples/gpt-block.mlir
# Import the GPT-3 175B step (TP 8, DP 16, 8 microbatches) and summarise it.
build/bin/ddp-import --preset=gpt3-175b -o build/gpt3-175b.mlir
build/bin/ddp-opt -ddp-step-stats build/gpt3-175b.mlir -o /dev/null
