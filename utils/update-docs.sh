#!/usr/bin/env bash
# Regenerates docs/Dialects/DDP.md from the ODS descriptions.
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build ddp-docs --quiet
mkdir -p docs/Dialects
cp build/docs/Dialects/DDP.md docs/Dialects/DDP.md
