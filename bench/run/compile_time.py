#!/usr/bin/env python3
"""Time to lower a step and compile it to an object file, by step size.

Imports GPT-3 175B (TP 8, DP 16, 8 microbatches) with 12, 24, 48 and 96
layers and prints a Markdown table: the step's ops, the wall time of
`ddp-opt --ddp-lower-to-runtime` (the pass alone, from --mlir-timing) and of
`ddp-run --emit-object` (parse, lower, translate to LLVM IR, generate code),
median of --repeat runs. Both should grow linearly with the ops.

    bench/run/compile_time.py [--build build] [--repeat 3]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time


def count_ops(build, step):
    stats = subprocess.run(
        [os.path.join(build, "bin", "ddp-opt"), "-ddp-step-stats", step, "-o",
         os.devnull], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^ops: (\d+)$", stats, re.M).group(1))


def lowering_seconds(build, step):
    out = subprocess.run(
        [os.path.join(build, "bin", "ddp-opt"), step, "--ddp-lower-to-runtime",
         "-o", os.devnull, "--mlir-timing", "--mlir-output-format=json"],
        check=True, capture_output=True, text=True)
    report = json.loads(out.stderr)
    return sum(entry["wall"]["duration"] for entry in report
               if entry["name"] == "LowerDDPToRuntime")


def object_seconds(build, step, directory):
    start = time.perf_counter()
    subprocess.run([os.path.join(build, "bin", "ddp-run"), step,
                    f"--emit-object={os.path.join(directory, 'step.o')}"],
                   check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print("| layers | ops | lowering s | lowering us/op | "
          "--emit-object s | --emit-object us/op |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        step = os.path.join(directory, "step.mlir")
        for layers in (12, 24, 48, 96):
            subprocess.run([os.path.join(args.build, "bin", "ddp-import"),
                            "--preset=gpt3-175b", "--set",
                            f"num_layers={layers}", "-o", step], check=True)
            ops = count_ops(args.build, step)
            lowering = statistics.median(
                lowering_seconds(args.build, step) for _ in range(args.repeat))
            emit = statistics.median(
                object_seconds(args.build, step, directory)
                for _ in range(args.repeat))
            print(f"| {layers} | {ops} | {lowering:.2f} | "
                  f"{lowering / ops * 1e6:.1f} | {emit:.2f} | "
                  f"{emit / ops * 1e6:.1f} |")


if __name__ == "__main__":
    main()
