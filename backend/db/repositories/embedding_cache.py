"""Vectors keyed by (model, sha256 of the embedded text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import psycopg


def fetch(conn: psycopg.Connection, *, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """The cached vectors among `hashes`."""
    if not hashes:
        return {}
    rows = conn.execute(
        "select content_hash, embedding from embedding_cache where model = %(model)s "
        "and content_hash = any(%(hashes)s)",
        {"model": model, "hashes": list(set(hashes))},
    ).fetchall()
    return {r[0]: _as_array(r[1]) for r in rows}


def _as_array(value: object) -> np.ndarray:
    # pgvector's binary loader returns a Vector object (to_numpy) on recent versions, an array on older.
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def store(conn: psycopg.Connection, *, model: str, vectors: Mapping[str, np.ndarray]) -> None:
    """Add vectors to the cache (existing keys are kept)."""
    if not vectors:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "insert into embedding_cache (model, content_hash, embedding) values (%s, %s, %s) "
            "on conflict (model, content_hash) do nothing",
            [(model, h, v) for h, v in vectors.items()],
        )
