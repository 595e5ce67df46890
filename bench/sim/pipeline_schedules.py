#!/usr/bin/env python3
"""Megatron's 1F1B and interleaved schedules, ZB-H1 and auto, per preset.

For each preset at a published pipeline layout, on the calibrated H100 and
A100 profiles (bench/sim/*-calibrated.json) and at two data-parallel sizes,
`ddp-plan` simulates every candidate pipeline schedule with every pipeline
rank (docs/Pipeline.md#auto) and this script prints three of them side by
side:

- Megatron's 1F1B with its default p2p flags (blocking, batched calls);
- Megatron's interleaved schedule at the virtual size its scripts use, with
  its defaults (overlap_p2p_comm on, microbatch group = PP);
- ZB-H1 (Qi et al.'s zero-bubble schedule, in PaddlePaddle's order, each
  backward's weight gradients a W pass; docs/Pipeline.md#zb-h1), where it
  runs (at least as many microbatches as stages);
- auto's choice (the fastest candidate that fits the device).

For each: the step, the bubble, exposed p2p and the other exposed
(data- and tensor-parallel) communication (means over pipeline ranks), the
step over the pipeline's lower bound (which is communication-free), and the
busiest rank's memory.
The data-parallel options are the same in every column: NeMo's recipes'
DistributedDataParallelConfig (overlap_grad_reduce, overlap_param_gather,
the distributed optimizer), bucketed as Megatron buckets them, and
Megatron's training default align_param_gather (on with model chunks; off
without, as its arguments make it).

Usage: pipeline_schedules.py [BUILD_DIR] [--quick]
  --quick: the first row only, on H100 (a smoke test).
"""

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
BUILD = ARGS[0] if ARGS else "build"
QUICK = "--quick" in sys.argv
BIN = os.path.join(BUILD, "bin")

PROFILES = [("h100", os.path.join(HERE, "h100-sxm-ib400-calibrated.json")),
            ("a100", os.path.join(HERE, "a100-sxm-ib200-calibrated.json"))]

DP_OPTIONS = ("policy=megatron use-distributed-optimizer=true "
              "overlap-grad-reduce=true overlap-param-gather=true "
              "align-param-gather=true")

# (preset, its published layout as config fields, global batch, the
#  interleaved virtual size of Megatron's scripts, where they come from).
ROWS = [
    ("gpt3-175b",
     {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 16,
      "micro_batch_size": 1, "seq_length": 2048},
     1536, 2,
     "Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh L38-39, "
     "L56-57 (TP 8, PP 16, global batch 1536); V 2 from "
     "examples/academic_paper_scripts/sc21/run_table_1.sh L80-90 (96 "
     "layers on PP 16, --num-layers-per-virtual-pipeline-stage 3)"),
    ("llama2-70b",
     {"tensor_model_parallel_size": 4, "pipeline_model_parallel_size": 4,
      "sequence_parallel": True, "micro_batch_size": 1, "seq_length": 4096},
     512, 5,
     "NeMo nemo/collections/llm/recipes/llama3_70b.py trainer() (TP 4, PP 4, "
     "VP 5, SP; the same 80-layer, 8192-wide GQA transformer; its CP 2 is "
     "left out, ddp has no context parallelism), global batch 512"),
    ("mixtral-8x7b",
     {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4,
      "expert_model_parallel_size": 8, "micro_batch_size": 1,
      "seq_length": 4096},
     256, 2,
     "Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh L69-70, "
     "L83-87 (TP 1, PP 4, EP 8, global batch 256); the script has no "
     "virtual stages, V 2 is ours"),
]
DP_SIZES = [8, 16]

CANDIDATE = re.compile(
    r"^  (?P<name>\S.*?)\s+(?P<step>[0-9.]+)\s+(?P<bubble>[0-9.]+)\s+"
    r"(?P<p2p>[0-9.]+)\s+(?P<comm>[0-9.]+)\s+(?P<bound>[0-9.]+)\s+"
    r"(?P<gib>[0-9.]+)"
    r"(?P<nofit>  does not fit)?(?:  \((?P<mark>[^)]*)\))?$")


def plan(preset, fields, dp, profile, tmp):
    step = os.path.join(tmp, f"{preset}-dp{dp}.mlir")
    if not os.path.exists(step):
        args = [os.path.join(BIN, "ddp-import"), f"--preset={preset}",
                "--set", f"data_parallel_size={dp}"]
        for key, value in fields.items():
            value = str(value).lower() if isinstance(value, bool) else value
            args += ["--set", f"{key}={value}"]
        subprocess.run(args + ["-o", step], check=True)
    start = time.time()
    out = subprocess.run([os.path.join(BIN, "ddp-plan"), step,
                          f"--hw={profile}", f"--options={DP_OPTIONS}"],
                         check=True, capture_output=True, text=True).stdout
    candidates = {}
    for line in out.splitlines():
        match = CANDIDATE.match(line)
        if match:
            candidates[match["name"]] = match.groupdict()
    return candidates, time.time() - start


def cell(candidate):
    if candidate is None:
        return "refused | | | | | "
    fit = "" if not candidate["nofit"] else " (no fit)"
    return (f"{float(candidate['step']):.1f} | {float(candidate['bubble']):.1f}"
            f" | {float(candidate['p2p']):.1f} | {float(candidate['comm']):.1f}"
            f" | {candidate['bound']} | "
            f"{candidate['gib']}{fit}")


def main():
    rows = ROWS[:1] if QUICK else ROWS
    profiles = PROFILES[:1] if QUICK else PROFILES
    dps = DP_SIZES[1:] if QUICK else DP_SIZES
    print("| preset | GPU | DP | M | schedule | step ms | bubble ms | "
          "exposed p2p ms | other exposed comm ms | step / bound | "
          "peak GiB |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        for preset, fields, batch, virtual, source in rows:
            notes.append(f"- {preset}: {source}.")
            for dp in dps:
                microbatches = batch // (dp * fields["micro_batch_size"])
                layout = dict(fields, num_microbatches=microbatches)
                for gpu, profile in profiles:
                    candidates, seconds = plan(preset, layout, dp, profile,
                                               tmp)
                    pp = fields["pipeline_model_parallel_size"]
                    auto = next((c for c in candidates.values()
                                 if c["mark"] and "auto" in c["mark"]), None)
                    columns = [
                        ("Megatron 1F1B", candidates.get("1f1b")),
                        (f"Megatron interleaved V {virtual}",
                         candidates.get(f"interleaved v={virtual} group={pp}"
                                        " overlap-p2p-comm")),
                        ("ZB-H1", candidates.get("zb-h1 overlap-p2p-comm")),
                        (f"auto: {auto['name'] if auto else '?'}", auto),
                    ]
                    for label, candidate in columns:
                        print(f"| {preset} | {gpu} | {dp} | {microbatches} | "
                              f"{label} | {cell(candidate)} |", flush=True)
                    print(f"<!-- {preset} {gpu} dp {dp}: {len(candidates)} "
                          f"candidates planned in {seconds:.0f} s -->",
                          flush=True)
    print()
    print("\n".join(notes))


if __name__ == "__main__":
    main()
