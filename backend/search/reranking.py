"""Applying a Reranker to scored chunks: the model's order and scores, or the heuristic order on failure.

What changes with a model reranker: final_score becomes the model's relevance score (0..1 for Jina and
Cohere), the candidates it did not score (beyond RERANK_TOP_N) follow in the policy's order with
final_score 0, and the dynamic cut reads RERANK_DROP_RATIO instead of the policy's calibrated ratio.
What does not: the confidence and the chat relevance gate read the policy's features (seed_score,
coverage, cosine), never final_score, so their calibration holds whichever reranker orders.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from backend.errors import InvalidInput
from backend.rerank import RerankDocument, Reranker, RerankError
from backend.rerank.base import Ranked
from backend.search.diagnostics import RerankerOut
from backend.search.types import ScoredChunk
from backend.telemetry import Metrics

logger = logging.getLogger(__name__)


def choose_reranker(rerankers: Mapping[str, Reranker], requested: str | None, default: str) -> Reranker:
    """The reranker a request names (else the default), or a 422 listing those that are configured."""
    name = requested or default
    if name not in rerankers:
        available = ", ".join(rerankers)
        raise InvalidInput(
            f"reranker {name!r} is not available here; available: {available} "
            "(a model reranker needs RERANK_PROVIDER and RERANK_API_KEY)"
        )
    return rerankers[name]


def rerank_text(chunk: ScoredChunk) -> str:
    """What a model reads of a candidate: its title and heading path, then its text."""
    label = " > ".join(p for p in (chunk.title.strip(), chunk.heading.strip()) if p)
    return f"{label}\n{chunk.content}" if label else chunk.content


def apply_reranker(
    reranker: Reranker,
    query: str,
    ranked: list[ScoredChunk],
    *,
    top_n: int,
    metrics: Metrics,
) -> tuple[list[ScoredChunk], RerankerOut]:
    """`ranked` (in the policy's order) reordered by `reranker`; on failure unchanged, and the report
    says why. Chunks are updated in place (model_score, final_score, scored_by)."""
    for chunk in ranked:
        chunk.policy_score = chunk.final_score
    started = time.perf_counter()
    out = RerankerOut(
        requested=reranker.name,
        used=reranker.name,
        model=reranker.model,
        top_n=min(top_n, len(ranked)) if reranker.scale == "model" else None,
        scored=0,
        ms=0.0,
        fallback=False,
        fallback_reason=None,
    )
    if reranker.scale == "policy" or not ranked:
        out.scored = len(ranked) if reranker.scale == "policy" else 0
        metrics.reranks.labels(reranker.name, "ok").inc()
        return ranked, out
    documents = [RerankDocument(rerank_text(c), c.final_score) for c in ranked]
    try:
        with metrics.stage("rerank"):
            order = reranker.rerank(query, documents, top_n=top_n)
    except RerankError as exc:
        logger.warning(
            "[rerank] %s failed (%s), keeping the heuristic order: %s", reranker.name, exc.reason, exc
        )
        metrics.reranks.labels(reranker.name, "fallback").inc()
        metrics.rerank_fallbacks.labels(reranker.name, exc.reason).inc()
        metrics.provider_error("rerank", reranker.name)
        out.used, out.fallback, out.fallback_reason, out.error = "heuristic", True, exc.reason, str(exc)
        out.ms = _ms(started)
        return ranked, out
    metrics.reranks.labels(reranker.name, "ok").inc()
    out.scored, out.ms = len(order), _ms(started)
    return _reordered(ranked, order, reranker.name), out


def _reordered(ranked: list[ScoredChunk], order: Sequence[Ranked], name: str) -> list[ScoredChunk]:
    scored = {r.index: r.score for r in order}
    for i, chunk in enumerate(ranked):
        chunk.scored_by = name
        chunk.model_score = scored.get(i)
        chunk.final_score = scored.get(i, 0.0)
    first = [ranked[r.index] for r in order]
    rest = [c for i, c in enumerate(ranked) if i not in scored]  # policy order, behind every scored one
    return first + rest


def restore_policy_order(chunks: Sequence[ScoredChunk]) -> None:
    """Undo a model's scores (in place): final_score back to the policy's."""
    for chunk in chunks:
        if chunk.policy_score is not None:
            chunk.final_score = chunk.policy_score
        chunk.model_score, chunk.scored_by = None, "heuristic"


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
