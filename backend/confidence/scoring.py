"""OverallScore per parent document and a query's retrieval confidence (seed: overall-score-confidence.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from backend.confidence.policy import Policy

EPS = 1e-9  # the seed's eps in norm(); RRF scores differ by ~1e-4, so it must stay far below that
SMOOTHING_FLOOR = 0.01  # seed 6.2: S_* = max(S_*, 0.01) against underflow, for non-zero components only


class ChunkLike(Protocol):
    """What scoring reads of a retrieved chunk (read-only, so ScoredChunk's list fields fit)."""

    @property
    def chunk_id(self) -> Any: ...
    @property
    def document_id(self) -> Any: ...
    @property
    def title(self) -> str: ...
    @property
    def heading_path(self) -> Sequence[str]: ...
    @property
    def rrf_score(self) -> float | None: ...
    @property
    def final_score(self) -> float: ...


@dataclass(frozen=True)
class ParentAggregate:
    """Seed 1.2: the features of one parent document, aggregated over its retrieved chunks."""

    parent_id: str
    title: str
    rrf_sum: float  # support from several chunks
    max_score: float  # the best single chunk (final_score)
    coverage: int  # distinct heading sections hit
    total_chunks: int
    coverage_ratio: float  # chunks hit / total_chunks
    hit_chunks: int


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile by linear interpolation between closest ranks (numpy's default method)."""
    if not values:
        raise ValueError("percentile of an empty list")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def normalise(values: Sequence[float]) -> list[float]:
    """Seed 4.2: clamp((x - P10) / (P90 - P10 + eps), 0, 1) over one query's candidates.

    With no spread (one candidate, or all equal) every value sits at P90, which the formula maps to
    1 whenever there is a spread: we return 1.0, so the other components decide, instead of 0
    (which the zero rule would turn into OverallScore 0 for every lone candidate).
    """
    if not values:
        return []
    p10, p90 = percentile(values, 10), percentile(values, 90)
    if p90 - p10 <= EPS:
        return [1.0] * len(values)
    return [_clamp((x - p10) / (p90 - p10 + EPS)) for x in values]


def score_source(chunks: Sequence[ChunkLike]) -> str:
    """What rrf_sum adds up: rrf_score, or final_score when any chunk has none (vector-only mode).

    One query never mixes the two scales.
    """
    return "rrf_score" if chunks and all(c.rrf_score is not None for c in chunks) else "final_score"


def aggregate_parents(
    chunks: Sequence[ChunkLike], total_chunks_by_document: Mapping[Any, int]
) -> list[ParentAggregate]:
    """Group chunks by document: rrf_sum, max_score, coverage, total_chunks, coverage_ratio (seed 1.2)."""
    use_rrf = score_source(chunks) == "rrf_score"
    groups: dict[Any, list[ChunkLike]] = {}
    seen: set[Any] = set()
    for c in chunks:
        if c.chunk_id not in seen:
            seen.add(c.chunk_id)
            groups.setdefault(c.document_id, []).append(c)
    parents = []
    for doc_id, members in groups.items():
        total = total_chunks_by_document.get(doc_id, total_chunks_by_document.get(str(doc_id)))
        if total is None:
            raise ValueError(f"total_chunks_by_document has no entry for document {doc_id}")
        total = max(int(total), len(members))  # a stale count must not push coverage_ratio above 1
        parents.append(
            ParentAggregate(
                parent_id=str(doc_id),
                title=members[0].title,
                rrf_sum=sum((c.rrf_score if use_rrf else c.final_score) or 0.0 for c in members),
                max_score=max(c.final_score for c in members),
                coverage=len({tuple(c.heading_path) for c in members}),
                total_chunks=total,
                coverage_ratio=len(members) / total,
                hit_chunks=len(members),
            )
        )
    return parents


def overall_score(strength: float, coverage: float, stability: float, policy: Policy) -> float:
    """Seed 6: weighted geometric mean; any zero component (with a weight) makes it 0."""
    parts = ((strength, policy.w1), (coverage, policy.w2), (stability, policy.w3))
    if any(s <= 0 and w > 0 for s, w in parts):
        return 0.0
    return float(math.prod(max(s, SMOOTHING_FLOOR) ** w for s, w in parts))


def confidence_level(best_overall_score: float, policy: Policy) -> str:
    """Seed 7.2: low below T_low, high from T_high, medium between."""
    if best_overall_score < policy.t_low:
        return "low"
    return "medium" if best_overall_score < policy.t_high else "high"


def retrieval_confidence(
    chunks: Sequence[ChunkLike],
    total_chunks_by_document: Mapping[Any, int],
    policy: Policy,
    *,
    top_n: int = 5,
) -> dict[str, Any]:
    """Score every parent of one query's chunks and return the seed's section-10 JSON contract."""
    parents = aggregate_parents(chunks, total_chunks_by_document)
    return confidence_from_parents(parents, policy, top_n=top_n, source=score_source(chunks))


def feature_values(parents: Sequence[ParentAggregate]) -> dict[str, list[float]]:
    """The features normalisation works on, per parent (seed 4.3, 4.4)."""
    return {
        "rrf_sum": [p.rrf_sum for p in parents],
        "max_score": [p.max_score for p in parents],
        "coverage": [float(p.coverage) for p in parents],
        "log_chunks": [math.log(p.total_chunks + 1) for p in parents],
    }


def _normalised(parents: Sequence[ParentAggregate], policy: Policy) -> dict[str, list[float]]:
    values = feature_values(parents)
    if policy.anchors is None:
        return {name: normalise(v) for name, v in values.items()}
    out = {}
    for name, v in values.items():
        lo, hi = policy.anchors[name]
        out[name] = [1.0 if hi - lo <= EPS else _clamp((x - lo) / (hi - lo + EPS)) for x in v]
    return out


def confidence_from_parents(
    parents: Sequence[ParentAggregate], policy: Policy, *, top_n: int = 5, source: str = "rrf_score"
) -> dict[str, Any]:
    """The section-10 contract from aggregated parents (also used to re-score calibration runs)."""
    norm = _normalised(parents, policy)
    rrf_n, max_n, cov_n, size_n = norm["rrf_sum"], norm["max_score"], norm["coverage"], norm["log_chunks"]
    scored: list[dict[str, Any]] = []
    for i, p in enumerate(parents):
        strength = policy.alpha * rrf_n[i] + (1 - policy.alpha) * max_n[i]
        coverage = policy.beta * cov_n[i] + (1 - policy.beta) * p.coverage_ratio
        stability = _clamp(p.coverage_ratio * (0.5 + 0.5 * size_n[i]))
        scored.append(
            {
                "parent_id": p.parent_id,
                "title": p.title,
                "overall_score": overall_score(strength, coverage, stability, policy),
                "strength": strength,
                "coverage": coverage,
                "stability": stability,
                "risk_flags": _risk_flags(p, strength, coverage, rrf_n[i], max_n[i], policy),
                "features": {
                    "rrf_sum": p.rrf_sum,
                    "max_score": p.max_score,
                    "coverage": p.coverage,
                    "total_chunks": p.total_chunks,
                    "coverage_ratio": p.coverage_ratio,
                    "hit_chunks": p.hit_chunks,
                    "rrf_sum_norm": rrf_n[i],
                    "max_score_norm": max_n[i],
                    "coverage_norm": cov_n[i],
                    "log_chunks_norm": size_n[i],
                },
            }
        )
    scored.sort(key=lambda s: -s["overall_score"])  # stable: ties keep the retrieval order

    best = scored[0]["overall_score"] if scored else 0.0
    level = confidence_level(best, policy) if scored else "low"
    # Seed 8.1: ratio_p = score2 / score1 over the two best parents' OverallScore.
    ratio = scored[1]["overall_score"] / best if len(scored) > 1 and best > 0 else None
    need_hitl = (
        ratio is not None and ratio >= policy.r_hitl and scored[0]["parent_id"] != scored[1]["parent_id"]
    )
    if need_hitl:  # seed 7.3 "top2 与 top1 OverallScore 非常接近": flagged on the runner-up, as in 10
        scored[1]["risk_flags"].append("ambiguous_candidate")
    fallback, reason = _web_fallback(bool(scored), level, need_hitl, policy)
    return {
        "score_policy_version": policy.score_policy_version,
        "normalization": "per_query" if policy.anchors is None else "calibrated",
        "best_parent_id": scored[0]["parent_id"] if scored else None,
        "best_overall_score": _round(best),
        "confidence_level": level,
        "thresholds_used": policy.thresholds,
        "score_ratio": _round(ratio),
        "need_hitl": need_hitl,
        "web_fallback": fallback,
        "web_fallback_reason": reason,
        "parents_considered": len(scored),
        "score_source": source,
        "top_parents": [_rounded(s) for s in scored[:top_n]],
    }


def _risk_flags(
    p: ParentAggregate, strength: float, coverage: float, rrf_norm: float, max_norm: float, policy: Policy
) -> list[str]:
    rule = policy.risk_flags
    flags = []
    if strength >= rule.strength_high and coverage < rule.coverage_low:
        flags.append("low_coverage")
    if max_norm >= rule.spike_max_high and rrf_norm < rule.spike_rrf_low:
        flags.append("single_spike")
    if p.coverage_ratio < rule.sparse_ratio:
        flags.append("sparse_evidence")
    if p.total_chunks >= rule.huge_doc_chunks and p.coverage_ratio < rule.huge_doc_ratio:
        flags.append("huge_doc_sparse")
    return flags


def _web_fallback(has_results: bool, level: str, need_hitl: bool, policy: Policy) -> tuple[bool, str | None]:
    rule = policy.web_fallback
    if not has_results:
        return rule.on_empty, "no_results" if rule.on_empty else None
    if level in rule.on_levels and not (rule.unless_hitl and need_hitl):
        return True, f"{level}_confidence"
    return False, None


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _rounded(entry: dict[str, Any]) -> dict[str, Any]:
    out = {k: _round(v) if isinstance(v, float) else v for k, v in entry.items()}
    out["features"] = {k: _round(v) if isinstance(v, float) else v for k, v in entry["features"].items()}
    return out
