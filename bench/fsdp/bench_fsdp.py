#!/usr/bin/env python3
"""The fully sharded table (docs/FullySharded.md, docs/FullyShardedBench.md).

For every ddp-import preset but the test ones, on two hardware profiles and
at data-parallel sizes 8, 64 and 512, imported at full size with
`--set data_parallel_size=<dp>`, the simulated step time and the memory per
rank of:

  megatron    Megatron-Core's DDP with --overlap-grad-reduce (policy=megatron)
  dist-opt    the distributed optimizer with overlap-param-gather
  fsdp2       data-parallel-sharding-strategy=optim_grads_params with FSDP2's
              defaults: one unit's gather ahead, resharded after the forward
  auto        the same with policy=auto making the FSDP choices only:
              fsdp-prefetch and reshard-after-forward on the cost model,
              never holding more live tensors than fsdp2 (the compute and
              MoE choices pinned off: wgrad-schedule=in-place batch-split=1
              overlap-moe-expert-parallel-comm=false)
  auto-all    policy=auto with every choice it makes (the delayed weight
              gradients, the batch split, the MoE overlap too), which may
              hold more

and the lower bound of auto's step. Memory per rank is the model state as
Megatron-LM counts it (ddp-simulate's model_state.bytes_per_rank) plus the
step's live tensors at their peak (live_tensor_peak_bytes: activations,
gradients and gathered parameters, each from the op that makes it to its
last reader).

Usage: bench_fsdp.py [BUILD_DIR] [--markdown FILE] [--jobs N]
Prints a table and the wall time; asserts nothing about time. Exits 1 if
auto is slower than fsdp2 or holds more memory on some row (reported in
the table either way).
"""

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

BUILD = "build"
MARKDOWN = None
JOBS = 1
args = sys.argv[1:]
while args:
    arg = args.pop(0)
    if arg == "--markdown":
        MARKDOWN = args.pop(0)
    elif arg == "--jobs":
        JOBS = int(args.pop(0))
    else:
        BUILD = arg
DDP_OPT = os.path.join(BUILD, "bin", "ddp-opt")
DDP_IMPORT = os.path.join(BUILD, "bin", "ddp-import")
HARDWARE = ["h100-sxm-ib400", "a100-sxm-ib200"]
DATA_PARALLEL = [8, 64, 512]
FSDP = ("use-distributed-optimizer=true "
        "data-parallel-sharding-strategy=optim_grads_params")
COLUMNS = [
    ("megatron", "policy=megatron"),
    ("dist-opt", "use-distributed-optimizer=true overlap-param-gather=true"),
    ("fsdp2", FSDP),
    ("auto", f"policy=auto {FSDP} wgrad-schedule=in-place batch-split=1 "
             "overlap-moe-expert-parallel-comm=false"),
    ("auto-all", f"policy=auto {FSDP}"),
]


def presets():
    out = subprocess.run([DDP_IMPORT, "--list-presets"], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.strip() and not line.startswith("tiny")]


def report_of(step, hw, options, tmp):
    """The simulator's JSON report of `step` scheduled with `options`, and
    the scheduled module's text."""
    scheduled = os.path.join(tmp, "scheduled.mlir")
    subprocess.run([DDP_OPT, step, "-o", scheduled,
                    f"--ddp-schedule={options} hw={hw}"], check=True)
    report = os.path.join(tmp, "report.json")
    subprocess.run([DDP_OPT, scheduled, "-o", "/dev/null",
                    f"--ddp-simulate=hw={hw} output= report={report}"],
                   check=True)
    with open(report) as data, open(scheduled) as text:
        return json.load(data), text.read()


def chosen(module):
    """auto's recorded fsdp-prefetch (or its depths per unit, counted),
    reshard-after-forward and fsdp-keep-last-units."""
    start = module.index("ddp.schedule_options = {")
    entries = module[start:module.index("}", start)]
    prefetch = entries.split('"fsdp-prefetch" = ')[1].split(" ")[0]
    reshard = entries.split('"reshard-after-forward" = ')[1].split(",")[0]
    keep = entries.split('"fsdp-keep-last-units" = ')[1].split(" ")[0]
    # A depth per unit: how many units at each depth.
    if '"fsdp-unit-prefetch" = "' in entries:
        depths = entries.split('"fsdp-unit-prefetch" = "')[1].split('"')[0]
        counts = {}
        for depth in depths.split(","):
            counts[depth] = counts.get(depth, 0) + 1
        prefetch = " / ".join(f"{counts[d]} at {d}" for d in sorted(counts))
    if reshard.strip() != "true":
        return f"{prefetch}, all kept"
    return f"{prefetch}" + (f", last {keep} kept" if int(keep) > 1 else "")


def measure(task):
    """The rows of one preset at one data-parallel size (both profiles) and
    the targets they miss."""
    preset, dp = task
    rows, misses = [], []
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, f"{preset}-{dp}.mlir")
        imported = subprocess.run(
            [DDP_IMPORT, "--quiet", f"--preset={preset}", "--set",
             f"data_parallel_size={dp}", "-o", step], capture_output=True,
            text=True)
        # A size the preset's parallelism does not divide (qwen3's 16
        # expert-parallel ranks at dp 8) has no row.
        if imported.returncode != 0:
            print(f"{preset} dp={dp}: skipped: {imported.stderr.strip()}",
                  file=sys.stderr, flush=True)
            return rows, misses
        for hw in HARDWARE:
            times, memory = {}, {}
            for name, options in COLUMNS:
                report, module = report_of(step, hw, options, tmp)
                times[name] = report["times_ms"]["step"]
                memory[name] = (report["model_state"]["bytes_per_rank"] +
                                report["live_tensor_peak_bytes"])
                if name == "auto":
                    bound = report["lower_bound_ms"]
                    choice = chosen(module)
            if times["auto"] > times["fsdp2"] * (1 + 1e-9):
                misses.append(f"auto slower than fsdp2 on {preset} {hw} "
                              f"dp={dp}")
            if memory["auto"] > memory["fsdp2"]:
                misses.append(f"auto holds more than fsdp2 on {preset} {hw} "
                              f"dp={dp}")
            rows.append((preset, hw, dp, times, memory, bound, choice))
            print(f"{preset} {hw} dp={dp}: " + ", ".join(
                f"{name} {times[name]:.2f} ms {memory[name] / 2**30:.1f} GiB"
                for name in times) + f", auto chose {choice}",
                  file=sys.stderr, flush=True)
    return rows, misses


def main():
    started = time.monotonic()
    tasks = [(preset, dp) for preset in presets() for dp in DATA_PARALLEL]
    slowest = ["qwen3-30b-a3b", "gpt3-175b", "gpt-8.3b", "llama2-70b"]
    order = sorted(tasks, key=lambda task: slowest.index(task[0])
                   if task[0] in slowest else len(slowest))
    with multiprocessing.Pool(JOBS) as pool:
        results = dict(zip(order, pool.map(measure, order, chunksize=1)))
    rows, misses = [], []
    for task in tasks:
        rows += results[task][0]
        misses += results[task][1]
    wall = time.monotonic() - started

    names = [name for name, _ in COLUMNS]
    lines = [
        "| preset | hardware | dp | " + " | ".join(names) +
        " | auto chose | auto / bound | " +
        " | ".join(f"GiB/rank {name}" for name in names) + " |",
        "|---|---|---|" + "---|" * (2 * len(names) + 2)]
    for preset, hw, dp, times, memory, bound, choice in rows:
        cells = [f"{times[name]:.2f}" for name in names]
        cells.append(choice)
        cells.append(f"{times['auto'] / bound['value']:.3f} "
                     f"({bound['binding']})")
        cells += [f"{memory[name] / 2**30:.1f}" for name in names]
        lines.append(f"| {preset} | {hw} | {dp} | " + " | ".join(cells) + " |")
    summary = f"\nStep times in ms. Wall time of the run: {wall:.0f} s.\n"
    if misses:
        summary += "\nTargets missed: " + "; ".join(misses) + ".\n"
    print("\n".join(lines) + summary)
    if MARKDOWN:
        with open(MARKDOWN, "w") as out:
            out.write("\n".join(lines) + summary)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
