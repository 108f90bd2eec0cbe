"""The variants table (issue 26): per variant and set, the shipped policy's routing, ranking and /chat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.common.beir import mean_scores, score_ranking
from bench.common.report import markdown_table
from bench.routing.records import ChatRecord, QuestionRecord
from bench.routing.variants import Variant

SCORE_DIGITS = 4


def describe(variant: Variant, records: Sequence[QuestionRecord], stored: dict[str, Any]) -> dict[str, Any]:
    """What the variants table and the plots read, beside evaluate_set's figures."""
    return {
        "variant": variant.kind,
        "label": variant.label,
        "left_out": variant.left_out,
        "run_seconds": stored.get("seconds"),  # ingest + searches + chats of the run that stored them
        "ranking": ranking(records),
        "chat_summary": chat_summary(stored["chats"]),
        "scores": {
            side: [
                round(float(r.searches["default"].confidence["best_overall_score"]), SCORE_DIGITS)
                for r in records
                if r.answerable == (side == "answerable")
            ]
            for side in ("answerable", "unanswerable")
        },
    }


def ranking(records: Sequence[QuestionRecord]) -> dict[str, float]:
    """Document-level ranking of the gold paragraph for the answerable questions (/search default)."""
    per_query = [
        score_ranking([c.external_id for c in r.searches["default"].candidates], {r.gold_doc: 1})
        for r in records
        if r.answerable and r.gold_doc
    ]
    return mean_scores(per_query)


def chat_summary(chats: Sequence[ChatRecord]) -> dict[str, Any]:
    """/chat as shipped on the sample: what each side was told."""
    out: dict[str, Any] = {}
    for side in ("answerable", "unanswerable"):
        group = [c for c in chats if c.answerable == (side == "answerable")]
        n = max(len(group), 1)
        out[side] = {
            "n": len(group),
            "answer": sum(c.outcome == "answer" for c in group) / n,
            "not_found": sum(c.outcome == "not_found" for c in group) / n,
            "clarify": sum(c.outcome == "clarify" for c in group) / n,
            "gold": sum(c.gold_in_answer for c in group) / n,
        }
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _pair(a: float, b: float) -> str:
    return f"{_pct(a)} / {_pct(b)}"


def render_variants(report: dict[str, Any], policy: str | None = None) -> str:
    """The variants tables under `policy` (default: the shipped default); /chat ran as shipped."""
    policy = policy or report["default_policy"]
    rows, chat_rows, size_rows = [], [], []
    for s in report["sets"].values():
        if "variant" not in s:
            continue
        m = s["policies"][policy]["default"]
        ans, un = m["routes"]["answerable"], m["routes"]["unanswerable"]
        q = m["questions"]
        rows.append(
            [
                s["variant"],
                s["label"],
                f"{q['answerable']} / {q['unanswerable']}"
                + (f" (+{s['left_out']} left out)" if s["left_out"] else ""),
                f"**{m['auroc']:.3f}**",
                f"{m['baselines']['top1_cosine']:.3f}",
                f"{m['baselines']['top1_final_score']:.3f}",
                f"{s['ranking'].get('ndcg@10', float('nan')):.3f}",
                f"**{_pct(ans['answer'])}**",
                f"**{_pct(un['answer'])}**",
                _pair(ans["clarify"], un["clarify"]),
                _pair(ans["web_fallback"], un["web_fallback"]),
            ]
        )
        c = s["chat_summary"]
        a, u = c["answerable"], c["unanswerable"]
        size_rows.append(
            [
                s["variant"],
                s["label"],
                f"{s['ingest']['created']} / {s['ingest']['chunks']}",
                str(s["ingest"]["chunks_embedded"]),
                f"{q['answerable'] + q['unanswerable']}",
                f"{a['n'] + u['n']}",
                f"{s['run_seconds']:.0f}" if s.get("run_seconds") is not None else "–",
            ]
        )
        chat_rows.append(
            [
                s["variant"],
                s["label"],
                f"{a['n']} / {u['n']}",
                _pct(a["gold"]),
                _pct(a["answer"]),
                _pct(a["not_found"]),
                _pct(a["clarify"]),
                f"**{_pct(u['answer'])}**",
                _pct(u["not_found"]),
                _pct(u["clarify"]),
            ]
        )
    lines = [
        f"Variants (issue 26), policy {policy}"
        + (" as shipped" if policy == report["default_policy"] else "")
        + ", /search default depth; "
        "web / not found = web_fallback (with the web off, /chat says 'not in the documents')",
        "",
        markdown_table(
            [
                "variant",
                "set",
                "questions ans / unans",
                "AUROC",
                "top-1 cosine",
                "top-1 final",
                "nDCG@10 (ans)",
                "answerable → answer",
                "unanswerable → answer",
                "clarify ans / unans",
                "web / not found ans / unans",
            ],
            rows,
            "lllrrrrrrll",
        ),
    ]
    if policy != report["default_policy"]:  # the chats ran as shipped, once: shown with the default
        return "\n".join(lines)
    lines += [
        "",
        "/chat on the sample as shipped (web off, extractive generator)",
        "",
        markdown_table(
            [
                "variant",
                "set",
                "sample ans / unans",
                "ans: gold string",
                "ans: answered",
                "ans: not found",
                "ans: clarified",
                "unans: answered",
                "unans: not found",
                "unans: clarified",
            ],
            chat_rows,
            "lllrrrrrrr",
        ),
        "",
        "Sizes and run times (seconds: ingest + searches + chats of the run that stored the records)",
        "",
        markdown_table(
            ["variant", "set", "documents / chunks", "chunks embedded", "questions", "chats", "run s"],
            size_rows,
            "llrrrrr",
        ),
    ]
    return "\n".join(lines)
