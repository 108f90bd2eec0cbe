"""The research benchmark as Markdown: per set, the research report's rates beside the chat baseline."""

from __future__ import annotations

from typing import Any

from bench.common.report import markdown_table


def render(report: dict[str, Any], *, examples: int = 3) -> str:
    lines = [
        f"# Deep research on compound questions ({report['llm']}, preset {report['preset']})",
        "",
        f"`{report['command']}` — code {report['code']}",
        "",
        "Rates are over the component questions; *chat* asks each component alone (same run, same",
        "database), and *ratio* is research / chat.",
        "",
    ]
    rows = []
    for name, result in report["datasets"].items():
        s = result["summary"]
        rows.append(
            (
                name,
                f"{s['compounds']} / {s['parts']}",
                _pct(s["gold_doc_cited_rate"]),
                _pct(s["chat_gold_doc_cited_rate"]),
                _ratio(s["gold_doc_cited_rate"], s["chat_gold_doc_cited_rate"]),
                _pct(s["gold_string_rate"]),
                _pct(s["chat_gold_string_rate"]),
                f"{s['sections_mean']:.2f}",
                _pct(s["split_exact_rate"]),
                f"{s['model_calls_mean']:.1f}",
                f"{s['searches_mean']:.1f}",
                f"{s['seconds_p50']:.2f} / {s['seconds_p90']:.2f}",
                _pct(s["partial_rate"]),
            )
        )
    headers = (
        "set",
        "runs / parts",
        "gold doc cited",
        "chat",
        "ratio",
        "gold string",
        "chat",
        "sections",
        "one per part",
        "model calls",
        "searches",
        "s p50 / p90",
        "partial",
    )
    lines.append(markdown_table(headers, rows))
    if examples:
        lines += ["", "## Parts whose gold document the report did not cite", ""]
        for name, result in report["datasets"].items():
            misses = [(i, p) for i in result["items"] for p in i["parts"] if not p["cited"]][:examples]
            for item, part in misses:
                lines.append(
                    f"- {name} `{part['qid']}`: {part['question']} (gold {', '.join(part['gold_docs'])}; "
                    f"sections {item['sections']}; cited {item['sources'][:6]})"
                )
    return "\n".join(lines) + "\n"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "n/a"
