#!/usr/bin/env python3
"""Measured step time on this machine next to the simulator's prediction.

For each case, runs `mpirun -np N ddp-run STEP --compare-speed --schedule=...
--predict` (the unscheduled step and the schedule in one run, with OpenBLAS
GEMMs; --verify's fixed-order kernel is slower than the profile) --repeat
times and prints a Markdown table: the median over the repeats of ddp-run's
measured step time (the slowest rank's, median of the steps after the first),
the simulator's prediction for the same hardware profile, and their ratio,
with the machine's load average before the first run.

    bench/run/measured_vs_predicted.py [--build build] [--repeat 3] [--steps 20]
                                       [--hw cpu-mpi-2core]

The profile's numbers come from bench/sim/measure_cpu_profile.cpp
(docs/CostModel.md). Runs with more ranks than cores are oversubscribed: the
ranks then share cores, which the profile does not model.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

# (name, how to get the step, ranks, schedule options)
CASES = [
    ("mlp-2layer", ["examples/mlp-2layer.mlir"], 2,
     "policy=size bucket-size=300"),
    ("tiny (tp=1, dp=2)",
     ["--preset=tiny", "--set", "tensor_model_parallel_size=1"], 2,
     "policy=auto hw=cpu-mpi-2core"),
    ("tiny (tp=2, dp=2)", ["--preset=tiny"], 4,
     "policy=auto hw=cpu-mpi-2core"),
    ("gpt-block", ["examples/gpt-block.mlir"], 4,
     "policy=pytorch first-bucket-bytes=8192 bucket-cap-bytes=20000"),
]

LINE = re.compile(r"^\s+(unscheduled|scheduled)\s+measured\s+([0-9.]+) ms\s+"
                  r"predicted\s+([0-9.]+) ms")


def mpirun(ranks):
    command = ["mpirun"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    # Open MPI binds each rank to a core unless there are more ranks than
    # cores; oversubscribed ranks yield to each other while they wait.
    if ranks > os.cpu_count():
        command.append("--oversubscribe")
    return command


def step_file(build, source, directory):
    """The step as a file: an example as is, a preset or inventory imported."""
    if source[0].endswith(".mlir"):
        return source[0]
    path = os.path.join(directory, "step.mlir")
    subprocess.run([os.path.join(build, "bin", "ddp-import"), *source, "-o",
                    path], check=True)
    return path


def run_once(build, step, ranks, schedule, steps, hw):
    out = subprocess.run(
        [*mpirun(ranks), "-np", str(ranks), os.path.join(build, "bin", "ddp-run"),
         step, "--compare-speed", f"--schedule={schedule}", "--predict",
         f"--hw={hw}",
         f"--steps={steps}"],
        check=True, capture_output=True, text=True).stdout
    times = {}
    for line in out.splitlines():
        match = LINE.match(line)
        if match:
            times[match.group(1)] = (float(match.group(2)),
                                     float(match.group(3)))
    if len(times) != 2:
        sys.exit(f"unexpected ddp-run output:\n{out}")
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--hw", default="cpu-mpi-2core")
    args = parser.parse_args()

    print(f"load average before: {os.getloadavg()[0]:.2f} "
          f"({os.cpu_count()} cores)\n")
    print(f"| step | ranks | program | measured ms | predicted ms ({args.hw}) "
          "| measured / predicted |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for name, source, ranks, schedule in CASES:
            step = step_file(args.build, source, directory)
            runs = [run_once(args.build, step, ranks, schedule, args.steps,
                             args.hw) for _ in range(args.repeat)]
            for role in ("unscheduled", "scheduled"):
                measured = statistics.median(run[role][0] for run in runs)
                predicted = runs[0][role][1]
                label = role if role == "unscheduled" else f"`{schedule}`"
                print(f"| {name} | {ranks} | {label} | {measured:.3f} | "
                      f"{predicted:.3f} | {measured / predicted:.2f} |")


if __name__ == "__main__":
    main()
