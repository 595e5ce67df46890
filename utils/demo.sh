#!/usr/bin/env bash
# The main job, from a fresh clone: installs what is missing and builds, then
# the whole story on a small GPT preset, on this machine's CPU with 2 MPI
# ranks:
#   1. import the `tiny` preset (data-parallel over 2 ranks),
#   2. schedule it: cost-model-optimal buckets, reductions overlapped,
#   3. print the simulator's predicted step for this machine,
#   4. run the unscheduled and the scheduled step side by side with mpirun,
#      compare every parameter bitwise after each step (--verify), and print
#      the measured step time next to the prediction.
# Traces (Chrome trace JSON, open in https://ui.perfetto.dev) and an SVG of
# the predicted timeline are left in build/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
utils/setup.sh

bin=build/bin
out=build/demo
hw=cpu-mpi-2core
mkdir -p "$out"
mpirun=(mpirun -np 2 --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
# One BLAS thread per rank: the two ranks already fill the two cores.

set -x
"$bin/ddp-import" --preset=tiny --set tensor_model_parallel_size=1 -o "$out/tiny.mlir"
"$bin/ddp-opt" "$out/tiny.mlir" --ddp-schedule="policy=auto hw=$hw" \
  -o "$out/tiny-scheduled.mlir"
"$bin/ddp-opt" "$out/tiny-scheduled.mlir" --ddp-print-bucket-layout -o /dev/null
"$bin/ddp-opt" "$out/tiny-scheduled.mlir" -o /dev/null \
  --ddp-simulate="hw=$hw trace=$out/tiny.predicted.json timeline=$out/tiny.predicted.svg"
"${mpirun[@]}" "$bin/ddp-run" "$out/tiny.mlir" --scheduled="$out/tiny-scheduled.mlir" \
  --verify --steps=10 --predict --hw=$hw --trace="$out/tiny.measured.json"
