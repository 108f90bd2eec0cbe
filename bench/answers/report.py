"""The answers benchmark as Markdown: one row per set, then the misses by cause with examples."""

from __future__ import annotations

from typing import Any

from bench.answers.scoring import CAUSES
from bench.common.report import markdown_table


def render(report: dict[str, Any], *, examples: int = 3) -> str:
    replayed = report.get("replayed_from")
    source = f", contexts replayed from a run of {replayed['code']}" if replayed else ""
    lines = [
        "# Chat answers (extractive generator)",
        "",
        f"`{report['command']}` — code {report['code']}{source}",
        "",
    ]
    rows = []
    for name, result in report["datasets"].items():
        s = result["summary"]
        rows.append(
            (
                name,
                s["questions"],
                _pct(s["gold_string_rate"]),
                _pct(s["gold_doc_cited_rate"]),
                f"{s['answer_chars_median']:.0f}",
                f"{s['answer_chars_mean']:.0f}",
                f"{s['answer_chars_p90']:.0f}",
                _pct(s["not_found_rate"]),
                _pct(s["clarify_rate"]),
            )
        )
    lines.append(
        markdown_table(
            (
                "set",
                "questions",
                "gold string",
                "gold doc cited",
                "chars median",
                "chars mean",
                "chars p90",
                "not found",
                "clarify",
            ),
            rows,
        )
    )
    lines += ["", "Misses by cause (questions):", ""]
    lines.append(
        markdown_table(
            ("set", *CAUSES),
            [(name, *(r["summary"]["misses"][c] for c in CAUSES)) for name, r in report["datasets"].items()],
        )
    )
    if examples:
        lines += ["", "## Examples of misses", ""]
        for name, result in report["datasets"].items():
            for cause in CAUSES:
                shown = [i for i in result["items"] if i["cause"] == cause][:examples]
                for item in shown:
                    lines.append(
                        f"- {name} / {cause}: Q `{item['question']}` gold `{' | '.join(item['golds'][:3])}` "
                        f"→ `{_clip(item['answer'])}`"
                    )
    return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _clip(text: str, limit: int = 220) -> str:
    text = text.replace("\n", " ").replace("`", "'")
    return text if len(text) <= limit else text[: limit - 1] + "…"
