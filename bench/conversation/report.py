"""The conversation report as Markdown tables."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.common.report import markdown_table

CONDITIONS = (
    ("in_conversation", "in the conversation"),
    ("alone", "pronoun, asked alone"),
    ("original_alone", "original wording, alone"),
)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def pair_summary(pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per condition: gold paragraph cited, gold string answered, "not found", clarified (counts)."""
    out: dict[str, Any] = {"pairs": len(pairs), "pronouns": dict(Counter(p["pronoun"] for p in pairs))}
    for key, _ in CONDITIONS:
        turns = [p[key] for p in pairs]
        out[key] = {
            "gold_cited": sum(t["gold_cited"] for t in turns),
            "gold_string": sum(t["gold_string"] for t in turns),
            "not_found": sum(t["outcome"] == "not_found" for t in turns),
            "clarify": sum(t["outcome"] == "clarify" for t in turns),
        }
    return out


def render(report: dict[str, Any]) -> str:
    lines = [
        f"Command: `{report['command']}` (code {report['code']}, {report['embedder']}, web off, extractive)"
    ]
    lines += [
        "",
        "Follow-ups: turn 2 (its title replaced by a pronoun) — gold paragraph cited / gold string",
        "",
    ]
    rows = []
    groups = (
        {**report["pairs_by_set"], "all": report["pairs_total"]} if report["pairs_total"]["pairs"] else {}
    )
    for name, s in groups.items():
        n = s["pairs"]
        pronouns = " ".join(f"{k} {v}" for k, v in sorted(s["pronouns"].items()))
        cells = []
        for key, _ in CONDITIONS:
            c = s[key]
            cells.append(
                f"{_pct(c['gold_cited'], n)} / {_pct(c['gold_string'], n)} / {_pct(c['not_found'], n)}"
            )
        rows.append([name, str(n), pronouns, *cells])
    lines.append(
        markdown_table(
            [
                "set",
                "pairs",
                "pronouns",
                *(f"{label}: cited / gold string / not found" for _, label in CONDITIONS),
            ],
            rows,
            "lrllll",
        )
    )
    talk = report["small_talk"]
    lines += ["", "Small talk (each message alone, demo corpus)", ""]
    rows = []
    for lang in ("zh", "en", None):
        group = [m for m in talk if lang is None or m["lang"] == lang]
        n = len(group)
        not_found = sum(m["outcome"] == "not_found" for m in group)
        rows.append(
            [
                lang or "all",
                str(n),
                str(sum(m.get("route") == "conversational" for m in group)),
                f"{not_found} ({_pct(not_found, n)})",
                str(sum(m["sources"] > 0 for m in group)),
                str(sum(m["searched"] for m in group)),
                str(sum(m["outcome"] == "answer" and m.get("route") != "conversational" for m in group)),
            ]
        )
    lines.append(
        markdown_table(
            [
                "language",
                "messages",
                "conversational replies",
                "'not found' replies",
                "replies listing documents",
                "searched",
                "answered from documents",
            ],
            rows,
            "lrrrrrr",
        )
    )
    classifier = report.get("classifier")
    if classifier:
        total = sum(classifier["questions"].values())
        sets = ", ".join(f"{k} {v}" for k, v in classifier["questions"].items())
        lines += [
            "",
            f"Development-set questions taken for small talk or an instruction: "
            f"{len(classifier['misread'])} of {total} ({sets})",
        ]
        lines += [f"- {m['set']} {m['qid']}: {m['text']} -> {m['intent']}" for m in classifier["misread"]]
    demo = report["demo"]
    count = Counter(d["outcome"] for d in demo)
    right, cited = sum(d["gold_string"] for d in demo), sum(d["source_cited"] for d in demo)
    lines += [
        "",
        f"Demo corpus: {len(demo)} short questions whose answer is in it — answered {count['answer']}, "
        f"refused {count['not_found']}, clarified {count['clarify']}; with the right fact {right}, "
        f"citing the right file {cited}",
        "",
    ]
    rows = [
        [
            d["question"],
            d["outcome"],
            d["confidence"],
            "yes" if d["gold_string"] else "no",
            "yes" if d["source_cited"] else "no",
        ]
        for d in demo
    ]
    lines.append(
        markdown_table(["question", "reply", "confidence", "right fact", "right file cited"], rows, "lllll")
    )
    return "\n".join(lines)
