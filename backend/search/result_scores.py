"""The results' `score` where the SQL gave none, min_score, and what the diagnostics say about both
(backend.retrieval.scoring defines the score; docs/scores.md)."""

from __future__ import annotations

import logging

from backend.auth.identity import Identity
from backend.db.database import Database
from backend.db.repositories import retrieval as retrieval_repo
from backend.embeddings import Embedder
from backend.errors import DomainError
from backend.retrieval.scoring import chunk_score
from backend.search.diagnostics import ScoreDiagnostics
from backend.search.types import ScoredChunk

logger = logging.getLogger(__name__)


def score_without_vectors(
    db: Database, embedder: Embedder, identity: Identity, query: str, ranked: list[ScoredChunk]
) -> None:
    """Full-text mode ranks without vectors; the score still means closeness in meaning, so the ranked
    chunks get their cosine to the query (one query embedding, one lookup by id). Without an embedding
    (the provider failed) they stay unscored, and the diagnostics count them."""
    if not ranked:
        return
    try:
        embedding = embedder.embed_query(query)
    except DomainError as exc:
        logger.warning("[search] full-text results left unscored: the query embedding failed: %s", exc)
        return
    with db.as_user(identity, read_only=True, replica=True) as conn:
        cosines = retrieval_repo.similarities(
            conn,
            chunk_ids=[c.chunk_id for c in ranked],
            query_embedding=embedding,
            embedding_model=embedder.model_id,
        )
    for chunk in ranked:
        chunk.score = chunk_score(cosines.get(chunk.chunk_id))


def at_least(ranked: list[ScoredChunk], min_score: float | None) -> tuple[list[ScoredChunk], int]:
    """The chunks scoring at least min_score (an unscored chunk does not pass one), and how many did not."""
    if min_score is None:
        return ranked, 0
    kept = [c for c in ranked if c.score is not None and c.score >= min_score]
    return kept, len(ranked) - len(kept)


def score_diagnostics(candidates: list[ScoredChunk], min_score: float | None, below: int) -> ScoreDiagnostics:
    scores = [c.score for c in candidates if c.score is not None]
    return ScoreDiagnostics(
        min_score=min_score,
        below_min_score=below,
        unscored=len(candidates) - len(scores),
        best_score=max(scores, default=None),
    )
