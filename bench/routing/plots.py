"""Score distributions as small SVG files (no plotting dependency): one file per variant, one panel
per set, the share of answerable and unanswerable questions per score bin, the policy's thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from bench.routing.scorers import policy

BINS = 20
PANEL_W, PANEL_H = 330, 190
PAD_L, PAD_R, PAD_T, PAD_B = 42, 12, 30, 34
COLUMNS = 3
LEGEND_H = 46
MIN_WIDTH = 560
COLOURS = {"answerable": "#1f77b4", "unanswerable": "#e6550d"}


def histogram(scores: Sequence[float], bins: int = BINS) -> list[float]:
    """The share of scores in each of `bins` equal bins over [0, 1] (1.0 falls in the last one)."""
    counts = [0] * bins
    for s in scores:
        counts[min(max(int(s * bins), 0), bins - 1)] += 1
    n = max(len(scores), 1)
    return [c / n for c in counts]


def step_path(shares: Sequence[float], x0: float, y0: float, w: float, h: float, top: float) -> str:
    """An outline of the histogram as one SVG path (baseline to baseline), y scaled so `top` is h."""
    bin_w = w / len(shares)
    parts = [f"M{x0:.1f},{y0:.1f}"]
    for i, share in enumerate(shares):
        y = y0 - (share / top) * h if top else y0
        parts.append(f"L{x0 + i * bin_w:.1f},{y:.1f}L{x0 + (i + 1) * bin_w:.1f},{y:.1f}")
    parts.append(f"L{x0 + w:.1f},{y0:.1f}Z")
    return "".join(parts)


def panel(
    title: str, scores: dict[str, list[float]], thresholds: dict[str, float], ox: float, oy: float
) -> list[str]:
    x0, y0 = ox + PAD_L, oy + PANEL_H - PAD_B
    w, h = PANEL_W - PAD_L - PAD_R, PANEL_H - PAD_T - PAD_B
    shares = {side: histogram(values) for side, values in scores.items()}
    top = max((v for s in shares.values() for v in s), default=0.0) or 1.0
    out = [
        f'<text x="{ox + PANEL_W / 2:.1f}" y="{oy + 18:.1f}" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>",
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + w}" y2="{y0}" stroke="#444"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - h}" stroke="#444"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = x0 + tick * w
        out.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle">{tick:g}</text>')
    out.append(f'<text x="{x0 - 4}" y="{y0 - h + 4:.1f}" text-anchor="end">{100 * top:.0f}%</text>')
    out.append(f'<text x="{x0 - 4}" y="{y0:.1f}" text-anchor="end">0</text>')
    for side, values in shares.items():
        colour = COLOURS[side]
        out.append(
            f'<path d="{step_path(values, x0, y0, w, h, top)}" fill="{colour}" fill-opacity="0.25" '
            f'stroke="{colour}" stroke-width="1.5"/>'
        )
    for name, t in thresholds.items():
        x = x0 + t * w
        side, dx = ("end", -3) if t > 0.8 else ("start", 3)  # the label inside the plot, beside its line
        out.append(
            f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 - h}" stroke="#555" stroke-dasharray="4 3"/>'
            f'<text x="{x + dx:.1f}" y="{y0 - h + 10:.1f}" text-anchor="{side}" fill="#555">'
            f"{escape(name)}</text>"
        )
    out.append(
        f'<text x="{x0 + w / 2:.1f}" y="{y0 + 28}" text-anchor="middle" fill="#555">best_overall_score</text>'
    )
    return out


def svg(
    title: str, panels: Sequence[tuple[str, dict[str, list[float]]]], thresholds: dict[str, float]
) -> str:
    """One figure: a title and legend, then the panels in rows of COLUMNS."""
    cols = min(COLUMNS, max(len(panels), 1))
    rows = (len(panels) + cols - 1) // cols
    width, height = max(cols * PANEL_W, MIN_WIDTH), rows * PANEL_H + LEGEND_H + 8
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="17" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    x = 8
    for side, colour in COLOURS.items():
        label = f"{side} questions (share per bin of {1 / BINS:g})"
        body.append(
            f'<rect x="{x}" y="26" width="12" height="12" fill="{colour}" fill-opacity="0.4" '
            f'stroke="{colour}"/><text x="{x + 16}" y="36">{escape(label)}</text>'
        )
        x += 7 * len(label) + 30
    for i, (name, scores) in enumerate(panels):
        body += panel(name, scores, thresholds, (i % cols) * PANEL_W, LEGEND_H + (i // cols) * PANEL_H)
    body.append("</svg>")
    return "\n".join(body) + "\n"


def thresholds_of(version: str) -> dict[str, float]:
    p = policy(version)
    found = {"T_low": getattr(p, "t_low", None), "T_high": getattr(p, "t_high", None)}
    return {k: float(v) for k, v in found.items() if isinstance(v, int | float)}


def write_plots(report: dict[str, Any], directory: Path) -> list[Path]:
    """docs/plots/routing-<variant>.svg for every variant in the report (panels: its sets)."""
    by_kind: dict[str, list[tuple[str, dict[str, list[float]]]]] = {}
    for s in report["sets"].values():
        if "scores" in s:
            auroc = s["policies"][report["default_policy"]]["default"]["auroc"]
            by_kind.setdefault(s["variant"], []).append((f"{s['label']} (AUROC {auroc:.3f})", s["scores"]))
    thresholds = thresholds_of(report["default_policy"])
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind, panels in by_kind.items():
        path = directory / f"routing-{kind}.svg"
        title = f"{kind}: best_overall_score ({report['default_policy']}), answerable vs unanswerable"
        path.write_text(svg(title, panels, thresholds), encoding="utf-8")
        paths.append(path)
    return paths
