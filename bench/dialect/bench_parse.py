#!/usr/bin/env python3
"""Parse + verify + print time of ddp-opt on synthetic steps of 1k, 10k and
100k ops, side by side, with the cost per op (best of 5 runs, process
start-up measured on an empty module and subtracted).

    bench/dialect/bench_parse.py [--build build]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

# The synthetic step generator is shared with bench/sim.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gen_synthetic_step  # noqa: E402


def best_time(cmd, runs=5):
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    opt = os.path.join(args.build, "bin", "ddp-opt")
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.mlir")
        with open(empty, "w") as f:
            f.write("module {}\n")
        startup = best_time([opt, empty])
        print(f"{'N':>8} {'ops':>8} {'total_ms':>10} {'startup_ms':>11} {'us_per_op':>10}")
        for n in (1000, 10000, 100000):
            path = os.path.join(tmp, f"step{n}.mlir")
            with open(path, "w") as f:
                gen_synthetic_step.write_step(n, f)
            ops = int(subprocess.run(
                [opt, path, "--mlir-print-op-generic"], check=True,
                capture_output=True, text=True).stdout.count('"ddp.'))
            total = best_time([opt, path])
            print(f"{n:>8} {ops:>8} {total * 1e3:>10.1f} {startup * 1e3:>11.1f} "
                  f"{(total - startup) * 1e6 / ops:>10.2f}")


if __name__ == "__main__":
    main()
