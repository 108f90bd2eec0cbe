"""p95 and recall@10 against the share of the corpus a scope admits, as one SVG (no plotting dependency).

    python -m bench.latency.plot bench/results/latency-100000.json bench/results/latency-1000000.json \
        --out docs/plots/latency-selectivity.svg

One line per function and corpus size over the sweep's cells (`sweep` of bench.latency's JSON),
x = admitted / corpus size on a log axis (the unfiltered cell at 100 %); filled markers for cells the
planner ranked exactly, open ones for HNSW walks. Left panel: p95 ms (log axis) with the issue-31
targets (30 ms up to 2 %, 60 ms for all); right panel: recall@10 with the 0.95 target.
"""

from __future__ import annotations

import argparse
import json
import math
from html import escape
from pathlib import Path
from typing import Any

PANEL_W, PANEL_H = 430, 300
PAD_L, PAD_R, PAD_T, PAD_B = 52, 14, 34, 44
LEGEND_H = 84
X_MIN, X_MAX = 1e-5, 1.0
COLOURS = {"hybrid_search": "#1f77b4", "match_documents": "#e6550d"}
DASHES = {100_000: "5,3", 1_000_000: ""}


def series(records: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in records:
        if not r.get("admitted"):
            continue
        out.setdefault((r["function"], r["size"]), []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: (r["admitted"], r["scope"]))
    return out


def x_of(share: float, x0: float, w: float) -> float:
    share = min(max(share, X_MIN), X_MAX)
    return x0 + (math.log10(share) - math.log10(X_MIN)) / (math.log10(X_MAX) - math.log10(X_MIN)) * w


def panel(
    title: str,
    data: dict[tuple[str, int], list[dict[str, Any]]],
    value: str,
    y_range: tuple[float, float],
    log_y: bool,
    targets: list[tuple[float, str]],
    ox: float,
) -> list[str]:
    x0, y0 = ox + PAD_L, PAD_T + PANEL_H - PAD_B
    w, h = PANEL_W - PAD_L - PAD_R, PANEL_H - PAD_T - PAD_B
    lo, hi = y_range

    def y_of(v: float) -> float:
        v = min(max(v, lo), hi)
        if log_y:
            return y0 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * h
        return y0 - (v - lo) / (hi - lo) * h

    out = [
        f'<text x="{ox + PANEL_W / 2:.1f}" y="20" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>",
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + w}" y2="{y0}" stroke="#444"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - h}" stroke="#444"/>',
        f'<text x="{x0 + w / 2:.1f}" y="{y0 + 32}" text-anchor="middle">share of the corpus in scope</text>',
    ]
    for tick in (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0):
        x = x_of(tick, x0, w)
        out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 - h}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle">{tick * 100:g}%</text>')
    ticks = [1, 3, 10, 30, 100, 300, 1000] if log_y else [0.8, 0.85, 0.9, 0.95, 1.0]
    for tick in (t for t in ticks if lo <= t <= hi):
        y = y_of(tick)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for level, label in targets:
        y = y_of(level)
        out.append(
            f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#2ca02c" '
            'stroke-dasharray="2,2"/>'
        )
        out.append(
            f'<text x="{x0 + w - 2}" y="{y - 3:.1f}" text-anchor="end" fill="#2ca02c">{escape(label)}</text>'
        )
    for (function, size), rows in sorted(data.items()):
        points = [
            (x_of(r["admitted"] / size, x0, w), y_of(r[value]), r) for r in rows if r.get(value) is not None
        ]
        if not points:
            continue
        colour, dash = COLOURS.get(function, "#555"), DASHES.get(size, "1,2")
        path = "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
        out.append(
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="1.5" stroke-dasharray="{dash}"/>'
        )
        for x, y, r in points:
            exact = (r.get("exact_plan_share") or 0) >= 0.5
            fill = colour if exact else "white"
            tip = f"{r['scope']} {function} {size:,}: {r[value]}"
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" fill="{fill}" stroke="{colour}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    return out


def render(records: list[dict[str, Any]]) -> str:
    data = series(records)
    width, height = 2 * PANEL_W, PANEL_H + LEGEND_H
    body = panel("p95 latency, ms (c=1)", data, "p95_ms", (1, 1000), True, [(30, "30 ms"), (60, "60 ms")], 0)
    body += panel(
        "recall@10 against the exact plan", data, "recall_at_10", (0.8, 1.0), False, [(0.95, "0.95")], PANEL_W
    )
    legend_y = PANEL_H + PAD_T + 10
    items = sorted(data)
    for n, (function, size) in enumerate(items):
        x = 20 + (n % 2) * 300
        y = legend_y + (n // 2) * 18
        colour, dash = COLOURS.get(function, "#555"), DASHES.get(size, "1,2")
        body.append(
            f'<line x1="{x}" y1="{y}" x2="{x + 30}" y2="{y}" stroke="{colour}" stroke-width="1.5" '
            f'stroke-dasharray="{dash}"/>'
        )
        body.append(f'<text x="{x + 36}" y="{y + 4}">{escape(function)}, {size:,} chunks</text>')
    body.append(
        f'<text x="620" y="{legend_y + 4}">● ranked exactly</text>'
        f'<text x="620" y="{legend_y + 22}">○ HNSW walk</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
        f'<rect width="{width}" height="{height}" fill="white"/>' + "".join(body) + "</svg>\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", help="bench.latency JSON reports (their sweep)")
    parser.add_argument("--out", type=Path, default=Path("docs/plots/latency-selectivity.svg"))
    args = parser.parse_args(argv)
    records = [
        r for path in args.reports for r in json.loads(path.read_text(encoding="utf-8")).get("sweep", [])
    ]
    args.out.write_text(render(records), encoding="utf-8")
    print(f"wrote {args.out} ({len(records)} cells)")


if __name__ == "__main__":
    main()
