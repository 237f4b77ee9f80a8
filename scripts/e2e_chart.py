#!/usr/bin/env python3
"""Draws the end-to-end benchmark's JSON (target/e2e-bench.json) as an SVG
bar chart: server CPU per stream for every arm at every concurrency level,
with streams/s written under each bar. Standard library only.

Usage: python3 scripts/e2e_chart.py [INPUT.json] [OUTPUT.svg] [--title TEXT]
"""

import json
import sys
from html import escape

COLORS = {
    "volo-stock": "#b0b0b0",
    "volo-codec": "#2b7bb9",
    "tonic-stock": "#d0d0d0",
    "tonic-codec": "#e07b39",
    "tonic-codec-guard-pass": "#f0a868",
    "tonic-codec-guard-assemble": "#f5c89a",
}


def main():
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
        f'numbers under bars: streams/s (client-bound on 2 cores)</text>'
    )
    out.append("</svg>")
    import os

    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
