#!/usr/bin/env bash
# The main job, from a fresh clone: installs what is missing, builds, and
# runs ddp on an example step.
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh
set -x
build/bin/ddp-opt examples/gpt-block.mlir
