#!/usr/bin/env bash
# The GPU check (issue 32), in one command, on a machine with a GPU, CUDA,
# NCCL, MPI, CMake and Ninja but no MLIR and no GoogleTest. Its input is the
# folder utils/gpu-prepare.sh fills where MLIR is (steps compiled ahead of
# time, the prediction, Debian's GoogleTest package).
#
#   utils/gpu-check.sh [PREPARED_DIR] [LOG_DIR]    # defaults: .gpu, $OUT or /tmp/gpu-check
#
# Builds libddprt, its tests and the launcher (cmake -S runtime), then runs
#   1. the runtime's CUDA test suite and its unit tests;
#   2. every prepared step on the CUDA and on the CPU backend for 1, 2 and 5
#      steps, comparing the parameters bitwise (GEMMs in the fixed order,
#      --gemm=fixed-order, and with cuBLAS, where only a difference is shown;
#      at 2 steps also on bounded values, --data=bounded, as --verify runs);
#      that the timed steps' gradients stay finite on the timing data;
#   3. llama2-7b (2 layers) measured against the simulator's prediction, for
#      the step and for each category of op, on fractional data
#      (--data=fractions: a GPU runs GEMMs on the default small integers
#      faster than on real values), over 100 steps (the sustained clock);
#      the host's time per op, graph launches issued back to back; what the
#      recorded graph holds (DDPRT_GRAPH_DOT); then, for information, the
#      same step with 8 layers;
#   4. the dispatch benchmark, eager and as one CUDA graph;
#   5. the bandwidth of the compute stand-in's two paths and of Adam, and a
#      llama2-7b GEMM back to back and between stand-ins (with the SM clock
#      and power drawn);
#   6. that GEMM alone for 4 s, with the SM clock meanwhile;
# each bitwise comparison of 2 and 5 steps and the llama2-7b step also run
# as a CUDA graph (ddp-launch --graph).
# and prints one table. Exit status 1 when a check fails.
set -uo pipefail
cd "$(dirname "$0")/.."
prepared=$(cd "${1:-.gpu}" && pwd) || {
  echo "gpu-check: no prepared folder '${1:-.gpu}' (run utils/gpu-prepare.sh where MLIR is)" >&2
  exit 2
}
logs=${2:-${OUT:-/tmp/gpu-check}}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
rt=${DDP_GPU_BUILD:-/tmp/ddp-gpu-runtime}
mpirun=(mpirun -np 1 --allow-run-as-root --oversubscribe --bind-to none)
rows=()
failed=0
row() { # check, result (pass/FAIL/info), detail
  rows+=("$(printf '| %-44s | %-4s | %s |' "$1" "$2" "$3")")
  echo "== $1: $2 $3"
  [[ $2 == FAIL ]] && failed=1
  return 0
}
SECONDS=0
# The SM clock and the power drawn while a command runs (nvidia-smi every
# 50 ms): a GPU under its power limit clocks down, and GEMMs run slower.
# With the temperature and the active clock event reasons (nvidia-smi's
# bit mask: 0x4 software power cap, 0x20/0x40 thermal, 0x80 power brake)
# where this nvidia-smi knows them.
sampler=
fields=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits >/dev/null 2>&1 ||
  fields=clocks.sm,power.draw
sample_start() {
  nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits \
    -lms 50 >"$logs/clocks.$1.csv" 2>/dev/null &
  sampler=$!
}
sample_stop() { # NAME: the mean clock and power, over all samples and the last half
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  awk -F', *' '$1 + 0 > 0 {n++; c[n] = $1; p[n] = $2; t[n] = $3; r[n] = $4}
    END {
      if (!n) exit
      lo = c[1]
      for (i = 1; i <= n; i++) {ca += c[i]; pa += p[i]; if (c[i] < lo) lo = c[i]}
      h = int(n / 2) + 1
      for (i = h; i <= n; i++) {cl += c[i]; pl += p[i]; tl += t[i]; if (r[i] != "") seen[r[i]]++}
      m = n - h + 1
      printf "SM clock %.0f MHz mean (%.0f lowest), %.0f W mean, %d samples; last half %.0f MHz, %.0f W", ca / n, lo, pa / n, n, cl / m, pl / m
      if (t[n] != "") printf ", %.0f C", tl / m
      for (k in seen) if (seen[k] > best) {best = seen[k]; reason = k}
      if (reason != "") printf ", reasons %s in %d of %d", reason, best, m
    }' "$logs/clocks.$1.csv"
}

gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv,noheader 2>&1 | head -1)
echo "device: $gpu"

# GoogleTest, unpacked from Debian's package (headers, static libraries and
# its CMake package).
gtest=/tmp/ddp-gtest
rm -rf "$gtest" && mkdir -p "$gtest"
for deb in "$prepared"/*.deb; do dpkg -x "$deb" "$gtest"; done
gtest_dir=$(dirname "$(find "$gtest" -name GTestConfig.cmake | head -1)")

if cmake -S runtime -B "$rt" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CUDA_ARCHITECTURES=90 -DGTest_DIR="$gtest_dir" \
     >"$logs/cmake.log" 2>&1 &&
   ninja -C "$rt" >"$logs/build.log" 2>&1; then
  row "build (cmake -S runtime)" pass "${SECONDS} s, $(grep -o 'CUDA backend [a-z]*' "$logs/cmake.log")"
else
  row "build (cmake -S runtime)" FAIL "see build.log"
  tail -30 "$logs/cmake.log" "$logs/build.log"
  exit 1
fi

# 1. The CUDA test suite and the unit tests, run directly for their counts.
for suite in ddprt-cuda-tests ddprt-unit-tests; do
  start=$SECONDS
  "${mpirun[@]}" "$rt/unittests/$suite" --gtest_color=no >"$logs/$suite.log" 2>&1
  status=$?
  summary="$(grep -E '^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?' "$logs/$suite.log" | tr -s ' ' | tr '\n' ';') $((SECONDS - start)) s"
  if [[ $status -ne 0 ]]; then
    row "$suite" FAIL "$summary $(grep -E '^\[  FAILED  \] [A-Z]' "$logs/$suite.log" | head -5 | tr '\n' ';')"
    grep -B5 -A15 'Failure' "$logs/$suite.log" | head -80
  elif grep -q 'SKIPPED \] [0-9]' "$logs/$suite.log"; then
    row "$suite" FAIL "$summary (skipped: $(grep -m1 -o 'CUDA backend unavailable.*' "$logs/$suite.log"))"
  else
    row "$suite" pass "$summary"
  fi
done

# 2. CUDA against CPU, bitwise, on the prepared steps.
link() {
  cc -o "$rt/$1" "$prepared/$1.o" "$rt/launcher/libddp_launch.a" -L"$rt" \
    -lddprt -Wl,-rpath,"$rt"
}
for step in tiny tiny-moe mixed; do
  link "$step" || { row "link $step" FAIL ""; continue; }
  for steps in 1 2 5; do
    # The reference multiplies with the fixed-order kernel, as the CUDA runs
    # that must equal it do (the CPU backend's default is OpenBLAS).
    if ! "${mpirun[@]}" "$rt/$step" --backend=cpu --steps=$steps --gemm=fixed-order \
         --dump-params="$logs/$step.$steps.cpu.txt" >>"$logs/bitwise.log" 2>&1; then
      row "bitwise $step, $steps steps" FAIL "the CPU run failed (bitwise.log)"
      continue
    fi
    variants=(fixed-order cublas)
    [[ $steps -gt 1 ]] && variants+=("fixed-order --graph")
    for variant in "${variants[@]}"; do
      gemm=${variant%% *}
      extra=${variant#"$gemm"}
      name="bitwise $step, $steps steps, gemm=$gemm$extra"
      if ! "${mpirun[@]}" "$rt/$step" --backend=cuda --steps=$steps \
           --gemm=$variant --dump-params="$logs/$step.$steps.$gemm.txt" \
           >>"$logs/bitwise.log" 2>&1; then
        row "$name" FAIL "the run failed (bitwise.log)"
        continue
      fi
      diff=$(python3 utils/gpu/compare_dumps.py "$logs/$step.$steps.cpu.txt" \
        "$logs/$step.$steps.$gemm.txt" 2>&1)
      status=$?
      if [[ $diff == equal* ]]; then
        row "$name" pass "$diff"
      elif [[ $gemm == cublas && $status -eq 1 && $diff == *differ* ]]; then
        row "$name" info "$diff"
      else
        row "$name" FAIL "$diff"
      fi
    done
    # Bounded values (what ddp-run --verify runs with): the GEMM kernel's and
    # the stand-in's element-wise pass bound each sum on both backends.
    if [[ $steps -eq 2 ]]; then
      name="bitwise $step, $steps steps, gemm=fixed-order, data=bounded"
      failed=
      for backend in cpu cuda; do
        "${mpirun[@]}" "$rt/$step" --backend=$backend --steps=$steps \
          --gemm=fixed-order --data=bounded \
          --dump-params="$logs/$step.$steps.bounded.$backend.txt" \
          >>"$logs/bitwise.log" 2>&1 || { failed=$backend; break; }
      done
      if [[ -n $failed ]]; then
        row "$name" FAIL "the $failed run failed (bitwise.log)"
        continue
      fi
      diff=$(python3 utils/gpu/compare_dumps.py \
        "$logs/$step.$steps.bounded.cpu.txt" \
        "$logs/$step.$steps.bounded.cuda.txt" 2>&1)
      if [[ $diff == equal* ]]; then
        row "$name" pass "$diff"
      else
        row "$name" FAIL "$diff"
      fi
    fi
  done
  rm -f "$logs"/"$step".*.txt
done

# 2b. The timing data stays finite: the timed steps with every gradient
# bucket checked for NaN and Inf (check-for-nan-in-grad), 3 steps on the
# fractional data. A step that overflows runs every later step on NaNs,
# whose GEMMs a GPU runs faster and at less power than real values'.
for step in llama llama8; do
  layers=2; [[ $step == llama8 ]] && layers=8
  if [[ ! -f $prepared/$step-finite.o ]]; then
    row "llama2-7b $layers layers: gradients finite, 3 steps" FAIL \
      "not prepared: rerun utils/gpu-prepare.sh"
  elif ! link "$step-finite"; then
    row "link $step-finite" FAIL ""
  elif "${mpirun[@]}" "$rt/$step-finite" --backend=cuda --data=fractions \
       --steps=3 >"$logs/$step.finite.log" 2>&1; then
    row "llama2-7b $layers layers: gradients finite, 3 steps" pass \
      "every bucket checked (check-for-nan-in-grad), fractional data"
  else
    row "llama2-7b $layers layers: gradients finite, 3 steps" FAIL \
      "$(grep -m1 -o 'non-finite.*' "$logs/$step.finite.log" | cut -c1-160)"
  fi
done

# 3. llama2-7b, 2 layers: measured against the prediction for this GPU.
case $gpu in
  *H200*) hw=h200-sxm-ib400 ;;
  *H100*) hw=h100-sxm-ib400 ;;
  *) hw= ;;
esac
if [[ -z $hw || ! -f $prepared/llama.predicted.$hw.txt ]]; then
  row "llama2-7b 2 layers: prediction" FAIL "none for '$gpu' (utils/gpu-prepare.sh predicts an H100 and an H200)"
elif link llama; then
  row "llama2-7b 2 layers: prediction" info "hardware profile $hw"
  prediction=$prepared/llama.predicted.$hw
  predicted=$(grep -o 'step time *[0-9.]* ms' "$prediction.txt" | awk '{print $3}')
  # The ops of one step, as the simulator counts them (compute and
  # collectives), for the host's time per op.
  ops=$(python3 -c 'import json, sys; print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"))' "$prediction.json")
  median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  # A training run keeps the GPU busy for hours; a GPU boosts its clock for
  # its first second or so of load, until power and heat bring it down. So
  # each run lasts about 5 s (100 steps): its steps 3-6 show the boosted
  # clock, its last 20 the sustained one, which the check compares with the
  # prediction (the profiles are calibrated on sustained GEMMs).
  steps=100
  for mode in eager graph; do
    flag=""; [[ $mode == graph ]] && flag=--graph
    sample_start "llama.$mode"
    DDPRT_GRAPH_DOT="$logs/llama.graph.dot" \
      "${mpirun[@]}" -x DDPRT_GRAPH_DOT "$rt/llama" --backend=cuda --data=fractions --steps=$steps $flag \
      >"$logs/llama.$mode.log" 2>&1
    row "llama2-7b 2 layers: clocks, $mode" info "$(sample_stop "llama.$mode")"
    times() { # first last: the steps' times
      grep -o 'step [0-9]*: [0-9.]* ms' "$logs/llama.$mode.log" |
        awk -v a="$1" -v b="$2" '$2 + 0 >= a && $2 + 0 <= b {print $3}'
    }
    boosted=$(times 3 6 | median)
    measured=$(times $((steps - 19)) $steps | median)
    if [[ -z $measured ]]; then
      row "llama2-7b 2 layers: step, $mode" FAIL "the run failed: $(grep -m1 error "$logs/llama.$mode.log")"
      continue
    fi
    ratio=$(awk -v m="$measured" -v p="$predicted" 'BEGIN {printf "%.3f", m / p}')
    verdict=$(awk -v r="$ratio" 'BEGIN {print (r >= 0.9 && r <= 1.1) ? "pass" : "FAIL"}')
    row "llama2-7b 2 layers: step, $mode (median of $((steps - 19))-$steps)" "$verdict" \
      "measured $measured ms, predicted $predicted ms, ratio $ratio (steps 3-6: $boosted ms, $(awk -v m="$boosted" -v p="$predicted" 'BEGIN {printf "%.3f", m / p}'))"
    host=$(grep -o 'issued in [0-9.]* ms' "$logs/llama.$mode.log" | tail -20 | awk '{print $3}' | median)
    perop=$(awk -v h="$host" -v n="$ops" 'BEGIN {printf "%.3f", h * 1000 / n}')
    row "llama2-7b 2 layers: host time per op, $mode, each step waited for" info \
      "$perop us ($host ms to issue $ops ops, median of the last 20)"
  done
  # What the graph holds, by kind of node (cudaGraphDebugDotPrint's labels).
  if [[ -f $logs/llama.graph.dot ]]; then
    row "llama2-7b 2 layers: graph nodes" info "$(awk '/label="[0-9]+$/ {getline; print $1}' "$logs/llama.graph.dot" |
      awk '{k = $1 ~ /^[A-Z_]+$/ ? $1 : "kernel"; n[k]++; t++}
        END {printf "%d:", t; for (k in n) printf " %d %s", n[k], k}')"
  fi
  # Amortised, as a training loop issues: steps back to back, waited for
  # once at the end. The driver queues about four steps of this graph
  # ahead of the GPU (H100, 2026-11-27: steps 2-6 issued in 0.10-0.13 ms
  # each); from then on each launch waits for a step to end, which is the
  # GPU's time, not the host's. So the host's time is that of steps 3-5.
  "${mpirun[@]}" "$rt/llama" --backend=cuda --data=fractions --steps=9 --graph \
    --sync=end >"$logs/llama.graph-end.log" 2>&1
  issued() { # first last: the steps' times to issue
    grep -o 'step [0-9]*: issued in [0-9.]* ms' "$logs/llama.graph-end.log" |
      awk -v a="$1" -v b="$2" '$2 + 0 >= a && $2 + 0 <= b {print $5}'
  }
  host=$(issued 3 5 | median)
  if [[ -z $host ]]; then
    row "llama2-7b 2 layers: host time per op, graph" FAIL "the run failed: $(grep -m1 error "$logs/llama.graph-end.log")"
  else
    perop=$(awk -v h="$host" -v n="$ops" 'BEGIN {printf "%.3f", h * 1000 / n}')
    verdict=$(awk -v p="$perop" 'BEGIN {print (p < 1) ? "pass" : "FAIL"}')
    row "llama2-7b 2 layers: host time per op, graph, back to back" "$verdict" \
      "$perop us ($host ms to issue $ops ops, median of steps 3-5; steps 6-9 then wait for the GPU: $(issued 6 9 | tr '\n' ' ')ms)"
  fi
  # The categories from the last of 100 traced steps: at the sustained clock.
  sample_start llama.trace
  "${mpirun[@]}" "$rt/llama" --backend=cuda --data=fractions --steps=$steps \
    --trace="$logs/llama.trace.json" >"$logs/llama.trace.log" 2>&1
  status=$?
  row "llama2-7b 2 layers: clocks, traced" info "$(sample_stop llama.trace)"
  if [[ $status -ne 0 ]]; then
    row "llama2-7b 2 layers: traced run" FAIL "$(grep -m1 error "$logs/llama.trace.log")"
  elif ! python3 utils/gpu/trace_categories.py "$logs/llama.trace.json" \
       "$prediction.json" --rows \
       >"$logs/llama.categories.txt" 2>&1; then
    row "llama2-7b 2 layers: categories" FAIL "$(tail -1 "$logs/llama.categories.txt")"
  fi
  grep -v '^row|' "$logs/llama.categories.txt"
  while IFS='|' read -r _ cat ops m p r; do
    verdict=$(awk -v r="$r" 'BEGIN {print (r >= 0.9 && r <= 1.1) ? "pass" : "FAIL"}')
    row "llama2-7b 2 layers: $cat" "$verdict" "$ops ops, measured $m ms, predicted $p ms, ratio $r"
  done < <(grep '^row|' "$logs/llama.categories.txt")
else
  row "link llama" FAIL ""
fi

# 3b. Information: llama2-7b with 8 layers, whose GEMMs keep the GPU busier
# (a larger share of the step) than 2 layers' do: the step and each
# category at the sustained clock, against the same profile.
if [[ -n $hw && -f $prepared/llama8.predicted.$hw.txt ]] && link llama8; then
  prediction8=$prepared/llama8.predicted.$hw
  predicted8=$(grep -o 'step time *[0-9.]* ms' "$prediction8.txt" | awk '{print $3}')
  sample_start llama8
  "${mpirun[@]}" "$rt/llama8" --backend=cuda --data=fractions --steps=40 --graph \
    >"$logs/llama8.graph.log" 2>&1
  clocks=$(sample_stop llama8)
  measured8=$(grep -o 'step [0-9]*: [0-9.]* ms' "$logs/llama8.graph.log" | tail -10 | awk '{print $3}' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
  row "llama2-7b 8 layers: step, graph (median of 31-40)" info \
    "measured ${measured8:-none} ms, predicted $predicted8 ms, ratio $(awk -v m="$measured8" -v p="$predicted8" 'BEGIN {printf "%.3f", m / p}'); $clocks"
  "${mpirun[@]}" "$rt/llama8" --backend=cuda --data=fractions --steps=30 \
    --trace="$logs/llama8.trace.json" >"$logs/llama8.trace.log" 2>&1 &&
    python3 utils/gpu/trace_categories.py "$logs/llama8.trace.json" \
      "$prediction8.json" --rows >"$logs/llama8.categories.txt" 2>&1
  grep -v '^row|' "$logs/llama8.categories.txt"
  while IFS='|' read -r _ cat ops m p r; do
    row "llama2-7b 8 layers: $cat" info "$ops ops, measured $m ms, predicted $p ms, ratio $r"
  done < <(grep '^row|' "$logs/llama8.categories.txt")
  rm -f "$logs/llama8.trace.json"
fi

# 4. Dispatch: host time per op, eager and replayed as a CUDA graph.
if "${mpirun[@]}" "$rt/bench/ddprt-bench-cuda-dispatch" >"$logs/dispatch.log" 2>&1; then
  cat "$logs/dispatch.log"
  while read -r line; do row "dispatch: ${line%%|*}" info "${line#*|}"; done < \
    <(grep '^row|' "$logs/dispatch.log" | cut -d'|' -f2-)
else
  row "dispatch benchmark" FAIL "$(tail -3 "$logs/dispatch.log" | tr '\n' ' ')"
fi

# 5. The stand-in's and Adam's bandwidth, for the categories above.
sample_start stand-in
"${mpirun[@]}" "$rt/bench/ddprt-bench-cuda-stand-in" >"$logs/stand-in.log" 2>&1
status=$?
row "bandwidth benchmark: clocks" info "$(sample_stop stand-in)"
if [[ $status -eq 0 ]]; then
  grep -v '^row|' "$logs/stand-in.log"
  while read -r line; do row "bandwidth: ${line%%|*}" info "${line#*|}"; done < \
    <(grep '^row|' "$logs/stand-in.log" | cut -d'|' -f2-)
else
  row "stand-in benchmark" FAIL "$(tail -3 "$logs/stand-in.log" | tr '\n' ' ')"
fi

# 6. GEMMs alone for 4 s, the clock sampled meanwhile: the GEMMs' rate and
# clock under the power limit, against the step's (its GEMMs sit between
# memory-bound kernels).
sample_start gemms
if "${mpirun[@]}" "$rt/bench/ddprt-bench-cuda-stand-in" --gemms-only \
     >"$logs/gemms.log" 2>&1; then
  clocks=$(sample_stop gemms)
  row "gemm 4096x12288x4096 bf16, 4000 back to back" info \
    "$(grep -m1 '^row|gemm' "$logs/gemms.log" | cut -d'|' -f3); $clocks"
else
  sample_stop gemms >/dev/null
  row "sustained gemm benchmark" FAIL "$(tail -3 "$logs/gemms.log" | tr '\n' ' ')"
fi

echo
echo "ddp GPU check, $(date -u +%Y-%m-%d), $gpu, ${SECONDS} s"
echo
echo "| check | result | detail |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
printf '%s\n' "${rows[@]}" >"$logs/table.md"
exit $failed
