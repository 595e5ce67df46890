#!/usr/bin/env python3
"""Regenerates the ddp-plan report and picture that docs/CostModel.md shows.

Imports the GPT-3 175B test log (test/Import/Inputs/megatron-gpt3-175b.log),
runs `ddp-plan --svg`, writes the picture to
docs/images/ddp-plan-gpt3-175b.svg and puts the report between the
`<!-- BEGIN ddp-plan report -->` and `<!-- END ddp-plan report -->` lines
of docs/CostModel.md. Run after a change to what ddp-plan prints or draws.

Usage: utils/docs_plan_report.py [BUILD_DIR]
"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
LOG = os.path.join(ROOT, "test", "Import", "Inputs", "megatron-gpt3-175b.log")
DOC = os.path.join(ROOT, "docs", "CostModel.md")
SVG = os.path.join(ROOT, "docs", "images", "ddp-plan-gpt3-175b.svg")
BEGIN, END = "<!-- BEGIN ddp-plan report -->", "<!-- END ddp-plan report -->"


def main():
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "gpt3.mlir")
        subprocess.run([os.path.join(BUILD, "bin", "ddp-import"),
                        f"--megatron-args={LOG}", "--quiet", "-o", step],
                       check=True)
        report = subprocess.run(
            [os.path.join(BUILD, "bin", "ddp-plan"), step, f"--svg={SVG}"],
            check=True, capture_output=True, text=True).stdout
    text = open(DOC).read()
    head, rest = text.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    block = ("```\n" + report + "```\n\n"
             "![Both timelines of the plan](images/ddp-plan-gpt3-175b.svg)\n")
    open(DOC, "w").write(head + BEGIN + "\n" + block + END + tail)
    print(f"wrote {SVG} and the report in {DOC}")


if __name__ == "__main__":
    main()
