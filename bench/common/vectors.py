"""Embeddings the benchmarks keep across runs: corpus and query vectors per (model, dataset).

The local model embeds about 1.5 passages per second on 2 cores, so every vector it produces is kept
in .data/bench-cache/<model>/<dataset>.npz, keyed by the sha256 of the exact text it embedded. Corpus
vectors seed a fresh database's embedding_cache (the ingestion service looks them up by the same
key); query vectors are served by QueryCachingEmbedder, so each query is embedded once for all
variants and all runs.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import psycopg

from backend.db.repositories import embedding_cache
from backend.embeddings import Embedder
from bench.common import CACHE_DIR


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class BenchCache:
    """Passage and query vectors of one (model, dataset), loaded from and saved to one .npz file."""

    def __init__(self, model_id: str, dataset: str, root: Path = CACHE_DIR) -> None:
        self.path = root / re.sub(r"[^A-Za-z0-9._-]+", "_", model_id) / f"{dataset}.npz"
        self.passages: dict[str, np.ndarray] = {}
        self.queries: dict[str, np.ndarray] = {}
        if self.path.exists():
            self.passages, self.queries = _read(self.path)
        self._saved = (len(self.passages), len(self.queries))

    def save(self) -> bool:
        """Write the file if anything was added since the last load or save (atomically)."""
        sizes = (len(self.passages), len(self.queries))
        if sizes == self._saved:
            return False
        if self.path.exists():  # another run may have saved since we loaded: keep its vectors too
            passages, queries = _read(self.path)
            for key, vector in passages.items():
                self.passages.setdefault(key, vector)
            for key, vector in queries.items():
                self.queries.setdefault(key, vector)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp.npz")
        passage_keys, passage_vectors = _pack(self.passages)
        query_keys, query_vectors = _pack(self.queries)
        np.savez(
            tmp,
            passage_keys=passage_keys,
            passage_vectors=passage_vectors,
            query_keys=query_keys,
            query_vectors=query_vectors,
        )
        tmp.replace(self.path)
        self._saved = (len(self.passages), len(self.queries))
        return True


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    with np.load(path) as data:
        return (
            _unpack(data["passage_keys"], data["passage_vectors"]),
            _unpack(data["query_keys"], data["query_vectors"]),
        )


def _pack(vectors: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.array(list(vectors), dtype="U64")
    if not vectors:
        return keys, np.empty((0, 0), dtype=np.float32)
    return keys, np.vstack([np.asarray(v, dtype=np.float32) for v in vectors.values()])


def _unpack(keys: np.ndarray, vectors: np.ndarray) -> dict[str, np.ndarray]:
    return {str(k): vectors[i].copy() for i, k in enumerate(keys)}


class QueryCachingEmbedder:
    """An Embedder that serves embed_query from a dict keyed by sha256(text); documents pass through."""

    def __init__(self, inner: Embedder, cache: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dims = inner.dims
        self.cache = cache
        self.misses = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        key = sha256(text)
        vector = self.cache.get(key)
        if vector is None:
            vector = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.cache[key] = vector
            self.misses += 1
        return vector


def seed_database_cache(conn: psycopg.Connection, *, model: str, vectors: Mapping[str, np.ndarray]) -> None:
    """Put known passage vectors into public.embedding_cache, where ingestion looks them up."""
    with conn.transaction():
        embedding_cache.store(conn, model=model, vectors=vectors)


def read_database_cache(conn: psycopg.Connection, *, model: str) -> dict[str, np.ndarray]:
    """Every vector public.embedding_cache holds for this model (after an ingest added some)."""
    rows = conn.execute(
        "select content_hash, embedding from embedding_cache where model = %(model)s", {"model": model}
    ).fetchall()
    return {r[0]: _as_array(r[1]) for r in rows}


def _as_array(value: object) -> np.ndarray:
    to_numpy = getattr(value, "to_numpy", None)  # pgvector's Vector on recent versions
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)
