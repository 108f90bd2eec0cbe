"""nDCG@10 of a policy, leave-one-dataset-out fits, and the dynamic cut's trade-off, over collected sets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from backend.retrieval.rerank_policy import RerankPolicy
from bench.common.beir import first_occurrences, mean_scores, score_ranking
from bench.rerank.collect import StudyQuestion, StudySet
from bench.rerank.model import PER_DOC_CAP, Matrix, cut_size, feature_rows, fit, ranked, softmax

TOP_K = 10
DEFAULT_TOP_K = 5  # /search's default top_k (rag_top_k_max)


def scores_of(question: StudyQuestion, weights: Mapping[str, float]) -> list[float]:
    """The policy's weighted sum per candidate (a logit for softmax policies)."""
    return [sum(w * f[name] for name, w in weights.items()) for f in feature_rows(question)]


def ndcg(
    questions: Sequence[StudyQuestion], weights: Mapping[str, float], per_doc_cap: int = PER_DOC_CAP
) -> list[float]:
    """Per-question nDCG@10 of the product's top 10 (ranked, diversified) under these weights."""
    out = []
    for q in questions:
        docs = [c.document for c in ranked(q, scores_of(q, weights), per_doc_cap)[:TOP_K]]
        out.append(score_ranking(docs, q.gold)["ndcg@10"])
    return out


def baseline_ndcg(questions: Sequence[StudyQuestion], variant: str) -> float:
    return float(np.mean([score_ranking(q.baselines[variant], q.gold)["ndcg@10"] for q in questions]))


def metrics(questions: Sequence[StudyQuestion], weights: Mapping[str, float]) -> dict[str, float]:
    """R@1/5/10, MRR@10 and nDCG@10, as bench.quality reports them."""
    rows = [
        score_ranking([c.document for c in ranked(q, scores_of(q, weights))[:TOP_K]], q.gold)
        for q in questions
    ]
    return mean_scores(rows)


@dataclass
class Fold:
    held_out: str
    weights: dict[str, float]
    in_sample: dict[str, float]  # nDCG@10 on each fitting set
    held_out_ndcg: float


def fit_weights(sets: Sequence[StudySet], features: Sequence[str], l2: float) -> dict[str, float]:
    questions = [q for s in sets for q in s.questions]
    w = fit(Matrix.build(questions, features), l2=l2)
    return {name: float(v) for name, v in zip(features, w, strict=True)}


def leave_one_dataset_out(sets: Sequence[StudySet], features: Sequence[str], l2: float) -> list[Fold]:
    folds = []
    for held in sets:
        rest = [s for s in sets if s is not held]
        weights = fit_weights(rest, features, l2)
        folds.append(
            Fold(
                held.name,
                weights,
                {s.name: float(np.mean(ndcg(s.questions, weights))) for s in rest},
                float(np.mean(ndcg(held.questions, weights))),
            )
        )
    return folds


@dataclass
class CutPoint:
    drop_ratio: float
    mean_results: float
    one_result: float  # share of questions answered with exactly one result
    gold_kept: float  # share whose results contain a gold document


def cut_point(
    questions: Sequence[StudyQuestion], policy: RerankPolicy, drop_ratio: float, top_k: int = DEFAULT_TOP_K
) -> CutPoint:
    """What the default /search (dynamic, top_k 5) returns under this policy and drop ratio."""
    sizes, kept = [], []
    for q in questions:
        raw = scores_of(q, policy.weights)
        finals = softmax(raw) if policy.output == "softmax" else raw
        by_id = dict(zip((c.chunk_id for c in q.candidates), finals, strict=True))
        order = ranked(q, raw)
        k = cut_size([by_id[c.chunk_id] for c in order], drop_ratio, top_k) if order else 0
        sizes.append(k)
        kept.append(any(d in q.gold for d in first_occurrences(c.document for c in order[:k])))
    return CutPoint(
        drop_ratio,
        float(np.mean(sizes)),
        float(np.mean([s == 1 for s in sizes])),
        float(np.mean(kept)),
    )


def calibrate_drop_ratio(
    sets: Sequence[Sequence[StudyQuestion]], policy: RerankPolicy, max_loss: float, grid: Sequence[float]
) -> float:
    """The largest drop ratio (fewest results) that, on every set, keeps the gold document for all but
    max_loss of the questions whose top 5 had it. Bisection: results only shrink as the ratio grows."""
    floors = [cut_point(q, policy, 1e-12).gold_kept - max_loss for q in sets]

    def ok(ratio: float) -> bool:
        return all(cut_point(q, policy, ratio).gold_kept >= f for q, f in zip(sets, floors, strict=True))

    values = sorted(grid)
    lo, hi = -1, len(values)  # values[lo] passes (or none), values[hi] fails (or none)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(values[mid]):
            lo = mid
        else:
            hi = mid
    return values[lo] if lo >= 0 else values[0]
