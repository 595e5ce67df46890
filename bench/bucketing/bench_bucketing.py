#!/usr/bin/env python3
"""The bucketing table (issue: gradient bucketing and overlap).

For every ddp-import preset, on two hardware profiles and at data-parallel
sizes 8, 64 and 512, the simulated step time of:

  no overlap  Megatron without --overlap-grad-reduce: one bucket per buffer,
              reduced synchronously after the backward pass
              (ddp-schedule policy=megatron overlap-grad-reduce=false)
  megatron    Megatron-Core's defaults with --overlap-grad-reduce
              (bucket size max(40M, 1M x dp) elements)
  pytorch     PyTorch DDP's defaults (1 MiB first bucket, then 25 MiB)
  auto        the cost-model-optimal policy for that profile
  free DP     the step with its data-parallel reductions deleted: what any
              schedule would reach if gradient reduction cost nothing (the
              headroom bucketing can win is megatron - free DP)
  floor       a lower bound for any bucketing of this step: max(free DP,
              the first grad_ready + the data-parallel bytes of the busiest
              group at full bus bandwidth), since no reduction can start
              before a gradient is final
  bound       the simulator's lower bound for the graph: max(all compute,
              the busiest group's bytes at full bus bandwidth, compute up to
              the last grad_ready + its smallest collective + its update)

with each time's ratio to the bound, in one run. The step is imported with
`--set data_parallel_size=<dp>`, so the mesh, the averaging factors and the
group placement are those of that size. It also times the whole pipeline on
gpt3-175b (8 microbatches) with MLIR's pass timing.

Usage: bench_bucketing.py [BUILD_DIR] [--markdown FILE]
Prints a table; asserts nothing about time. Exits 1 if auto is slower than
another policy on some row (the search guarantees it cannot be).
"""

import json
import os
import re
import subprocess
import sys
import tempfile

BUILD = "build"
MARKDOWN = None
args = sys.argv[1:]
while args:
    arg = args.pop(0)
    if arg == "--markdown":
        MARKDOWN = args.pop(0)
    else:
        BUILD = arg
DDP_OPT = os.path.join(BUILD, "bin", "ddp-opt")
DDP_IMPORT = os.path.join(BUILD, "bin", "ddp-import")
HARDWARE = ["h100-sxm-ib400", "a100-sxm-ib200"]
DATA_PARALLEL = [8, 64, 512]
POLICIES = [
    ("no overlap", "policy=megatron overlap-grad-reduce=false"),
    ("megatron", "policy=megatron"),
    ("pytorch", "policy=pytorch"),
    ("auto", "policy=auto hw={hw}"),
]


def presets():
    out = subprocess.run([DDP_IMPORT, "--list-presets"], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def simulate(step, hw, schedule=None):
    """The simulator's JSON report of `step`, scheduled first if asked."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        command = [DDP_OPT, step, "-o", "/dev/null"]
        if schedule:
            command.append(f"--ddp-schedule={schedule}")
        command.append(f"--ddp-simulate=hw={hw} output= report={report.name}")
        subprocess.run(command, check=True)
        with open(report.name) as data:
            return json.load(data)


REDUCTION = re.compile(
    r"^\s*(%[\w.]+) = ddp\.all_reduce avg (%[\w.]+) over @\w+\[[^\]]*\].*$\n",
    re.MULTILINE)


def without_reductions(step, path):
    """Writes `step` with every gradient all-reduce (the `avg` ones of the
    unscheduled form) replaced by its input."""
    with open(step) as source:
        text = source.read()
    renamed = {}

    def drop(match):
        renamed[match.group(1)] = match.group(2)
        return ""

    text = REDUCTION.sub(drop, text)
    text = re.sub(r"%[\w.]+", lambda m: renamed.get(m.group(0), m.group(0)),
                  text)
    with open(path, "w") as out:
        out.write(text)


def reduction_floor(report):
    """The first grad_ready + the busiest data-parallel group's reduction
    bytes at the ring's bus bandwidth without latency (the cheapest way the
    cost model can move them: a tree moves 2x the bytes at a fraction of the
    bandwidth), from the unscheduled step's all-reduces, which reduce
    exactly the gradients."""
    first_ready = min(ready["time_ms"] for ready in report["grad_ready"])
    tree_fraction = report["hardware"]["collective"]["tree_bandwidth_fraction"]
    ranks = {stream["tid"]: stream["ranks"] for stream in report["streams"]
             if stream["axes"] and "tp" not in stream["axes"]}
    bytes_per_stream, ring_bandwidth = {}, {}
    for collective in report["collectives"]:
        tid = collective["tid"]
        if tid not in ranks:
            continue
        bytes_per_stream[tid] = bytes_per_stream.get(tid, 0) + collective["bytes"]
        # A tree runs at a fraction of the group's (ring) bus bandwidth.
        bandwidth = collective["bus_bandwidth_gbps"]
        if collective["algorithm"] == "tree":
            bandwidth /= tree_fraction
        ring_bandwidth[tid] = max(ring_bandwidth.get(tid, 0), bandwidth)
    floor = 0.0
    for tid, total in bytes_per_stream.items():
        if ranks[tid] < 2:
            continue
        factor = 2 * (ranks[tid] - 1) / ranks[tid]
        floor = max(floor, total * factor / (ring_bandwidth[tid] * 1e9) * 1e3)
    return first_ready + floor


def pipeline_time(step, hw):
    """Best of three: the passes of ddp-schedule, and parsing and printing."""
    best = None
    for _ in range(3):
        proc = subprocess.run(
            [DDP_OPT, step, "-o", "/dev/null", "--mlir-timing",
             f"--ddp-schedule=policy=auto hw={hw} dp=64"],
            capture_output=True, text=True, check=True)
        times = {}
        for match in re.finditer(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\w+)\s*$",
                                 proc.stderr, re.MULTILINE):
            times[match.group(2)] = float(match.group(1))
        passes = sum(times.get(name, 0) for name in
                     ["AssignBuckets", "Bucketize", "OverlapGradReduce",
                      "VerifyCollectiveOrder"])
        row = (passes, times.get("AssignBuckets", 0), times.get("Parser", 0),
               times.get("Output", 0))
        best = row if best is None or row[0] < best[0] else best
    return best


def main():
    rows, violations = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for preset in presets():
            for dp in DATA_PARALLEL:
                step = os.path.join(tmp, f"{preset}-{dp}.mlir")
                subprocess.run([DDP_IMPORT, f"--preset={preset}", "--set",
                                f"data_parallel_size={dp}", "-o", step],
                               check=True)
                free = step + ".free.mlir"
                without_reductions(step, free)
                for hw in HARDWARE:
                    unscheduled = simulate(step, hw)
                    bound = unscheduled["lower_bound_ms"]
                    free_time = simulate(free, hw)["times_ms"]["step"]
                    floor = max(free_time, reduction_floor(unscheduled))
                    times = {}
                    for name, schedule in POLICIES:
                        report = simulate(step, hw, schedule.format(hw=hw))
                        times[name] = report["times_ms"]["step"]
                    others = min(times[name] for name, _ in POLICIES[:3])
                    if times["auto"] > others * (1 + 1e-9):
                        violations.append((preset, hw, dp))
                    rows.append((preset, hw, dp, times, free_time, floor,
                                 bound))
                    print(f"{preset} {hw} dp={dp}: " + ", ".join(
                        f"{name} {times[name]:.3f}" for name, _ in POLICIES) +
                          f", free DP {free_time:.3f}, floor {floor:.3f}, bound "
                          f"{bound['value']:.3f} ms", file=sys.stderr)
        gpt3 = os.path.join(tmp, "gpt3-175b.mlir")
        subprocess.run([DDP_IMPORT, "--preset=gpt3-175b", "-o", gpt3],
                       check=True)
        timing = pipeline_time(gpt3, "h100-sxm-ib400")

    lines = [
        "| preset | hardware | dp | no overlap | megatron | pytorch | auto "
        "| free DP | floor | lower bound | auto / floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for preset, hw, dp, times, free_time, floor, bound in rows:
        cells = [f"{times[name]:.2f} ({times[name] / bound['value']:.3f})"
                 for name, _ in POLICIES]
        cells.append(f"{free_time:.2f}")
        cells.append(f"{floor:.2f}")
        lines.append(f"| {preset} | {hw} | {dp} | " + " | ".join(cells) +
                     f" | {bound['value']:.2f} ({bound['binding']}) | "
                     f"{times['auto'] / floor:.4f} |")
    table = "\n".join(lines)
    summary = (
        "\nStep times in ms, (ratio to the lower bound); the last column is "
        "auto's step over the bucketing floor.\n\n"
        f"ddp-schedule on gpt3-175b (8 microbatches, policy=auto "
        f"hw=h100-sxm-ib400 dp=64), best of 3: {timing[0]:.3f} s in the "
        f"passes ({timing[1]:.3f} s in ddp-assign-buckets); parsing "
        f"{timing[2]:.3f} s and printing {timing[3]:.3f} s besides.\n")
    print(table + summary)
    if MARKDOWN:
        with open(MARKDOWN, "w") as out:
            out.write(table + summary)
    if violations:
        print("auto is slower than another policy on: " + ", ".join(
            f"{p} {h} dp={d}" for p, h, d in violations), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
