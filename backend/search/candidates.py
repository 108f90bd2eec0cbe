"""Stage 2 of a search: prefetched rows -> scored chunks, ranked by the rerank policy (and scored by the
seed's formula too, the scale the confidence policies were calibrated on)."""

from __future__ import annotations

from typing import Any

from backend.config import Settings
from backend.retrieval.params import Mode
from backend.retrieval.rerank import candidate_features, policy_scores
from backend.retrieval.scoring import chunk_score
from backend.search.policies import SearchPolicies
from backend.search.types import ScoredChunk


def score_candidates(
    rows: list[dict[str, Any]],
    *,
    query: str,
    terms: list[str],
    term_idf: dict[str, float],
    similarity: str,
    policies: SearchPolicies,
) -> list[ScoredChunk]:
    """Each row as a chunk with its features, their contributions and its scores, best first (stable on
    ties: the prefetch order, RRF or cosine, breaks them). `similarity`: similarity_source's answer."""
    chunks = [chunk_from_row(r) for r in rows]
    policy = policies.rerank
    features = candidate_features(chunks, terms, similarity, query, term_idf)
    finals = policy_scores(features, policy)
    seed = policy_scores(features, policies.seed)
    for chunk, f, final, seed_score in zip(chunks, features, finals, seed, strict=True):
        chunk.seed_score = seed_score
        chunk.keyword_coverage = f["keyword_coverage"]
        chunk.contributions = {name: w * f[name] for name, w in policy.weights.items()}
        chunk.rerank_score = sum(chunk.contributions.values())
        chunk.final_score = final
    return sorted(chunks, key=lambda c: -c.final_score)


def chunk_from_row(r: dict[str, Any]) -> ScoredChunk:
    """A prefetch row (or as_row's copy of a chunk) as an unscored chunk."""
    return ScoredChunk(
        chunk_id=r["id"],
        document_id=r["document_id"],
        external_id=r["external_id"],
        title=r["title"],
        heading_path=list(r["heading_path"] or []),
        position=r["position"],
        content=r["content"],
        content_hash=r["content_hash"],
        metadata=r["metadata"],
        content_tokens=r["content_tokens"],
        vector_rank=r.get("vector_rank"),
        full_text_rank=r.get("full_text_rank"),
        rrf_score=r.get("rrf_score"),
        similarity=r["similarity"],
        full_text_score=r.get("full_text_score"),
        kind=r.get("kind", "local"),
        url=r.get("url"),
        provider=r.get("provider"),
        fetched_at=r.get("fetched_at"),
        score=chunk_score(r["similarity"]),
    )


def as_row(chunk: ScoredChunk, *, similarity: float | None) -> dict[str, Any]:
    """A chunk as a prefetch row of another query: its text and place, a new cosine, no ranks."""
    return {
        "id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "external_id": chunk.external_id,
        "title": chunk.title,
        "heading_path": chunk.heading_path,
        "position": chunk.position,
        "content": chunk.content,
        "content_hash": chunk.content_hash,
        "metadata": chunk.metadata,
        "content_tokens": chunk.content_tokens,
        "similarity": similarity,
        "kind": chunk.kind,
        "url": chunk.url,
        "provider": chunk.provider,
        "fetched_at": chunk.fetched_at,
    }


def similarity_source(mode: Mode, settings: Settings) -> str:
    """What the policy's "similarity" feature reads in this mode."""
    if mode == "vector":
        return "cosine"
    if mode == "fulltext":
        return "full_text_score / best"
    return "cosine" if settings.rag_rerank_similarity == "cosine" else "rrf_score / best"


def idfs(term_stats: dict[str, tuple[int, float]]) -> dict[str, float]:
    """term -> idf, from term -> (df, idf)."""
    return {term: idf for term, (_df, idf) in term_stats.items()}
