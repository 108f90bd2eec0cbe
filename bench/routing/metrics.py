"""AUROC, route shares and score granularity over one set's questions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from bench.routing.records import Candidate, QuestionRecord

ROUTES = ("answer", "clarify", "web_fallback")


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(score of an answerable question > score of an unanswerable one), ties counting one half."""
    if not positives or not negatives:
        return float("nan")
    pooled = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum = 0.0  # sum of the positives' mid-ranks
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # ranks i+1..j share their mean
        rank_sum += mid * sum(label for _, label in pooled[i:j])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def route_of(confidence: dict[str, Any], clarify_levels: Sequence[str]) -> str:
    """What /chat does: clarify on need_hitl at a clarify level, web fallback when asked, else answer."""
    if confidence.get("need_hitl") and confidence.get("confidence_level") in clarify_levels:
        return "clarify"
    return "web_fallback" if confidence.get("web_fallback") else "answer"


def top_cosine(candidates: Sequence[Candidate]) -> float:
    return max((c.similarity for c in candidates if c.similarity is not None), default=0.0)


def top_rrf(candidates: Sequence[Candidate]) -> float:
    return max((c.rrf_score for c in candidates if c.rrf_score is not None), default=0.0)


def top_final(candidates: Sequence[Candidate]) -> float:
    return max((c.final_score for c in candidates), default=0.0)


BASELINES: dict[str, Callable[[Sequence[Candidate]], float]] = {
    "top1_cosine": top_cosine,
    "top1_rrf": top_rrf,
    "top1_final_score": top_final,
}


def shares(routes: Sequence[str]) -> dict[str, float]:
    n = max(len(routes), 1)
    counts = Counter(routes)
    return {r: counts[r] / n for r in ROUTES}


def granularity(scores: Sequence[float]) -> dict[str, Any]:
    """How many distinct values the score takes, and the largest share of questions on one value."""
    counts = Counter(round(s, 6) for s in scores)
    value, top = counts.most_common(1)[0] if counts else (None, 0)
    return {"distinct": len(counts), "max_share": top / max(len(scores), 1), "most_common_value": value}


def evaluate(
    records: Sequence[QuestionRecord],
    confidences: Sequence[dict[str, Any]],
    clarify_levels: Sequence[str],
    depth: str = "default",
) -> dict[str, Any]:
    """The routing figures of one policy on one set (confidences align with records)."""
    pos = [c["best_overall_score"] for r, c in zip(records, confidences, strict=True) if r.answerable]
    neg = [c["best_overall_score"] for r, c in zip(records, confidences, strict=True) if not r.answerable]
    routes = [route_of(c, clarify_levels) for c in confidences]
    flags = [
        bool(c["top_parents"]) and "single_spike" in c["top_parents"][0].get("risk_flags", [])
        for c in confidences
    ]
    baselines = {}
    for name, fn in BASELINES.items():
        values = [fn(r.searches[depth].candidates) for r in records]
        baselines[name] = auroc(
            [v for r, v in zip(records, values, strict=True) if r.answerable],
            [v for r, v in zip(records, values, strict=True) if not r.answerable],
        )
    return {
        "questions": {"answerable": len(pos), "unanswerable": len(neg)},
        "auroc": auroc(pos, neg),
        "baselines": baselines,
        "routes": {
            "answerable": shares([x for r, x in zip(records, routes, strict=True) if r.answerable]),
            "unanswerable": shares([x for r, x in zip(records, routes, strict=True) if not r.answerable]),
        },
        "granularity": granularity(pos + neg),
        "single_spike": {
            "answerable": _share([f for r, f in zip(records, flags, strict=True) if r.answerable]),
            "unanswerable": _share([f for r, f in zip(records, flags, strict=True) if not r.answerable]),
        },
    }


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / max(len(flags), 1)
