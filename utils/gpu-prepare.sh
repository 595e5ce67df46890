#!/usr/bin/env bash
# Prepares what utils/gpu-check.sh needs on a GPU machine that has CUDA,
# NCCL, MPI, CMake and Ninja but no MLIR and no GoogleTest: the steps it
# runs, compiled here ahead of time (ddp-run --emit-object), the simulator's
# prediction of the timed one, and Debian's GoogleTest package.
#
#   utils/gpu-prepare.sh [BUILD_DIR] [OUT_DIR]     # defaults: build .gpu
#
# Then, on the GPU machine, in the repository root:
#   utils/gpu-check.sh .gpu
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.gpu}
bin=$build/bin
mkdir -p "$out"
rm -f "$out"/*.o "$out"/*.mlir "$out"/*.json "$out"/*.txt

# The steps compared bitwise, CUDA against CPU: one rank (one GPU is one
# NCCL rank), so no data parallelism; a mixed bf16/f32 inventory.
"$bin/ddp-import" --preset=tiny --set data_parallel_size=1 \
  --set tensor_model_parallel_size=1 -o "$out/tiny.mlir"
"$bin/ddp-import" --preset=tiny-moe --set data_parallel_size=1 \
  --set tensor_model_parallel_size=1 --set expert_model_parallel_size=1 \
  -o "$out/tiny-moe.mlir"
"$bin/ddp-import" --inventory=utils/gpu/mixed-inventory.json -o "$out/mixed.mlir"
# The step timed against the prediction: llama2-7b at full width, 2 layers,
# 2 microbatches of 4096 tokens.
"$bin/ddp-import" --preset=llama2-7b --set num_layers=2 \
  --set num_microbatches=2 --set data_parallel_size=1 -o "$out/llama.mlir"
# The same with 8 layers, for information: GEMMs a larger share of the step.
"$bin/ddp-import" --preset=llama2-7b --set num_layers=8 \
  --set num_microbatches=2 --set data_parallel_size=1 -o "$out/llama8.mlir"
for step in tiny tiny-moe mixed llama llama8; do
  "$bin/ddp-run" "$out/$step.mlir" --emit-object="$out/$step.o"
done
# The timed steps again with every gradient bucket checked for NaN and Inf
# (Megatron's check_for_nan_in_grad): the check runs them on the timing
# data first, since a GPU multiplies NaNs faster than numbers.
for step in llama llama8; do
  "$bin/ddp-run" "$out/$step.mlir" --emit-object="$out/$step-finite.o" \
    --pass-pipeline='builtin.module(func.func(ddp-assign-buckets{policy=megatron check-for-nan-in-grad=true},ddp-bucketize))'
done
# The prediction on each GPU the check may be given (it picks the one
# nvidia-smi names): an H200 streams memory 1.4 times as fast as an H100.
for hw in h100-sxm-ib400 h200-sxm-ib400; do
  for step in llama llama8; do
    "$bin/ddp-opt" "$out/$step.mlir" -o /dev/null \
      --ddp-simulate="hw=$hw trace=$out/$step.predicted.$hw.json report=$out/$step.report.$hw.json output=$out/$step.predicted.$hw.txt"
  done
done

# GoogleTest for the runtime's CUDA tests: Debian's package, unpacked there.
if ! ls "$out"/libgtest-dev_*.deb >/dev/null 2>&1; then
  (cd "$out" && apt-get download libgtest-dev) ||
    cp /var/cache/apt/archives/libgtest-dev_*.deb "$out"/
fi
ls -la "$out"
