"""Re-embedding a corpus with the configured model (after switching embedding providers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from backend.db.repositories import documents as documents_repo
from backend.embeddings import Embedder
from backend.ingest.prepare import embedding_text, sha256
from backend.services.embedding_store import embed_with_cache


@dataclass
class ReembedSummary:
    model: str
    chunks: int = 0
    embedded: int = 0  # by the provider; the rest came from the embedding cache


def reembed(
    pool: ConnectionPool,
    embedder: Embedder,
    *,
    batch_size: int,
    on_progress: Callable[[ReembedSummary, int], None] | None = None,
) -> ReembedSummary:
    """Give every chunk embedded by another model a vector from `embedder`, one committed batch at a time.

    While it runs, searches see the chunks already converted (the SQL functions filter by model),
    never a mix of vector spaces; an interrupted run resumes where it stopped.
    """
    summary = ReembedSummary(embedder.model_id)
    with pool.connection() as conn:
        total = documents_repo.count_chunks_embedded_by_other_models(conn, model=embedder.model_id)
    after = 0
    while True:
        with pool.connection() as conn:
            rows = documents_repo.chunks_embedded_by_other_models(
                conn, model=embedder.model_id, after_id=after, limit=batch_size
            )
        if not rows:
            return summary
        texts = {row[0]: embedding_text(row[1], row[2], row[3]) for row in rows}
        by_hash = {sha256(text): text for text in texts.values()}
        vectors, embedded = embed_with_cache(pool, embedder, by_hash, batch_size=batch_size)
        with pool.connection() as conn:
            documents_repo.update_embeddings(
                conn, model=embedder.model_id, vectors=[(cid, vectors[sha256(t)]) for cid, t in texts.items()]
            )
        summary.chunks += len(rows)
        summary.embedded += len(embedded)
        after = rows[-1][0]
        if on_progress:
            on_progress(summary, total)
