"""Every policy's figures on one set's stored searches and chat sample."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.config import Settings
from bench.routing.metrics import evaluate, route_of
from bench.routing.records import ChatRecord, QuestionRecord
from bench.routing.scorers import confidence_under

DEPTHS = ("default", "chat")


def evaluate_set(
    records: Sequence[QuestionRecord], stored: dict[str, Any], policies: Sequence[str], settings: Settings
) -> dict[str, Any]:
    levels = list(settings.chat_clarify_levels)
    totals = stored["chunk_totals"]
    chats: list[ChatRecord] = stored["chats"]
    out: dict[str, Any] = {
        "ingest": stored["ingest"],
        "depths": stored["depths"],
        "policies": {},
        "chat": {"sample": _counts(chats), "as_shipped": chat_as_shipped(chats)},
    }
    product = [r.searches["default"].confidence for r in records]
    out["product"] = evaluate(records, product, levels)
    for version in policies:
        per_depth = {}
        routes: dict[str, str] = {}
        for depth in DEPTHS:
            confidences = [confidence_under(version, r, depth, totals) for r in records]
            per_depth[depth] = evaluate(records, confidences, levels, depth)
            if depth == "default":
                routes = {r.qid: route_of(c, levels) for r, c in zip(records, confidences, strict=True)}
        per_depth["chat_if_obeyed"] = chat_if_obeyed(chats, routes)
        per_depth["failures"] = failures(records, routes, version, totals)
        out["policies"][version] = per_depth
    return out


def failures(
    records: Sequence[QuestionRecord], routes: dict[str, str], version: str, totals: dict[str, int]
) -> dict[str, Any]:
    """The profile of the misrouted questions: was the gold paragraph even ranked first (answerable
    sent away), what did an unanswerable question get answered from (examples)."""
    sent_away = [r for r in records if r.answerable and routes[r.qid] != "answer"]
    answered = [r for r in records if not r.answerable and routes[r.qid] == "answer"]

    def top_doc(r: QuestionRecord) -> str | None:
        candidates = r.searches["default"].candidates
        return candidates[0].external_id if candidates else None

    def example(r: QuestionRecord) -> dict[str, Any]:
        c = confidence_under(version, r, "default", totals)
        top = c["top_parents"][0] if c["top_parents"] else {}
        return {
            "question": r.text,
            "top_title": top.get("title"),
            "score": c["best_overall_score"],
            "missing_terms": top.get("features", {}).get("missing_terms"),
        }

    return {
        "answerable_not_answered": len(sent_away),
        "of_which_gold_not_ranked_first": sum(top_doc(r) != r.gold_doc for r in sent_away),
        "unanswerable_answered": len(answered),
        "examples_unanswerable_answered": [example(r) for r in answered[:5]],
        "examples_answerable_not_answered": [example(r) for r in sent_away[:5]],
    }


def chat_as_shipped(chats: Sequence[ChatRecord]) -> dict[str, float]:
    """Today's /chat replies: unanswerable answered anyway / told not found / clarified; gold answers."""
    un = [c for c in chats if not c.answerable]
    ans = [c for c in chats if c.answerable]
    return {
        "unanswerable_answered": _share(c.outcome == "answer" for c in un),
        "unanswerable_not_found": _share(c.outcome == "not_found" for c in un),
        "unanswerable_clarified": _share(c.outcome == "clarify" for c in un),
        "answerable_gold": _share(c.gold_in_answer for c in ans),
        "answerable_clarified": _share(c.outcome == "clarify" for c in ans),
    }


def chat_if_obeyed(chats: Sequence[ChatRecord], routes: dict[str, str]) -> dict[str, float]:
    """The chat answering only when the route is "answer" (else: not in the documents / clarify)."""
    un = [c for c in chats if not c.answerable]
    ans = [c for c in chats if c.answerable]

    def answered(c: ChatRecord) -> bool:
        return routes[c.qid] == "answer" and c.generator_answer == "answer"

    return {
        "unanswerable_answered": _share(answered(c) for c in un),
        "unanswerable_not_found": _share(not answered(c) and routes[c.qid] != "clarify" for c in un),
        "unanswerable_clarified": _share(routes[c.qid] == "clarify" for c in un),
        "answerable_gold": _share(answered(c) and c.generator_gold for c in ans),
        "answerable_clarified": _share(routes[c.qid] == "clarify" for c in ans),
    }


def _counts(chats: Sequence[ChatRecord]) -> dict[str, int]:
    return {
        "answerable": sum(c.answerable for c in chats),
        "unanswerable": sum(not c.answerable for c in chats),
    }


def _share(flags: Any) -> float:
    values = list(flags)
    return sum(bool(v) for v in values) / max(len(values), 1)
