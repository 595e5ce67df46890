#!/usr/bin/env python3
"""Megatron's all-gather and all-to-all token dispatchers, per MoE preset.

For mixtral-8x7b and qwen3-30b-a3b at two expert-parallel sizes each, on
the calibrated H100 and A100 profiles (bench/sim/*-calibrated.json), the
importer builds the step with each dispatcher (moe_token_dispatcher_type),
ddp-schedule lays out the data-parallel side as Megatron does (the
distributed optimizer, overlapped reductions and gathers), and ddp-simulate
prices it. Printed per dispatcher: the step, and the exposed dispatch
communication: every collective on the dispatch group ([ep] for the
all-to-alls, [ep, tp] or [ep] for the all-gather dispatcher's gathers and
reduce-scatters, [tp] for the all-to-all dispatcher's ETP gathers), which
the step issues synchronously, so all of it is exposed.

A second table: the all-to-all dispatcher with a shared expert, without
and with Megatron's moe_shared_expert_overlap (ddp-overlap-moe-comm), and
the step's whole exposed communication (the data-parallel part is the same
in both columns).
qwen3-30b-a3b has no shared expert, so the rows give it one 1536 wide (two
routed experts' width; not Qwen's configuration). The batch-level overlap
and an auto choice are not built yet (issue 29).

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


def simulate(preset, ep, dp, dispatcher, profile, tmp, extra=()):
    step = os.path.join(tmp, "step.mlir")
    report = os.path.join(tmp, "report.json")
    sets = [f"expert_model_parallel_size={ep}", f"data_parallel_size={dp}",
            f"moe_token_dispatcher_type={dispatcher}", *extra]
    subprocess.run([os.path.join(BIN, "ddp-import"), f"--preset={preset}",
                    "--quiet", *[a for kv in sets for a in ("--set", kv)],
                    "-o", step], check=True)
    subprocess.run([os.path.join(BIN, "ddp-opt"), step, "-o", os.devnull,
                    f"--ddp-schedule={SCHEDULE} hw={profile}",
                    f"--ddp-simulate=hw={profile} report={report}"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        r = json.load(f)
    # The dispatch groups: streams whose axes hold ep but not edp, or tp alone.
    dispatch = {s["tid"] for s in r["streams"]
                if ("ep" in s["axes"] and "edp" not in s["axes"])
                or s["axes"] == ["tp"]}
    exposed = sum(c["end_ms"] - c["start_ms"] for c in r["collectives"]
                  if c["tid"] in dispatch and not c["async"])
    return (r["times_ms"]["step"], exposed,
            r["times_ms"]["exposed_communication"])


def main():
    start = time.time()
    print("| preset | EP | hw | allgather step ms | exposed dispatch ms | "
          "alltoall step ms | exposed all-to-all ms | alltoall / allgather |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for preset, ep, dp in ROWS:
            for name, profile in PROFILES:
                gather = simulate(preset, ep, dp, "allgather", profile, tmp)
                a2a = simulate(preset, ep, dp, "alltoall", profile, tmp)
                print(f"| {preset} | {ep} | {name} | {gather[0]:.2f} | "
                      f"{gather[1]:.2f} ({100 * gather[1] / gather[0]:.1f} %) | "
                      f"{a2a[0]:.2f} | {a2a[1]:.2f} "
                      f"({100 * a2a[1] / a2a[0]:.1f} %) | "
                      f"{a2a[0] / gather[0]:.3f} |")
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
