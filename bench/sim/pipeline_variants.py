#!/usr/bin/env python3
"""GPT-3 175B at TP 8 x PP 8 x DP 16 (96 microbatches, SP) under each
pipeline option, simulated side by side (docs/PipelineSimulation.md): the
step, the step over the pipeline's lower bound and the
busiest rank's memory on h100-sxm-ib400, with the distributed optimizer,
overlapped gradient reductions and parameter gathers, and TP overlap in
every row. Each variant is imported (what the import records, e.g.
deallocate_pipeline_outputs, applies), scheduled and simulated.

Usage: pipeline_variants.py [BUILD_DIR]
"""

import os
import re
import subprocess
import sys
import tempfile

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
BIN = os.path.join(BUILD, "bin")
BASE = ["--preset=gpt3-175b", "--set", "pipeline_model_parallel_size=8",
        "--set", "tensor_model_parallel_size=8", "--set",
        "data_parallel_size=16", "--set", "num_microbatches=96", "--set",
        "sequence_parallel=true"]
SCHEDULE = ("use-distributed-optimizer=true overlap-grad-reduce=true "
            "overlap-param-gather=true tp-comm-overlap=true")
V3 = ["--set", "virtual_pipeline_model_parallel_size=3"]

# (row, extra import fields, extra schedule options)
VARIANTS = [
    ("1F1B, Megatron's blocking calls (the default)", [], ""),
    ("1F1B, ddp's early receives (`overlap-p2p-comm`)", [],
     "overlap-p2p-comm=true"),
    ("1F1B, `defer_embedding_wgrad_compute`",
     ["--set", "defer_embedding_wgrad_compute=true"], ""),
    ("1F1B, full recomputation (uniform, 1 layer)",
     ["--set", "recompute_granularity=full", "--set",
      "recompute_method=uniform", "--set", "recompute_num_layers=1"], ""),
    ("1F1B, selective recomputation of `mlp` and `layernorm`",
     ["--set", "recompute_granularity=selective", "--set",
      "recompute_modules=mlp,layernorm"], ""),
    ("ZB-H1 (`pipeline_schedule` `zb-h1`, early receives)",
     ["--set", "pipeline_schedule=zb-h1"], ""),
    ("interleaved V = 3, blocking calls", V3, "overlap-p2p-comm=false"),
    ("interleaved V = 3, `overlap-p2p-comm` (Megatron's default)", V3, ""),
    ("interleaved V = 3, `overlap-p2p-comm`, outputs kept "
     "(`deallocate-pipeline-outputs=false`)", V3,
     "deallocate-pipeline-outputs=false"),
    ("interleaved V = 3, with `overlap-p2p-comm-warmup-flush`", V3,
     "overlap-p2p-comm-warmup-flush=true"),
]

STEP = re.compile(r"^pipeline of \d+ ranks on \S+: step ([0-9.]+) ms", re.M)
BOUND = re.compile(r"step / lower bound ([0-9.]+)")
MEMORY = re.compile(r"most memory: rank \d+, ([0-9.]+) GiB")


def main():
    print("| variant | step (ms) | step / bound | busiest rank's memory (GiB) |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "step.mlirbc")
        for name, fields, options in VARIANTS:
            subprocess.run([os.path.join(BIN, "ddp-import")] + BASE + fields +
                           ["-o", os.path.join(tmp, "step.mlir")],
                           check=True, stderr=subprocess.DEVNULL)
            subprocess.run([os.path.join(BIN, "ddp-opt"),
                            os.path.join(tmp, "step.mlir"), "--emit-bytecode",
                            "-o", module], check=True)
            out = subprocess.run(
                [os.path.join(BIN, "ddp-opt"), module,
                 "--ddp-schedule=" + SCHEDULE + " " + options,
                 "--ddp-simulate=hw=h100-sxm-ib400", "-o", os.devnull],
                check=True, capture_output=True, text=True).stdout
            print(f"| {name} | {STEP.search(out).group(1)} | "
                  f"{BOUND.search(out).group(1)} | "
                  f"{MEMORY.search(out).group(1)} |", flush=True)


if __name__ == "__main__":
    main()
