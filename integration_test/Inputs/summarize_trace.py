"""Checks a Chrome trace against the format shared by the runtime and the
simulator (docs/ddp-run.md, "Traces") and prints a summary for FileCheck."""

import json
import sys

trace = json.load(open(sys.argv[1]))
assert trace["displayTimeUnit"] == "ms", trace.get("displayTimeUnit")
events = trace["traceEvents"]
spans = [e for e in events if e["ph"] == "X"]
metadata = [e for e in events if e["ph"] == "M"]
process_names = {e["pid"]: e["args"]["name"] for e in metadata if e["name"] == "process_name"}
thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in metadata if e["name"] == "thread_name"}
for span in spans:
    for key in ("name", "cat", "ts", "dur", "pid", "tid"):
        assert key in span, (key, span)
    assert span["cat"] in ("compute", "comm", "wait"), span
    assert span["dur"] >= 0, span
    assert (span["pid"], span["tid"]) in thread_names, ("unnamed stream", span)
    assert span["pid"] in process_names, ("unnamed process", span)
    assert (span["tid"] == 0) == (thread_names[(span["pid"], span["tid"])] == "compute"), span
print("processes:", ", ".join(process_names[p] for p in sorted(process_names)))
print("streams:", ", ".join(sorted(set(thread_names.values()))))
print("categories:", ", ".join(sorted({s["cat"] for s in spans})))
print("names:", ", ".join(sorted({s["name"] for s in spans})))
