"""Reads a measured Chrome trace (docs/ddp-run.md, "Traces") and says, for
each rank, whether a reduce-scatter ran while a GEMM issued after it ran: the
GEMM started after the reduce-scatter started and before it ended. That is
the overlap ddp-overlap-tp-comm's pipeline exists for (chunk i's collective
beside chunk i + 1's GEMM), read as the runtime's OverlapTest reads it."""

import json
import sys

trace = json.load(open(sys.argv[1]))
num_ranks = int(sys.argv[2])
events = trace["traceEvents"]
rank_of_pid = {e["pid"]: e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "process_name"}
spans = [e for e in events if e["ph"] == "X"]
for rank in range(num_ranks):
    mine = [s for s in spans if rank_of_pid.get(s["pid"]) == "rank %d" % rank]
    scatters = [s for s in mine
                if s["cat"] == "comm" and "reduce_scatter" in s["name"]]
    gemms = [s for s in mine if s["cat"] == "compute" and s["name"] == "gemm fwd"]
    beside = any(c["ts"] < g["ts"] < c["ts"] + c["dur"]
                 for c in scatters for g in gemms)
    print("rank %d: %s" % (rank, "a chunk's reduce_scatter ran beside a later gemm fwd"
                           if beside else "no reduce_scatter ran beside a gemm fwd"))
