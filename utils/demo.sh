#!/usr/bin/env bash
# The main job, from a fresh clone: installs what is missing and builds, then
# the whole story on a small GPT preset, on this machine's CPU with 2 MPI
# ranks:
#   1. import the `tiny` preset (data-parallel over 2 ranks),
#   2. schedule it: cost-model-optimal buckets, reductions overlapped,
#   3. print the simulator's predicted step for this machine,
#   4. run the unscheduled and the scheduled step side by side with mpirun and
#      compare every parameter bitwise after each step (--verify, which
#      multiplies with the fixed-order GEMM kernel that the comparison needs),
#   5. run them again in one run to time them (--compare-speed: OpenBLAS
#      GEMMs, what the cpu-mpi-2core profile was measured with), and print
#      each program's measured step time next to the prediction.
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
# The runtime keeps OpenBLAS to one thread per rank (docs/Runtime.md, "GEMM"):
# the two ranks already fill the two cores.

set -x
"$bin/ddp-import" --preset=tiny --set tensor_model_parallel_size=1 -o "$out/tiny.mlir"
"$bin/ddp-opt" "$out/tiny.mlir" --ddp-schedule="policy=auto hw=$hw" \
  -o "$out/tiny-scheduled.mlir"
"$bin/ddp-opt" "$out/tiny-scheduled.mlir" --ddp-print-bucket-layout -o /dev/null
"$bin/ddp-opt" "$out/tiny-scheduled.mlir" -o /dev/null \
  --ddp-simulate="hw=$hw trace=$out/tiny.predicted.json timeline=$out/tiny.predicted.svg"
"${mpirun[@]}" "$bin/ddp-run" "$out/tiny.mlir" --scheduled="$out/tiny-scheduled.mlir" \
  --verify --steps=3
"${mpirun[@]}" "$bin/ddp-run" "$out/tiny.mlir" --scheduled="$out/tiny-scheduled.mlir" \
  --compare-speed --steps=30 --predict --hw=$hw | tee "$out/speed.txt"
# The trace on its own run: recording it costs about a microsecond a kernel,
# which the timing above leaves out.
"${mpirun[@]}" "$bin/ddp-run" "$out/tiny-scheduled.mlir" --steps=3 \
  --trace="$out/tiny.measured.json" >/dev/null
set +x

# The prediction is worth something only if it is close and ranks the two
# programs as the measurement does; say so either way (a loaded machine
# moves the measurement, docs/ddp-run.md).
awk -v hw="$hw" '
  $2 == "measured" && $5 == "predicted" {
    measured[$1] = $3; predicted[$1] = $6
    ratio = $3 / $6
    if (ratio < 0.9 || ratio > 1.1) off = off " " $1
  }
  END {
    if (!("unscheduled" in measured) || !("scheduled" in measured)) exit 1
    mf = 1 - measured["scheduled"] / measured["unscheduled"]
    pf = 1 - predicted["scheduled"] / predicted["unscheduled"]
    printf "demo: the schedule is predicted %.1f%% faster and measured %.1f%% faster\n", 100 * pf, 100 * mf
    if (off != "") printf "demo: measured/predicted is more than 10%% off for:%s (an idle machine gives 0.9-1.1; a loaded one does not)\n", off
    else print "demo: measured/predicted within 10% for both programs on " hw
    if ((mf > 0) != (pf > 0)) print "demo: the measurement does not rank the two programs as the prediction does"
    print "demo: 2 ranks and their communication threads share 2 cores here, so overlap cannot hide communication (measured: docs/CostModel.md, cpu-mpi-2core); the schedule saves only collectives and their latency, a difference of a few percent that this machine'"'"'s noise can reverse"
  }' "$out/speed.txt"
