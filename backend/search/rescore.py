"""Chunks that other searches found, scored against one search's question on the scale of its own
candidates, so one rerank can order them all (gap queries, web passages, research pools;
evidence-retention.md §四 Step 2)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from backend.rerank import Reranker
from backend.search.candidates import as_row, idfs, score_candidates
from backend.search.policies import SearchPolicies
from backend.search.reranking import apply_reranker, restore_policy_order
from backend.search.types import ScoredChunk, SearchResult
from backend.telemetry import Metrics


def foreign_chunks(search: SearchResult, chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """The chunks that `search` did not rank itself."""
    own = {c.chunk_id for c in search.candidates}
    return [c for c in chunks if c.chunk_id not in own]


def rescore(
    search: SearchResult,
    chunks: Sequence[ScoredChunk],
    *,
    cosines: dict[int, float],
    policies: SearchPolicies,
    similarity: str,
    model: Reranker | None,
    metrics: Metrics,
) -> list[ScoredChunk]:
    """`chunks` scored against `search`'s question. A chunk the question's own search ranked keeps that
    score. Another gets its cosine to the question (`cosines`, by chunk id: stored chunks' looked up,
    web passages' brought along) and its coverage of the question's terms; it has no rank in the
    question's legs. `model`: the model reranker that ordered the search (None: the heuristic)."""
    own = {c.chunk_id: c for c in search.candidates}
    rows = [as_row(c, similarity=cosines.get(c.chunk_id)) for c in foreign_chunks(search, chunks)]
    terms = search.diagnostics.query_terms
    scored = score_candidates(
        rows,
        query=search.query,
        terms=terms,
        term_idf=idfs(search.term_stats),
        similarity=similarity,
        policies=policies,
    )
    if model is not None and scored:
        # The question's own chunks carry model scores: the others are scored by the same model (a
        # cross-encoder's score is absolute per query and text), or, if it fails now, every chunk
        # goes back to the policy's scores so that one scale orders them all.
        scored, out = apply_reranker(model, search.query, scored, top_n=len(scored), metrics=metrics)
        if out.fallback:
            own = {k: dataclasses.replace(c) for k, c in own.items()}
            restore_policy_order(list(own.values()))
        else:
            rescored = {c.chunk_id: c for c in scored}
            return [own.get(c.chunk_id) or rescored[c.chunk_id] for c in chunks]
    if policies.rerank.output != "softmax":
        rescored = {c.chunk_id: c for c in scored}
        return [own.get(c.chunk_id) or rescored[c.chunk_id] for c in chunks]
    return _shared(search, chunks, own, scored)


def _shared(
    search: SearchResult,
    chunks: Sequence[ScoredChunk],
    own: dict[int, ScoredChunk],
    scored: list[ScoredChunk],
) -> list[ScoredChunk]:
    """A share among the foreign chunks alone would not compare with the question's own shares, and a
    share on the candidates' scale alone exceeds 1 when a foreign chunk outranks them all (a web
    passage that answers what the documents cannot): every chunk returned gets its share among the
    question's candidates and the foreign chunks together, exp(logit) / sum(exp), so the order is the
    logits' and every score stays in [0, 1]."""
    logits = {c.chunk_id: c.rerank_score for c in search.candidates}
    logits |= {c.chunk_id: c.rerank_score for c in scored}
    top = max(logits.values(), default=0.0)
    total = sum(math.exp(v - top) for v in logits.values()) or 1.0
    shared = {
        c.chunk_id: dataclasses.replace(c, final_score=math.exp(c.rerank_score - top) / total)
        for c in [*(own[c.chunk_id] for c in chunks if c.chunk_id in own), *scored]
    }
    return [shared[c.chunk_id] for c in chunks]
