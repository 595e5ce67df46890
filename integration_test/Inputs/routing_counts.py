"""Prints what a ddp-run trace says the router did (each moe_route event's
`kept` tokens per expert and `dropped` routes), per rank in step order, then
how many distinct decisions each layer position saw across ranks: a router
that really depends on the data gives different counts on different ranks.
"""
import json
import sys
from collections import defaultdict

with open(sys.argv[1]) as f:
    trace = json.load(f)
events = trace["traceEvents"] if isinstance(trace, dict) else trace
by_rank = defaultdict(list)
for event in events:
    args = event.get("args", {})
    if event.get("name") == "moe_route" and "kept" in args:
        by_rank[event["pid"]].append((event["ts"], args["kept"], args["dropped"]))
ranks = sorted(by_rank)
print("ranks:", len(ranks))
decisions = [[kept for _, kept, _ in sorted(by_rank[rank])] for rank in ranks]
print("routes per rank:", sorted({len(d) for d in decisions}))
# Position i is the same layer and step on every rank.
positions = min(len(d) for d in decisions)
distinct = [len({d[i] for d in decisions}) for i in range(positions)]
print("positions where all ranks agree:", sum(1 for n in distinct if n == 1))
dropped = sum(dropped for rank in ranks for _, _, dropped in by_rank[rank])
print("routes dropped:", "some" if dropped else "none")
# The counted all-to-alls (ddp.all_to_all_v): the first after each route on
# a rank is the dispatch of its tokens, which sends the rows the router kept.
moves = defaultdict(list)
for event in events:
    args = event.get("args", {})
    if event.get("name") == "all_to_all_v" and "sent_rows" in args:
        moves[event["pid"]].append((event["ts"], args["sent_rows"], args["rows"]))
if moves:
    matched = total = 0
    for rank in ranks:
        after = sorted(moves[rank])
        for ts, kept, _ in by_rank[rank]:
            first = next((m for m in after if m[0] > ts), None)
            total += 1
            matched += first is not None and first[1] == sum(
                int(count) for count in kept.split(","))
    print("dispatches that sent the kept rows:",
          "all" if matched == total else f"{matched} of {total}")
    sent = sum(m[1] for rank in moves for m in moves[rank])
    buffered = sum(m[2] for rank in moves for m in moves[rank])
    print("counted rows sent below the buffers' rows:",
          "yes" if sent < buffered else "no")
