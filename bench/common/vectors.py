"""Embeddings the benchmarks keep across runs: corpus and query vectors per (model, dataset).

The local model embeds about 1.5 passages per second on 2 cores, so every vector it produces is kept
in .data/bench-cache/<model>/<dataset>.npz, keyed by the sha256 of the exact text it embedded (the
key of the product's embedding_cache). Passage vectors seed a fresh database's embedding_cache, where
the ingestion service looks them up; query vectors are served by CachedEmbedder, so each query is
embedded once for all variants and all runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from backend.auth.identity import SHARED_SCOPE
from backend.composition import Services
from backend.config import Settings
from backend.db.repositories import embedding_cache
from backend.documents.outcomes import IngestSummary
from backend.embeddings import Embedder, LocalEmbedder
from backend.ingest.documents import LoadedDocument, LoadFailure
from backend.ingest.prepare import sha256
from backend.testing import HashingEmbedder
from bench.common import CACHE_DIR, log


def make_embedder(kind: str, settings: Settings) -> Embedder:
    """The bundled local model, or the hashing embedder (fast, deterministic, no model)."""
    return LocalEmbedder(settings) if kind == "local" else HashingEmbedder()


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
        if (len(self.passages), len(self.queries)) == self._saved:
            return False
        if self.path.exists():  # another run may have saved since we loaded: keep its vectors too
            passages, queries = _read(self.path)
            for mine, theirs in ((self.passages, passages), (self.queries, queries)):
                for key, vector in theirs.items():
                    mine.setdefault(key, vector)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp.npz")
        passage_keys, passage_vectors = pack(self.passages)
        query_keys, query_vectors = pack(self.queries)
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
        return unpack(data, "passage"), unpack(data, "query")


def pack(vectors: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(keys, stacked float32 vectors), as np.savez stores them."""
    keys = np.array(list(vectors), dtype=str)
    if not vectors:
        return keys, np.empty((0, 0), dtype=np.float32)
    return keys, np.vstack([np.asarray(v, dtype=np.float32) for v in vectors.values()])


def unpack(data: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The vectors pack() made, stored as <prefix>_keys and <prefix>_vectors, by key."""
    vectors = data[f"{prefix}_vectors"]
    return {str(k): vectors[i].copy() for i, k in enumerate(data[f"{prefix}_keys"])}


class CachedEmbedder:
    """An Embedder over `inner` that keeps its work in a BenchCache.

    embed_query is served from cache.queries (keyed by sha256 of the text) and counts its misses;
    embed_documents passes through (ingestion only asks for what the database's embedding_cache,
    seeded from cache.passages, lacks) and records what it computed in cache.passages.
    """

    def __init__(self, inner: Embedder, cache: BenchCache) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dims = inner.dims
        self.cache = cache
        self.misses = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.inner.embed_documents(texts)
        for text, vector in zip(texts, vectors, strict=True):
            self.cache.passages[sha256(text)] = np.asarray(vector, dtype=np.float32)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        key = sha256(text)
        vector = self.cache.queries.get(key)
        if vector is None:
            vector = np.asarray(self.inner.embed_query(text), dtype=np.float32)
            self.cache.queries[key] = vector
            self.misses += 1
        return vector


def seed_database_cache(services: Services, vectors: Mapping[str, np.ndarray]) -> None:
    """Put known passage vectors into public.embedding_cache, in the shared scope where ingestion as
    the backend (identity None, the public corpus) looks them up."""
    with services.pool.connection() as conn, conn.transaction():
        embedding_cache.store(conn, scope=SHARED_SCOPE, model=services.embedder.model_id, vectors=vectors)


def ingest_cached(
    services: Services, items: Iterable[LoadedDocument | LoadFailure], label: str
) -> IngestSummary:
    """Ingest through services built with a CachedEmbedder: the database's embedding cache seeded
    from its BenchCache, what the model embeds saved back after every write group (so a failure in a
    later step keeps the slow model's work)."""
    if not isinstance(services.embedder, CachedEmbedder):
        raise TypeError("ingest_cached needs services built with a CachedEmbedder")
    cache = services.embedder.cache
    seed_database_cache(services, cache.passages)

    def save_new_vectors(summary: IngestSummary, _chunks: int) -> None:
        if cache.save():
            log(f"  {label}: {summary.chunks_embedded} chunks embedded, {summary.chunks_from_cache} cached")

    summary = services.ingestion.ingest(items, identity=None, on_progress=save_new_vectors)
    if summary.failures:
        log(f"  {label}: {len(summary.failures)} documents failed, e.g. {summary.failures[0].error}")
    return summary
