"""The routing report as Markdown tables."""

from __future__ import annotations

from typing import Any

from bench.common.report import markdown_table


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _routes(r: dict[str, float]) -> str:
    return " / ".join(_pct(r[k]) for k in ("answer", "clarify", "web_fallback"))


def render(report: dict[str, Any]) -> str:
    lines = [
        f"Command: `{report['command']}` (code {report['code']}, {report['embedder']}; "
        f"routes: clarify = need_hitl at {'/'.join(report['clarify_levels'])}, "
        "web = web_fallback, else answer)",
        "",
        "AUROC answerable vs unanswerable (/search default depth), "
        "and routes answer / clarify / web_fallback",
        "",
    ]
    rows = []
    for name, s in report["sets"].items():
        for version in report["policies"]:
            m = s["policies"][version]["default"]
            b = m["baselines"]
            rows.append(
                [
                    name,
                    version + (" (default)" if version == report["default_policy"] else ""),
                    f"**{m['auroc']:.3f}**",
                    f"{b['top1_cosine']:.3f}",
                    f"{b['top1_rrf']:.3f}",
                    f"{b['top1_final_score']:.3f}",
                    _routes(m["routes"]["answerable"]),
                    _routes(m["routes"]["unanswerable"]),
                    f"{m['granularity']['distinct']} / {_pct(m['granularity']['max_share'])}",
                    f"{_pct(m['single_spike']['answerable'])} / {_pct(m['single_spike']['unanswerable'])}",
                ]
            )
    lines.append(
        markdown_table(
            [
                "set",
                "policy",
                "AUROC",
                "top-1 cosine",
                "top-1 RRF",
                "top-1 final",
                "answerable → a / c / w",
                "unanswerable → a / c / w",
                "distinct / max share",
                "single_spike ans / unans",
            ],
            rows,
            "llrrrrllll",
        )
    )
    lines += ["", "Candidate depth: AUROC at the /search depth vs the /chat depth", ""]
    rows = []
    for name, s in report["sets"].items():
        for version in report["policies"]:
            p = s["policies"][version]
            rows.append(
                [
                    name,
                    version,
                    f"{p['default']['auroc']:.3f}",
                    f"{p['chat']['auroc']:.3f}",
                    _routes(p["chat"]["routes"]["answerable"]),
                    _routes(p["chat"]["routes"]["unanswerable"]),
                ]
            )
    depth = next(iter(report["sets"].values()))["depths"] if report["sets"] else {}
    lines.append(
        markdown_table(
            [
                "set",
                "policy",
                f"AUROC @{depth.get('default', '?')}",
                f"AUROC @{depth.get('chat', '?')}",
                f"answerable @{depth.get('chat', '?')}",
                f"unanswerable @{depth.get('chat', '?')}",
            ],
            rows,
            "llrrll",
        )
    )
    lines += [
        "",
        "/chat on the sample (web off, extractive): as shipped, and if it answered only on route = answer",
        "",
    ]
    rows = []
    for name, s in report["sets"].items():
        shipped = s["chat"]["as_shipped"]
        rows.append([name, "as shipped", *_chat_cells(shipped)])
        for version in report["policies"]:
            rows.append([name, f"obeying {version}", *_chat_cells(s["policies"][version]["chat_if_obeyed"])])
    lines.append(
        markdown_table(
            [
                "set",
                "chat",
                "unanswerable answered",
                "unanswerable 'not in documents'",
                "unanswerable clarified",
                "answerable with gold string",
                "answerable clarified",
            ],
            rows,
            "llrrrrr",
        )
    )
    first = report["policies"][0]
    lines += ["", f"Misrouted questions under {first}", ""]
    rows = []
    for name, s in report["sets"].items():
        f = s["policies"][first]["failures"]
        examples = "; ".join(
            f"{e['question']} → {e['top_title']} ({e['score']:.2f})"
            for e in f["examples_unanswerable_answered"][:2]
        )
        rows.append(
            [
                name,
                f"{f['answerable_not_answered']} ({f['of_which_gold_not_ranked_first']} gold not first)",
                str(f["unanswerable_answered"]),
                examples,
            ]
        )
    lines.append(
        markdown_table(
            ["set", "answerable not answered", "unanswerable answered", "e.g. answered from"], rows, "lrrl"
        )
    )
    return "\n".join(lines)


def _chat_cells(c: dict[str, float]) -> list[str]:
    keys = (
        "unanswerable_answered",
        "unanswerable_not_found",
        "unanswerable_clarified",
        "answerable_gold",
        "answerable_clarified",
    )
    return [_pct(c[k]) for k in keys]
