#!/usr/bin/env python3
"""The coloured share of each lane of a rendered timeline against the report.

Usage: svg_lane_shares.py TIMELINE.svg RENDERED.png REPORT.json [PANEL]

Reads the lanes' places from the SVG (their grey backgrounds), decodes the
PNG rsvg-convert rendered (8-bit RGB or RGBA, no interlace: what it
writes), and sums each lane's coloured pixels per category, a pixel blended
with the background counting by how far it is from it. Prints, per lane
and category, the measured pixels and the report's (busy time over the step
times the plot's 1000 pixels over the longest panel's step), and exits 1 when one differs by more than 3
pixels. PANEL (default 0) picks the panel whose lanes the report describes.
"""

import json
import re
import struct
import sys
import zlib

PLOT_X, PLOT_WIDTH, LANE_HEIGHT = 150, 1000, 28
BACKGROUND = (0xF2, 0xF2, 0xF2)
COLORS = {"compute": (0x4E, 0x79, 0xA7), "comm": (0xF2, 0x8E, 0x2B),
          "wait": (0xE1, 0x57, 0x59)}
TOLERANCE_PX = 3.0


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(
                ">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (
                    up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        previous = line
    return width, channels, rows


def solve3(m, v):
    """x with m x = v, m a 3x3 list of rows (Cramer's rule)."""
    def det(a):
        return (a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
                - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
                + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]))
    d = det(m)
    out = []
    for col in range(3):
        a = [row[:] for row in m]
        for r in range(3):
            a[r][col] = v[r]
        out.append(det(a) / d)
    return out


# A rendered pixel is the background plus a weighted sum of the three
# colours over it (antialiasing blends a partly covered pixel with what is
# under it): solve for the weights.
NAMES = list(COLORS)
MATRIX = [[COLORS[name][channel] - BACKGROUND[channel] for name in NAMES]
          for channel in range(3)]


def shares(pixel):
    weights = solve3(MATRIX, [p - b for p, b in zip(pixel, BACKGROUND)])
    return {name: max(0.0, min(1.0, w)) for name, w in zip(NAMES, weights)}


def main():
    svg, png, report_path = sys.argv[1:4]
    panel = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    report = json.load(open(report_path))
    text = open(svg).read()
    lanes = [float(y) for y in re.findall(
        r'<rect x="150" y="([0-9.]+)" width="1000" height="28.0" '
        r'fill="#f2f2f2"/>', text)]
    # The panels share one axis, which spans the longest step.
    span = max(float(ms) for ms in re.findall(r": step ([0-9.]+) ms", text))
    streams = report["streams"]
    lanes = lanes[panel * len(streams):(panel + 1) * len(streams)]
    _, channels, rows = read_png(png)
    step = span
    failed = False
    for index, (top, stream) in enumerate(zip(lanes, streams)):
        measured = {name: 0.0 for name in COLORS}
        for y in range(int(top), int(top) + LANE_HEIGHT):
            row = rows[y]
            for x in range(PLOT_X, PLOT_X + PLOT_WIDTH):
                pixel = tuple(row[x * channels:x * channels + 3])
                if pixel == BACKGROUND:
                    continue
                for name, weight in shares(pixel).items():
                    measured[name] += weight / LANE_HEIGHT
        expected = {"compute" if index == 0 else "comm":
                    stream["busy_ms"] / step * PLOT_WIDTH}
        if index == 0:
            # Every exposed moment is a wait on these steps (none ends with
            # communication still running).
            expected["wait"] = (report["times_ms"]["exposed_communication"]
                                / step * PLOT_WIDTH)
        for name, pixels in expected.items():
            off = abs(measured[name] - pixels) > TOLERANCE_PX
            failed |= off
            print(f"lane {index} {name}: rendered {measured[name]:.1f} px, "
                  f"report {pixels:.1f} px{' MISMATCH' if off else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
