"""Embedding through the cache: vectors keyed by (scope, sha256 of the text, model), provider on a miss.

A writer reads its own scope and the shared one (the public corpus) and stores what it embeds in its
own: a user's texts are never looked up for, nor confirmed to, anyone else (migration 020).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping

import numpy as np
from psycopg_pool import ConnectionPool

from backend.auth.identity import SHARED_SCOPE
from backend.db.repositories import embedding_cache
from backend.embeddings import Embedder


def embed_with_cache(
    pool: ConnectionPool,
    embedder: Embedder,
    texts: Mapping[str, str],
    *,
    scope: uuid.UUID,
    batch_size: int,
    on_vectors: Callable[[Collection[str]], None] | None = None,
) -> tuple[dict[str, np.ndarray], set[str]]:
    """Vectors for {hash: text} as `scope` writes them; returns (vectors by hash, the hashes the provider
    embedded now).

    Each provider batch is cached as soon as it returns, so work done before a later failure is kept
    (a retry then embeds only the rest). No connection is held while the provider works.
    on_vectors: told the hashes that have their vector, the cached ones first, then each batch.
    """
    model = embedder.model_id
    with pool.connection() as conn:
        vectors = embedding_cache.fetch(conn, scopes={scope, SHARED_SCOPE}, model=model, hashes=list(texts))
    missing = [h for h in texts if h not in vectors]
    if on_vectors:
        on_vectors(list(vectors))
    for start in range(0, len(missing), batch_size):
        hashes = missing[start : start + batch_size]
        embedded = embedder.embed_documents([texts[h] for h in hashes])
        new = {h: np.asarray(v, dtype=np.float32) for h, v in zip(hashes, embedded, strict=True)}
        with pool.connection() as conn:
            embedding_cache.store(conn, scope=scope, model=model, vectors=new)
        vectors.update(new)
        if on_vectors:
            on_vectors(hashes)
    return vectors, set(missing)


def forget_embeddings(pool: ConnectionPool, *, scope: uuid.UUID, hashes: set[str]) -> None:
    """Remove texts from one scope of the cache (every model)."""
    if hashes:
        with pool.connection() as conn:
            embedding_cache.forget(conn, scope=scope, hashes=hashes)
