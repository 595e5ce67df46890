#!/usr/bin/env python3
"""Measured against predicted, by category of op: the busy time of each
category in the last step of a measured Chrome trace (ddp-launch --trace)
next to the simulator's trace of one step (ddp-simulate trace=...).

    utils/gpu/trace_categories.py MEASURED.json PREDICTED.json [--json OUT]

The last step of the measured trace starts at the k-th last occurrence of
the predicted step's first op, where k is how often one step runs it. Categories: GEMMs (names "gemm ..."), attention
(its forward and backward), optimizer (adam, sgd and the casts of the main
copies), the other compute (memory-bound kernels), collectives; the
runtime's waits are shown but have no prediction. Then the same by op name.
"""
import argparse
import json


def events(path):
    with open(path) as trace:
        data = json.load(trace)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X"]


def category(event):
    name, cat = event["name"], event.get("cat", "")
    if cat == "comm":
        return "collectives"
    if cat == "wait":
        return "waits"
    if name.startswith("gemm"):
        return "gemm"
    if name.startswith("attention"):
        return "attention"
    if name in ("adam", "sgd", "cast"):
        return "optimizer"
    return "other compute"


def sums(selected, key_of=category):
    totals = {}
    for event in selected:
        key = key_of(event)
        time, count = totals.get(key, (0.0, 0))
        totals[key] = (time + event["dur"] / 1e3, count + 1)
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measured")
    parser.add_argument("predicted")
    parser.add_argument("--json")
    parser.add_argument("--rows", action="store_true",
                        help="also print 'row|category|ops|measured|"
                             "predicted|ratio' lines")
    args = parser.parse_args()
    predicted = sorted(events(args.predicted), key=lambda e: e["ts"])
    first = predicted[0]["name"]
    # The step may run its first op more than once (once per microbatch).
    per_step = sum(1 for e in predicted if e["name"] == first)
    measured = events(args.measured)
    starts = sorted(e["ts"] for e in measured if e["name"] == first and
                    e.get("tid", 0) == 0)
    if len(starts) < per_step:
        raise SystemExit(f"no whole step of '{first}' in {args.measured}")
    begin = starts[-per_step]
    last = [e for e in measured if e["ts"] >= begin]
    got, want = sums(last), sums(predicted)
    rows = []
    print(f"{'category':<14} {'ops':>5} {'measured ms':>12} "
          f"{'predicted ms':>13} {'measured/predicted':>19}")
    for key in ("gemm", "attention", "other compute", "optimizer",
                "collectives", "waits"):
        m, count = got.get(key, (0.0, 0))
        p, _ = want.get(key, (0.0, 0))
        ratio = m / p if p else float("nan")
        rows.append({"category": key, "ops": count, "measured_ms": m,
                     "predicted_ms": p, "ratio": ratio})
        if count or p:
            print(f"{key:<14} {count:>5} {m:>12.3f} {p:>13.3f} {ratio:>19.2f}")
    span = (max(e["ts"] + e["dur"] for e in last) - begin) / 1e3
    end = max(e["ts"] + e["dur"] for e in predicted) / 1e3
    print(f"{'step (span)':<14} {len(last):>5} {span:>12.3f} {end:>13.3f} "
          f"{span / end:>19.2f}")
    # Each op's name (a compute kind, a GEMM's phase, a collective), for
    # where a category's difference comes from.
    by_name, want_by_name = (sums(last, lambda e: e["name"]),
                             sums(predicted, lambda e: e["name"]))
    print(f"\n{'op':<24} {'ops':>5} {'measured ms':>12} {'predicted ms':>13} "
          f"{'measured/predicted':>19}")
    for name in sorted(set(by_name) | set(want_by_name),
                       key=lambda n: -by_name.get(n, (0.0, 0))[0]):
        m, count = by_name.get(name, (0.0, 0))
        p, _ = want_by_name.get(name, (0.0, 0))
        ratio = f"{m / p:19.2f}" if p else f"{'':>19}"
        print(f"{name:<24} {count:>5} {m:>12.3f} {p:>13.3f} {ratio}")
    # Each GEMM shape (phase, m x n x k): whether a category's difference
    # is one shape's or every shape's.
    def shape(e):
        a = e.get("args", {})
        return f"{e['name']} {a.get('m')}x{a.get('n')}x{a.get('k')}"
    gemms = [e for e in last if e["name"].startswith("gemm")]
    if gemms:
        got_shape = sums(gemms, shape)
        want_shape = sums([e for e in predicted
                           if e["name"].startswith("gemm")], shape)
        print(f"\n{'gemm shape':<34} {'ops':>5} {'us per op':>12} "
              f"{'predicted us':>13} {'measured/predicted':>19}")
        for key in sorted(set(got_shape) | set(want_shape)):
            m, count = got_shape.get(key, (0.0, 0))
            p, pcount = want_shape.get(key, (0.0, 0))
            each = m * 1e3 / count if count else 0.0
            peach = p * 1e3 / pcount if pcount else 0.0
            ratio = f"{m / p:19.2f}" if p else f"{'':>19}"
            print(f"{key:<34} {count:>5} {each:>12.1f} {peach:>13.1f} {ratio}")
    if args.rows:
        for r in rows:
            if r["predicted_ms"] > 0:
                print(f"row|{r['category']}|{r['ops']}|{r['measured_ms']:.3f}|"
                      f"{r['predicted_ms']:.3f}|{r['ratio']:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rows": rows, "step_ms": span, "predicted_ms": end},
                      out, indent=1)


if __name__ == "__main__":
    main()
