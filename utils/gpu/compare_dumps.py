#!/usr/bin/env python3
"""Compares two parameter dumps (ddp-run/ddp-launch --dump-params) element by
element: prints one line, "equal" or how many elements of how many parameters
differ and by how many units in the last place at most, and the number of
non-finite values (a comparison of NaNs proves nothing). Exit status 1 when
the dumps differ.

    utils/gpu/compare_dumps.py EXPECTED ACTUAL
"""
import struct
import sys

FORMATS = {"f16": ("<e", 2), "bf16": (None, 2), "f32": ("<f", 4),
           "f64": ("<d", 8)}


def values(dtype, hexdata):
    data = bytes.fromhex(hexdata)
    size = FORMATS[dtype][1]
    for i in range(0, len(data), size):
        bits = int.from_bytes(data[i:i + size], "little")
        if dtype == "bf16":
            value = struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
        else:
            value = struct.unpack(FORMATS[dtype][0], data[i:i + size])[0]
        yield bits, value, size


def ordered(bits, size):
    """Maps the bits of a float to an integer that counts ulps."""
    sign = 1 << (8 * size - 1)
    return -(bits & ~sign) if bits & sign else bits


def load(path):
    params = {}
    with open(path) as dump:
        for line in dump:
            fields = line.split()
            # A parameter of no elements has no hex field.
            name, dtype, numel = fields[:3]
            params[name] = (dtype, int(numel),
                            fields[3] if len(fields) > 3 else "")
    return params


def main():
    expected, actual = load(sys.argv[1]), load(sys.argv[2])
    if expected.keys() != actual.keys():
        print("different parameters:",
              sorted(expected.keys() ^ actual.keys()))
        return 1
    differing_params = differing = total = nonfinite = 0
    max_ulps = 0
    for name, (dtype, numel, hexdata) in expected.items():
        other = actual[name]
        total += numel
        if other[0] != dtype or other[1] != numel:
            print(f"{name}: {dtype} x {numel} against {other[0]} x {other[1]}")
            return 1
        nonfinite += sum(1 for _, v, _ in values(dtype, hexdata)
                         if v != v or v in (float("inf"), float("-inf")))
        if other[2] == hexdata:
            continue
        differing_params += 1
        for (a, _, size), (b, _, _) in zip(values(dtype, hexdata),
                                           values(dtype, other[2])):
            if a != b:
                differing += 1
                max_ulps = max(max_ulps, abs(ordered(a, size) -
                                             ordered(b, size)))
    if differing_params == 0:
        print(f"equal ({len(expected)} params, {total} elements, "
              f"{nonfinite} non-finite)")
        return 0
    print(f"{differing} of {total} elements differ in {differing_params} of "
          f"{len(expected)} params, max {max_ulps} ulp ({nonfinite} "
          f"non-finite)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
