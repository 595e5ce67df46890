#!/usr/bin/env python3
"""Megatron's token dispatchers and overlaps, and auto, per MoE preset.

For mixtral-8x7b and qwen3-30b-a3b at two expert-parallel sizes each, on
the calibrated H100 and A100 profiles (bench/sim/*-calibrated.json), the
importer builds the step, ddp-schedule lays out the data-parallel side as
Megatron does (the distributed optimizer, overlapped reductions and
gathers), and ddp-simulate prices it. Five columns:
- the all-gather dispatcher (moe_token_dispatcher_type=allgather);
- the all-to-all dispatcher;
- the all-to-all dispatcher with Megatron's batch-level overlap
  (overlap_moe_expert_parallel_comm: ddp-combined-1f1b, the all-to-alls
  asynchronous); neither preset has shared experts, whose overlap Megatron
  does not run beside it;
- the same with Megatron's delay_wgrad_compute (the backward's weight
  gradients beside the all-to-alls, ddp-combined-1f1b
  delay-wgrad-compute);
- policy=auto on the all-to-all dispatcher's step: the buckets, whether
  to run the batch-level overlap and then whether to delay the weight
  gradients, chosen on the simulated step.
Per column the step, and the exposed dispatch communication: the time the
dispatch collectives are in flight while no compute runs (the all-to-alls;
for the all-gather dispatcher its gathers and reduce-scatters over
[ep, tp]), from the simulator's trace.

A second table: the all-to-all dispatcher with a shared expert, without
and with Megatron's moe_shared_expert_overlap (ddp-overlap-moe-comm), and
the step's whole exposed communication (the data-parallel part is the same
in both columns).
qwen3-30b-a3b has no shared expert, so the rows give it one 1536 wide (two
routed experts' width; not Qwen's configuration).

Usage: moe_dispatchers.py [BUILD_DIR]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
BIN = os.path.join(BUILD, "bin")
PROFILES = [("h100", os.path.join(HERE, "h100-sxm-ib400-calibrated.json")),
            ("a100", os.path.join(HERE, "a100-sxm-ib200-calibrated.json"))]
SCHEDULE = ("policy=megatron use-distributed-optimizer=true "
            "overlap-grad-reduce=true overlap-param-gather=true")
# (preset, expert-parallel size, data-parallel size): each preset's own
# layout and one with half the expert-parallel ranks.
ROWS = [("mixtral-8x7b", 8, 16), ("mixtral-8x7b", 4, 16),
        ("qwen3-30b-a3b", 16, 32), ("qwen3-30b-a3b", 8, 32)]


def union(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def exposed_ms(trace, dispatch):
    """Time (ms) that some dispatch collective is in flight and no compute
    runs: `dispatch(op, group)` says which collectives count."""
    comm, compute = [], []
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        interval = (e["ts"], e["ts"] + e["dur"])
        args = e.get("args", {})
        if e["cat"] == "compute":
            compute.append(interval)
        elif e["cat"] == "comm" and dispatch(args.get("op"),
                                             args.get("group")):
            comm.append(interval)
    busy = union(compute)
    total = 0.0
    for start, end in union(comm):
        covered = 0.0
        for b_start, b_end in busy:
            covered += max(0.0, min(end, b_end) - max(start, b_start))
        total += (end - start) - covered
    return total / 1000


def is_dispatch(op, group):
    return op == "ddp.all_to_all" or group in ("ep,tp", "ep")


def simulate(preset, ep, dp, dispatcher, profile, tmp, extra=(),
             schedule=SCHEDULE):
    step = os.path.join(tmp, "step.mlir")
    report = os.path.join(tmp, "report.json")
    trace = os.path.join(tmp, "trace.json")
    scheduled = os.path.join(tmp, "scheduled.mlir")
    sets = [f"expert_model_parallel_size={ep}", f"data_parallel_size={dp}",
            f"moe_token_dispatcher_type={dispatcher}", *extra]
    subprocess.run([os.path.join(BIN, "ddp-import"), f"--preset={preset}",
                    "--quiet", *[a for kv in sets for a in ("--set", kv)],
                    "-o", step], check=True)
    subprocess.run([os.path.join(BIN, "ddp-opt"), step, "-o", scheduled,
                    f"--ddp-schedule={schedule} hw={profile}",
                    f"--ddp-simulate=hw={profile} report={report} "
                    f"trace={trace}"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        r = json.load(f)
    with open(trace) as f:
        t = json.load(f)
    with open(scheduled) as f:
        text = f.read()
    chose = ('overlap-moe-expert-parallel-comm" = true' in text,
             'delay-wgrad-compute" = true' in text)
    return (r["times_ms"]["step"], exposed_ms(t, is_dispatch),
            r["times_ms"]["exposed_communication"], chose)


def cell(result):
    return (f"{result[0]:.2f} | {result[1]:.2f} "
            f"({100 * result[1] / result[0]:.1f} %)")


def main():
    start = time.time()
    print("| preset | EP | hw | allgather: step ms | exposed dispatch ms | "
          "alltoall: step ms | exposed all-to-all ms | batch-level overlap "
          "(Megatron's flag): step ms | exposed all-to-all ms | flag and "
          "delay_wgrad_compute: step ms | exposed all-to-all ms | auto: step "
          "ms | exposed all-to-all ms | auto's choice | auto / best flag |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for preset, ep, dp in ROWS:
            for name, profile in PROFILES:
                gather = simulate(preset, ep, dp, "allgather", profile, tmp)
                a2a = simulate(preset, ep, dp, "alltoall", profile, tmp)
                flag = simulate(preset, ep, dp, "alltoall", profile, tmp,
                                ["overlap_moe_expert_parallel_comm=true"])
                delay = simulate(preset, ep, dp, "alltoall", profile, tmp,
                                 ["overlap_moe_expert_parallel_comm=true",
                                  "delay_wgrad_compute=true"])
                auto = simulate(preset, ep, dp, "alltoall", profile, tmp,
                                schedule=SCHEDULE.replace("policy=megatron",
                                                          "policy=auto"))
                choice = ("overlap, delay" if auto[3] == (True, True)
                          else "overlap" if auto[3][0] else "off")
                best = min(flag[0], delay[0])
                print(f"| {preset} | {ep} | {name} | {cell(gather)} | "
                      f"{cell(a2a)} | {cell(flag)} | {cell(delay)} | "
                      f"{cell(auto)} | {choice} | {auto[0] / best:.3f} |",
                      flush=True)
        print("\n| preset | EP | hw | shared expert, sequential: step ms | "
              "exposed communication ms | overlapped: step ms | exposed "
              "communication ms | overlapped / sequential |")
        print("|---|---|---|---|---|---|---|---|")
        for ep in (8, 16):
            for name, profile in PROFILES:
                shared = ["moe_shared_expert_intermediate_size=1536"]
                seq = simulate("qwen3-30b-a3b", ep, 32, "alltoall", profile,
                               tmp, shared)
                ovl = simulate("qwen3-30b-a3b", ep, 32, "alltoall", profile,
                               tmp, shared + ["moe_shared_expert_overlap=true"])
                print(f"| qwen3-30b-a3b + shared 1536 | {ep} | {name} | "
                      f"{seq[0]:.2f} | {seq[2]:.2f} | {ovl[0]:.2f} | "
                      f"{ovl[2]:.2f} | {ovl[0] / seq[0]:.3f} |")
    print(f"\n{time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
