#!/usr/bin/env python3
"""Benchmarks of the step simulator (issue: cost model and simulator).

1. Simulating the imported gpt3-175b step (8 microbatches) on a100-sxm-ib200:
   the time of the ddp-simulate pass alone (MLIR's pass timing), best of
   several runs (the machine is shared), next to the time to parse the file.
2. Synthetic steps of 1k, 10k and 100k ops: simulate time and time per op,
   which stays flat when the simulator is linear in the number of ops.

Usage: bench_sim.py [BUILD_DIR]   (default: build)
Prints tables; asserts nothing about time.
"""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
DDP_OPT = os.path.join(BUILD, "bin", "ddp-opt")
DDP_IMPORT = os.path.join(BUILD, "bin", "ddp-import")
RUNS = 5


def pass_times(path, hw):
    """(parse seconds, simulate seconds, simulated ops) of one ddp-opt run."""
    proc = subprocess.run(
        [DDP_OPT, path, "-o", "/dev/null", "--mlir-timing",
         f"--ddp-simulate=hw={hw} output="],
        capture_output=True, text=True, check=True)
    def wall(name):
        match = re.search(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+" + name + r"\s*$",
                          proc.stderr, re.MULTILINE)
        return float(match.group(1))
    return wall("Parser"), wall("Simulate"), count_step_ops(path)


def count_step_ops(path):
    """Ops in the step: one per line between `func.func` and its end."""
    ops, inside = 0, False
    with open(path) as step:
        for line in step:
            if line.startswith("func.func") or line.lstrip().startswith("func.func"):
                inside = True
            elif inside and line.strip() == "}":
                inside = False
            elif inside and line.strip():
                ops += 1
    return ops


def best_times(path, hw):
    runs = [pass_times(path, hw) for _ in range(RUNS)]
    return (min(r[0] for r in runs),
            min(r[1] for r in runs), runs[0][2])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        gpt3 = os.path.join(tmp, "gpt3-175b.mlir")
        subprocess.run([DDP_IMPORT, "--preset=gpt3-175b", "-o", gpt3],
                       check=True)
        parse, simulate, ops = best_times(gpt3, "a100-sxm-ib200")
        print("gpt3-175b, 8 microbatches, a100-sxm-ib200 "
              f"(best of {RUNS} runs)")
        print(f"| ops | parse (s) | simulate (s) |")
        print(f"|---:|---:|---:|")
        print(f"| {ops} | {parse:.4f} | {simulate:.4f} |")
        print()

        print(f"synthetic steps, h100-sxm-ib400 (best of {RUNS} runs)")
        print("| ops | parse (s) | simulate (s) | simulate per op (us) |")
        print("|---:|---:|---:|---:|")
        for size in (1000, 10000, 100000):
            path = os.path.join(tmp, f"synthetic-{size}.mlir")
            with open(path, "w") as out:
                subprocess.run([sys.executable,
                                os.path.join(os.path.dirname(HERE), "gen_synthetic_step.py"),
                                str(size)], stdout=out, check=True)
            parse, simulate, ops = best_times(path, "h100-sxm-ib400")
            print(f"| {ops} | {parse:.4f} | {simulate:.4f} | "
                  f"{simulate / ops * 1e6:.3f} |")


if __name__ == "__main__":
    main()
