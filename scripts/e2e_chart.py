#!/usr/bin/env python3
"""Draws the end-to-end benchmark's JSON (target/e2e-bench.json) as an SVG
bar chart: server CPU per stream for every arm at every concurrency level,
with streams/s written under each bar. Standard library only.

Usage: python3 scripts/e2e_chart.py [INPUT.json] [OUTPUT.svg] [--title TEXT]
       python3 scripts/e2e_chart.py --matrix [target/e2e-matrix.json] [docs/e2e-matrix.svg]

With --matrix it draws the output of `e2e-bench --matrix` instead: server CPU
per message (log scale) of this crate batched and unbatched and of the stock
framework, for every size x messages-per-stream cell, one panel per stack,
with the DATA frames per stream under each group.
"""

import json
import sys
from html import escape

COLORS = {
    "volo-stock": "#b0b0b0",
    "volo-codec": "#2b7bb9",
    "tonic-stock": "#d0d0d0",
    "tonic-codec": "#e07b39",
    "tonic-full": "#b8442c",
    "bare-hyper": "#6a6a6a",
}


MATRIX_ARMS = [
    ("batched (32 KiB)", "#2b7bb9"),
    ("unbatched (0)", "#8fc1e3"),
    ("stock", "#b0b0b0"),
]
MATRIX_STACKS = [
    ("volo-grpc", ["volo-batched", "volo-unbatched", "volo-stock"]),
    ("tonic (full framing)", ["tonic-full-batched", "tonic-full-unbatched", "tonic-stock"]),
]


def size_label(size):
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def matrix_chart(source, target):
    import math
    import os

    with open(source) as f:
        data = json.load(f)
    cells = [c for c in data["cells"] if c["section"] == "matrix" and c["representative"]]
    shapes = []
    for c in cells:
        if (c["count"], c["size"]) not in shapes:
            shapes.append((c["count"], c["size"]))
    by_key = {(c["arm"], c["count"], c["size"]): c["representative"] for c in cells}
    values = [m["server_us_per_message"] for m in by_key.values() if m["server_us_per_message"] > 0]
    if not values:
        sys.exit("no matrix cells in " + source)
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    bar_w, gap, group_gap = 11, 1, 12
    left, panel_h, top = 60, 220, 50
    group_w = 3 * (bar_w + gap) + group_gap
    width = left + len(shapes) * group_w + 40
    panel_total = panel_h + 70
    height = top + len(MATRIX_STACKS) * panel_total + 40

    def y_of(value, base):
        frac = (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return base + panel_h - panel_h * frac

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="22" font-size="15" font-weight="bold">server CPU per message '
        f'(µs, log scale, lower is better); under each group: DATA frames per stream '
        f'batched/unbatched/stock</text>',
    ]
    for li, (label, color) in enumerate(MATRIX_ARMS):
        lx = left + li * 150
        out.append(f'<rect x="{lx}" y="32" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{lx + 14}" y="41">{escape(label)}</text>')
    for pi, (stack, arms) in enumerate(MATRIX_STACKS):
        base = top + pi * panel_total + 10
        out.append(f'<text x="{left}" y="{base - 2}" font-weight="bold">{escape(stack)}</text>')
        decade = lo
        while decade <= hi:
            y = y_of(decade, base)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 30}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{decade:g}</text>')
            decade *= 10
        for gi, (count, size) in enumerate(shapes):
            gx = left + 6 + gi * group_w
            frames = []
            for ai, arm in enumerate(arms):
                m = by_key.get((arm, count, size))
                if m is None or not m["server_us_per_message"] > 0:
                    frames.append("-")
                    continue
                v = m["server_us_per_message"]
                y = y_of(v, base)
                x = gx + ai * (bar_w + gap)
                out.append(
                    f'<rect x="{x}" y="{y:.1f}" width="{bar_w}" height="{base + panel_h - y:.1f}" '
                    f'fill="{MATRIX_ARMS[ai][1]}"><title>{arm} {count} x {size_label(size)}: '
                    f'{v:.2f} µs/msg</title></rect>'
                )
                frames.append(f'{m["frames_per_stream"]:.0f}')
            cx = gx + 1.5 * (bar_w + gap)
            out.append(
                f'<text x="{cx}" y="{base + panel_h + 12}" text-anchor="middle" font-size="9">'
                f'{count}×{size_label(size)}</text>'
            )
            out.append(
                f'<text x="{cx}" y="{base + panel_h + 24}" text-anchor="middle" font-size="8" '
                f'fill="#555">{"/".join(frames)}</text>'
            )
    settings = data.get("settings", {})
    out.append(
        f'<text x="{left}" y="{height - 12}" font-size="10" fill="#555">'
        f'e2e-bench --matrix: median round of {settings.get("rounds")}, '
        f'{settings.get("window_s")} s windows per cell, raw HTTP/2 client</text>'
    )
    out.append("</svg>")
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {target}")


def main():
    if "--matrix" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--matrix"]
        matrix_chart(
            rest[0] if rest else "target/e2e-matrix.json",
            rest[1] if len(rest) > 1 else "docs/e2e-matrix.svg",
        )
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    title = "server CPU per stream (µs, lower is better)"
    if "--title" in sys.argv:
        title = sys.argv[sys.argv.index("--title") + 1]
        args = [a for a in args if a != title]
    source = args[0] if args else "target/e2e-bench.json"
    target = args[1] if len(args) > 1 else "docs/e2e-bench.svg"
    with open(source) as f:
        data = json.load(f)

    arms = data["arms"]
    levels = sorted({row["streams"] for arm in arms for row in arm["server_streaming"]})
    bar_w, gap, group_gap = 46, 8, 40
    left, top, height = 60, 50, 260
    group_w = len(arms) * (bar_w + gap) + group_gap
    width = left + len(levels) * group_w + 220
    values = [
        row["result"]["median_server_cpu_us"]
        for arm in arms
        for row in arm["server_streaming"]
    ]
    peak = max([v for v in values if v == v] + [1.0])

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 80}" '
        f'font-family="sans-serif" font-size="12">',
        f'<text x="{left}" y="24" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + height}" x2="{width - 200}" y2="{top + height}" stroke="#333"/>',
    ]
    for gi, level in enumerate(levels):
        gx = left + gi * group_w
        for ai, arm in enumerate(arms):
            row = next((r for r in arm["server_streaming"] if r["streams"] == level), None)
            if row is None:
                continue
            cpu = row["result"]["median_server_cpu_us"]
            rate = row["result"]["median_rate"]
            h = 0 if cpu != cpu else height * cpu / peak
            x = gx + ai * (bar_w + gap)
            y = top + height - h
            color = COLORS.get(arm["arm"], "#888")
            out.append(f'<rect x="{x}" y="{y:.1f}" width="{bar_w}" height="{h:.1f}" fill="{color}"/>')
            out.append(f'<text x="{x + bar_w / 2}" y="{y - 4:.1f}" text-anchor="middle">{cpu:.0f}</text>')
            out.append(
                f'<text x="{x + bar_w / 2}" y="{top + height + 14}" text-anchor="middle" '
                f'font-size="10">{rate:.0f}/s</text>'
            )
        center = gx + (len(arms) * (bar_w + gap)) / 2
        out.append(
            f'<text x="{center}" y="{top + height + 34}" text-anchor="middle" '
            f'font-weight="bold">{level} streams in flight</text>'
        )
    lx = width - 190
    for ai, arm in enumerate(arms):
        ly = top + ai * 20
        out.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{COLORS.get(arm["arm"], "#888")}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + 11}">{escape(arm["label"])}</text>')
    settings = data.get("settings", {})
    out.append(
        f'<text x="{left}" y="{top + height + 62}" font-size="10" fill="#555">'
        f'median of {settings.get("rounds")} rounds, {settings.get("window_s")} s windows; '
        f'numbers under bars: streams/s</text>'
    )
    out.append("</svg>")
    import os

    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
