"""Re-embedding a corpus with the configured model (after switching embedding providers)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from psycopg_pool import ConnectionPool

from backend.auth.identity import cache_scope
from backend.db.repositories import reembedding
from backend.db.repositories.reembedding import ChunkToReembed
from backend.documents.embedding_store import embed_with_cache
from backend.embeddings import Embedder
from backend.ingest.prepare import embedding_text, sha256


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
        total = reembedding.count_chunks_embedded_by_other_models(conn, model=embedder.model_id)
    after = 0
    while True:
        with pool.connection() as conn:
            rows = reembedding.chunks_embedded_by_other_models(
                conn, model=embedder.model_id, after_id=after, limit=batch_size
            )
        if not rows:
            return summary
        updates: list[tuple[int, np.ndarray, str]] = []
        # Each chunk's vector comes from, and goes to, its owner's cache scope (the shared one for the
        # public corpus), as ingestion would have put it there.
        for scope, chunks in _by_scope(rows).items():
            texts = {c.id: embedding_text(c.title, c.heading_path, c.content) for c in chunks}
            hashes = {cid: sha256(text) for cid, text in texts.items()}
            by_hash = {hashes[cid]: text for cid, text in texts.items()}
            vectors, embedded = embed_with_cache(pool, embedder, by_hash, scope=scope, batch_size=batch_size)
            updates.extend((cid, vectors[h], h) for cid, h in hashes.items())
            summary.embedded += len(embedded)
        with pool.connection() as conn:
            reembedding.update_embeddings(conn, model=embedder.model_id, vectors=updates)
        summary.chunks += len(rows)
        after = rows[-1].id
        if on_progress:
            on_progress(summary, total)


def _by_scope(rows: Sequence[ChunkToReembed]) -> dict[uuid.UUID, list[ChunkToReembed]]:
    groups: dict[uuid.UUID, list[ChunkToReembed]] = {}
    for row in rows:
        groups.setdefault(cache_scope(row.owner_id), []).append(row)
    return groups
