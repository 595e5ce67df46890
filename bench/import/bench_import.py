#!/usr/bin/env python3
"""Time ddp-import on the presets and report op counts.

Prints a Markdown table: for each preset, the number of ops in its step (from
`ddp-opt -ddp-step-stats`) and the wall time of ddp-import's phases, as
reported by `--mlir-timing` (median and best of --repeat runs). A second table
imports gpt3-175b with more and more microbatches to show that the import
time grows linearly with the number of ops.

    bench/import/bench_import.py [--build build] [--repeat 5]

The goal (issue 3): gpt3-175b, all 96 layers and 8 microbatches, imports in
under 1 s.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

PRESETS = ["gpt3-175b", "gpt-8.3b", "llama2-7b", "llama2-70b", "llama3-8b",
           "mixtral-8x7b", "nemotron4-15b"]
PHASES = ["import", "verify", "print"]


def run_timed(tool, args):
    """Phase name -> seconds of one ddp-import run."""
    out = subprocess.run(
        [tool, *args, "-o", os.devnull, "--mlir-timing",
         "--mlir-output-format=json"],
        check=True, capture_output=True, text=True)
    report = json.loads(out.stderr)
    return {entry["name"]: entry["wall"]["duration"] for entry in report}


def count_ops(tool, opt, args):
    step = subprocess.run([tool, *args], check=True, capture_output=True,
                          text=True).stdout
    stats = subprocess.run([opt, "-ddp-step-stats", "-o", os.devnull],
                           input=step, check=True, capture_output=True,
                           text=True).stdout
    return int(re.search(r"^ops: (\d+)$", stats, re.M).group(1))


def measure(tool, opt, args, repeat):
    runs = [run_timed(tool, args) for _ in range(repeat)]
    times = {phase: [run[phase] for run in runs] for phase in PHASES + ["Total"]}
    return count_ops(tool, opt, args), times


def ms(values):
    return f"{statistics.median(values) * 1e3:.1f} ({min(values) * 1e3:.1f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build",
                        help="build directory holding bin/ddp-import")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tool = os.path.join(args.build, "bin", "ddp-import")
    opt = os.path.join(args.build, "bin", "ddp-opt")
    for binary in (tool, opt):
        if not os.access(binary, os.X_OK):
            sys.exit(f"error: {binary} not found; build ddp-import and ddp-opt")

    print(f"ddp-import wall time in ms, median (best) of {args.repeat} runs\n")
    print("| preset | ops | import | verify | print | total |")
    print("|---|---:|---:|---:|---:|---:|")
    for preset in PRESETS:
        ops, times = measure(tool, opt, [f"--preset={preset}"], args.repeat)
        print(f"| {preset} | {ops} | " +
              " | ".join(ms(times[p]) for p in PHASES + ["Total"]) + " |")

    print("\ngpt3-175b (96 layers) by number of microbatches: import time per op\n")
    print("| microbatches | ops | import ms | ns per op |")
    print("|---:|---:|---:|---:|")
    for microbatches in (1, 8, 32, 128):
        ops, times = measure(tool, opt, ["--preset=gpt3-175b", "--set",
                                         f"num_microbatches={microbatches}"],
                             args.repeat)
        best = min(times["import"])
        print(f"| {microbatches} | {ops} | {best * 1e3:.1f} | "
              f"{best / ops * 1e9:.0f} |")


if __name__ == "__main__":
    main()
