#!/usr/bin/env python3
"""The distributed-optimizer table (issue 14).

For every ddp-import preset, on two hardware profiles and at data-parallel
sizes 8, 64 and 512, the simulated step time of:

  megatron    Megatron-Core's DDP with --overlap-grad-reduce: an all-reduce
              per bucket, overlapped with the backward, the full optimizer on
              every rank (ddp-schedule policy=megatron)
  dist-opt    the distributed optimizer on Megatron's buckets: overlapped
              reduce-scatters, the optimizer on the shards, synchronous
              all-gathers after it (use-distributed-optimizer=true)
  dist-opt+pg the same with overlap-param-gather=true: the all-gathers run
              during the next forward, each waited before its bucket's
              parameters are first used
  auto        policy=auto hw=<profile> use-distributed-optimizer=true, with
              overlap-param-gather=true where it helps Megatron's layout
              (dist-opt+pg < dist-opt on the row), without it elsewhere
              (one auto run per row: the search takes ~1 min on the largest
              presets); auto's predicted step time is checked against the
              simulated one
  free DP     the unscheduled step with its data-parallel reductions deleted
              (as in docs/BucketingBench.md)
  bound       the simulator's lower bound of the unscheduled step
  floor       a lower bound of every distributed-optimizer schedule with one
              instance (the table's), whatever its bucket layout, on the
              simulator's rules: the parameter whose gradient is ready last
              (the shared embedding on every preset) is reduce-scattered after
              that, and all-gathered before its first use in the next step,
              so a step takes at least the compute from that use to that
              gradient plus the latency of one reduce-scatter and of one
              all-gather over its group (each priced for one element per
              rank). Where it exceeds megatron no layout can meet the target.

and the model state per rank (ddp-simulate's `model_state.bytes_per_rank`,
Megatron-LM's count) of megatron and of auto, in one run. The step is
imported with `--set data_parallel_size=<dp>` at full size. Gradients are
reduced in their own type (no grad-reduce-in-fp32), as in
docs/BucketingBench.md.

Usage: bench_distributed_optimizer.py [BUILD_DIR] [--markdown FILE] [--jobs N]
Rows run in N worker processes (simulated times do not depend on it).
Prints a table and the wall time; asserts nothing about time. Exits 1 if
dist-opt+pg is slower than megatron, or auto slower than another column, on
some row (both are reported in the table either way).
"""

import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bucketing import without_reductions  # noqa: E402

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
DIST_OPT = "use-distributed-optimizer=true"
POLICIES = [
    ("megatron", "policy=megatron"),
    ("dist-opt", f"policy=megatron {DIST_OPT}"),
    ("dist-opt+pg", f"policy=megatron {DIST_OPT} overlap-param-gather=true"),
]


def presets():
    out = subprocess.run([DDP_IMPORT, "--list-presets"], capture_output=True,
                         text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def simulate(step, hw, passes=()):
    """The simulator's JSON report of `step` after `passes` (ddp-opt flags)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        command = [DDP_OPT, step, "-o", "/dev/null", *passes,
                   f"--ddp-simulate=hw={hw} output= report={report.name}"]
        subprocess.run(command, check=True)
        with open(report.name) as data:
            return json.load(data)


def schedule(step, hw, options, out):
    """Writes `step` scheduled with `options`; returns the seconds it took."""
    start = time.monotonic()
    subprocess.run([DDP_OPT, step, "-o", out,
                    f"--ddp-schedule={options.format(hw=hw)}"], check=True)
    return time.monotonic() - start


PREDICTED = re.compile(r"predicted_step_time_us = ([0-9.e+-]+)")


def predicted_step_time(scheduled):
    """auto's predicted step time in ms, from its bucket policy attribute."""
    with open(scheduled) as text:
        for line in text:
            match = PREDICTED.search(line)
            if match:
                return float(match.group(1)) / 1e3
    raise RuntimeError(f"{scheduled} has no predicted step time")


GRAD_READY = r"%([\w.#]+) = ddp.grad_ready @{param}, "
REDUCTION = (r"ddp.all_reduce avg %{value} over (@\w+\[[^\]]*\])"
             r".*: tensor<(?:\d+x)*(\w+)>")


def lone_collective_ms(mesh, group, dtype, hw, collective):
    """The simulated time of one reduce-scatter or all-gather over `group` of
    one element per rank: its latency, as the cost model prices it."""
    size = 1
    for axis in re.search(r"\[(.*)\]", group).group(1).split(","):
        size *= int(re.search(rf"\b{axis.strip()} = (\d+)", mesh).group(1))
    whole, one = f"tensor<{size}x{dtype}>", f"tensor<1x{dtype}>"
    if collective == "reduce_scatter":
        op = (f"%r = ddp.reduce_scatter sum %g over {group} : "
              f"{whole} -> {one}")
        argument = whole
    else:
        op = f"%r = ddp.all_gather %g over {group} : {one} -> {whole}"
        argument = one
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as step:
        step.write(f"{mesh}\nfunc.func @step(%g: {argument}) {{\n  {op}\n"
                   "  return\n}\n")
        step.flush()
        return simulate(step.name, hw)["times_ms"]["step"]


def floor_ms(step, unscheduled, hw):
    """The distributed optimizer's floor (see above), or None where the
    step's first op is not the read of the last gradient's parameter (the
    compute before that read could overlap its all-gather)."""
    last = unscheduled["grad_ready"][-1]
    with open(step) as text:
        source = text.read()
    body = source[source.index("func.func @step"):].split("\n")[1:]
    first_op = next(line.strip() for line in body if line.strip())
    first_read = re.match(r"%\w+ = ddp.get_param @([\w.]+)", first_op)
    if not first_read or first_read.group(1) != last["param"]:
        return None
    mesh = re.search(r"^\s*(ddp.mesh .*)$", source, re.M).group(1)
    value = re.search(GRAD_READY.format(param=re.escape(last["param"])),
                      source).group(1)
    group, dtype = re.search(REDUCTION.format(value=re.escape(value)),
                             source).groups()
    return last["time_ms"] + sum(
        lone_collective_ms(mesh, group, dtype, hw, collective)
        for collective in ("reduce_scatter", "all_gather"))


def measure(task):
    """The rows of one preset at one data-parallel size (both profiles), the
    targets they miss, and the seconds of auto's ddp-schedule runs."""
    preset, dp = task
    rows, misses, auto_seconds = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, f"{preset}-{dp}.mlir")
        subprocess.run([DDP_IMPORT, f"--preset={preset}", "--set",
                        f"data_parallel_size={dp}", "-o", step], check=True)
        free = step + ".free.mlir"
        without_reductions(step, free)
        for hw in HARDWARE:
            unscheduled = simulate(step, hw)
            bound = unscheduled["lower_bound_ms"]
            floor = floor_ms(step, unscheduled, hw)
            free_time = simulate(free, hw)["times_ms"]["step"]
            times, state = {}, {}
            for name, options in POLICIES:
                report = simulate(step, hw, [
                    f"--ddp-schedule={options.format(hw=hw)}"])
                times[name] = report["times_ms"]["step"]
                state[name] = report["model_state"]["bytes_per_rank"]
            auto = os.path.join(tmp, "auto.mlir")
            with_pg = times["dist-opt+pg"] < times["dist-opt"]
            options = f"policy=auto hw={{hw}} {DIST_OPT}"
            if with_pg:
                options += " overlap-param-gather=true"
            seconds = schedule(step, hw, options, auto)
            auto_seconds[(preset, hw, dp)] = seconds
            report = simulate(auto, hw)
            times["auto"] = report["times_ms"]["step"]
            state["auto"] = report["model_state"]["bytes_per_rank"]
            predicted = predicted_step_time(auto)
            if abs(predicted - times["auto"]) > 1e-9 * times["auto"]:
                misses.append(f"auto predicted {predicted:.6f} ms, "
                              f"simulated {times['auto']:.6f} ms on "
                              f"{preset} {hw} dp={dp}")
            # The floor bounds every distributed-optimizer schedule.
            for name in ["dist-opt", "dist-opt+pg", "auto"]:
                if floor is not None and floor > times[name] * (1 + 1e-9):
                    misses.append(f"floor {floor:.6f} ms above {name} "
                                  f"{times[name]:.6f} ms on {preset} {hw} "
                                  f"dp={dp}: the floor is no bound")
            # A target no layout can meet (the floor above megatron) is
            # told apart from the others.
            why = (" (infeasible: floor above megatron)"
                   if floor is not None and floor > times["megatron"] else "")
            if times["dist-opt+pg"] > times["megatron"] * (1 + 1e-9):
                misses.append(f"dist-opt+pg > megatron on {preset} {hw} "
                              f"dp={dp}{why}")
            others = min(times[name] for name, _ in POLICIES)
            if times["auto"] > others * (1 + 1e-9):
                misses.append(f"auto > another column on {preset} {hw} "
                              f"dp={dp}{why}")
            rows.append((preset, hw, dp, times, with_pg, free_time, bound,
                         state, floor))
            print(f"{preset} {hw} dp={dp}: " + ", ".join(
                f"{name} {times[name]:.3f}" for name in times) +
                  f" ({'with' if with_pg else 'without'} pg, "
                  f"{seconds:.1f} s), free DP {free_time:.3f}, "
                  f"bound {bound['value']:.3f}, floor {floor} ms",
                  file=sys.stderr,
                  flush=True)
    return rows, misses, auto_seconds


def in_units(count):
    """Bytes in GiB, or MiB below 1 GiB."""
    if count >= 2**30:
        return f"{count / 2**30:.2f} GiB"
    return f"{count / 2**20:.2f} MiB"


def main():
    started = time.monotonic()
    tasks = [(preset, dp) for preset in presets() for dp in DATA_PARALLEL]
    # The rows are independent; the slowest presets first (auto's search
    # takes a minute on them) keeps the workers busy to the end.
    slowest = ["gpt3-175b", "gpt-8.3b", "llama2-70b", "nemotron4-15b"]
    order = sorted(tasks, key=lambda task: slowest.index(task[0])
                   if task[0] in slowest else len(slowest))
    with multiprocessing.Pool(JOBS) as pool:
        results = dict(zip(order, pool.map(measure, order, chunksize=1)))
    rows, misses, auto_seconds = [], [], {}
    for task in tasks:
        task_rows, task_misses, task_seconds = results[task]
        rows += task_rows
        misses += task_misses
        auto_seconds.update(task_seconds)
    wall = time.monotonic() - started

    lines = [
        "| preset | hardware | dp | megatron | dist-opt | dist-opt+pg "
        "| auto | free DP | lower bound | auto / bound | floor "
        "| bytes/rank megatron | bytes/rank auto |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for preset, hw, dp, times, with_pg, free_time, bound, state, floor in rows:
        cells = [f"{times[name]:.2f}" for name in
                 ["megatron", "dist-opt", "dist-opt+pg"]]
        cells.append(f"{times['auto']:.2f} ({'+pg' if with_pg else 'no pg'})")
        cells.append(f"{free_time:.2f}")
        cells.append(f"{bound['value']:.2f} ({bound['binding']})")
        cells.append(f"{times['auto'] / bound['value']:.3f}")
        cells.append("n/a" if floor is None else f"{floor:.2f}")
        cells.append(in_units(state["megatron"]))
        cells.append(in_units(state["auto"]))
        lines.append(f"| {preset} | {hw} | {dp} | " + " | ".join(cells) + " |")
    slowest = max(auto_seconds, key=auto_seconds.get)
    summary = (
        "\nStep times in ms. Wall time of the run: "
        f"{wall:.0f} s; of it {sum(auto_seconds.values()):.0f} s in auto's "
        f"ddp-schedule runs, the longest {auto_seconds[slowest]:.1f} s "
        f"({' '.join(map(str, slowest))}).\n")
    if misses:
        summary += "\nTargets missed: " + "; ".join(misses) + ".\n"
    print("\n".join(lines) + summary)
    if MARKDOWN:
        with open(MARKDOWN, "w") as out:
            out.write("\n".join(lines) + summary)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
