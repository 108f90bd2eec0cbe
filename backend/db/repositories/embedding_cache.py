"""Vectors keyed by (scope, sha256 of the embedded text, model); scope: whose ingestion wrote them.

A scope is a user id (that user's private documents) or auth.SHARED_SCOPE (the public corpus). Reads
name their scopes explicitly and go through the primary key, so a lookup never reads, nor waits on,
another scope's entries (migration 020).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence

import numpy as np
import psycopg


def fetch(
    conn: psycopg.Connection, *, scopes: Collection[uuid.UUID], model: str, hashes: Sequence[str]
) -> dict[str, np.ndarray]:
    """The cached vectors among `hashes` in any of `scopes`."""
    if not hashes or not scopes:
        return {}
    rows = conn.execute(
        "select content_hash, embedding from embedding_cache where scope = any(%(scopes)s) "
        "and model = %(model)s and content_hash = any(%(hashes)s)",
        {"scopes": list(set(scopes)), "model": model, "hashes": list(set(hashes))},
    ).fetchall()
    return {r[0]: _as_array(r[1]) for r in rows}


def _as_array(value: object) -> np.ndarray:
    # pgvector's binary loader returns a Vector object (to_numpy) on recent versions, an array on older.
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def store(
    conn: psycopg.Connection, *, scope: uuid.UUID, model: str, vectors: Mapping[str, np.ndarray]
) -> None:
    """Add vectors to one scope (existing keys are kept)."""
    if not vectors:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "insert into embedding_cache (scope, model, content_hash, embedding) values (%s, %s, %s, %s) "
            "on conflict (scope, content_hash, model) do nothing",
            [(scope, model, h, v) for h, v in vectors.items()],
        )


def forget(conn: psycopg.Connection, *, scope: uuid.UUID, hashes: Collection[str]) -> int:
    """Remove these texts' vectors (every model) from one scope; the number of entries removed."""
    if not hashes:
        return 0
    return conn.execute(
        "delete from embedding_cache where scope = %(scope)s and content_hash = any(%(hashes)s)",
        {"scope": scope, "hashes": list(hashes)},
    ).rowcount
