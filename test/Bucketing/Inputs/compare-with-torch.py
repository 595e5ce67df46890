"""Compares the pytorch bucketing policy with PyTorch's own
`torch.distributed._compute_bucket_assignment_by_size` on random parameter
inventories, through ddp-import --inventory and ddp-opt's layout report.

Each inventory has parameters of random sizes and dtypes (f32, f16, bf16) and
a random ready order. PyTorch is called as its reducer calls it when it
rebuilds the buckets after the first iteration: the tensors in ready order,
`tensor_indices` their registration indices, and the limits
[first-bucket-bytes, bucket-cap-bytes]. The buckets must match in contents,
order within a bucket, and bucket order (the reducer's issue order).

Run with a Python that can import torch; exits 1 on any mismatch.
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def random_inventory(rng):
    dtypes = rng.sample(sorted(DTYPES), rng.randint(1, len(DTYPES)))
    params = []
    for index in range(rng.randint(1, 40)):
        numel = int(2 ** rng.uniform(0, 20))
        params.append({"name": "p%d" % index, "shape": [numel],
                       "dtype": rng.choice(dtypes)})
    ready = [param["name"] for param in params]
    rng.shuffle(ready)
    total = sum(p["shape"][0] * BYTES[p["dtype"]] for p in params)
    # Limits from one byte to the whole model, so that inventories range
    # from one bucket per gradient to one bucket per dtype.
    cap = max(1, int(2 ** rng.uniform(0, math.log2(total) + 1)))
    first = cap if rng.random() < 0.25 else max(
        1, int(2 ** rng.uniform(0, math.log2(total) + 1)))
    inventory = {"tokens_per_microbatch": 16, "data_parallel_size": 2,
                 "params": params, "ready_order": ready}
    return inventory, first, cap


def ddp_buckets(args, inventory, first, cap, workdir):
    path = os.path.join(workdir, "inventory.json")
    with open(path, "w") as file:
        json.dump(inventory, file)
    imported = subprocess.run([args.ddp_import, "--inventory=" + path],
                              check=True, capture_output=True)
    layout = subprocess.run(
        [args.ddp_opt,
         "--ddp-assign-buckets=policy=pytorch first-bucket-bytes=%d "
         "bucket-cap-bytes=%d" % (first, cap),
         "--ddp-print-bucket-layout", "-o", os.devnull],
        input=imported.stdout, check=True, capture_output=True)
    return [[param["name"] for param in bucket["params"]]
            for bucket in json.loads(layout.stdout)["buckets"]]


def torch_buckets(inventory, first, cap):
    index_of = {p["name"]: i for i, p in enumerate(inventory["params"])}
    ready = [index_of[name] for name in inventory["ready_order"]]
    tensors = [torch.empty(inventory["params"][i]["shape"][0],
                           dtype=DTYPES[inventory["params"][i]["dtype"]])
               for i in ready]
    buckets, _ = dist._compute_bucket_assignment_by_size(
        tensors, [first, cap], [False] * len(tensors), ready)
    return [[inventory["params"][i]["name"] for i in bucket]
            for bucket in buckets]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--ddp-import", default="ddp-import")
    parser.add_argument("--ddp-opt", default="ddp-opt")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    mismatches = 0
    with tempfile.TemporaryDirectory() as workdir:
        for number in range(args.count):
            inventory, first, cap = random_inventory(rng)
            ours = ddp_buckets(args, inventory, first, cap, workdir)
            theirs = torch_buckets(inventory, first, cap)
            if ours != theirs:
                mismatches += 1
                if sorted(ours) == sorted(theirs):
                    kind = "same buckets, different order"
                else:
                    kind = "different buckets"
                print("inventory %d (first-bucket-bytes=%d bucket-cap-bytes=%d"
                      "): %s\n  ddp:   %s\n  torch: %s\n  %s" % (
                          number, first, cap, kind, ours, theirs,
                          json.dumps(inventory)))
    print("compared %d inventories with torch %s: %d mismatches" % (
        args.count, torch.__version__, mismatches))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
