"""Test doubles: a deterministic hashing embedder and a wrapper that fails on a chosen call."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

import numpy as np

from backend.embeddings.base import Embedder, empty_matrix, prepare_texts, unit_rows
from backend.errors import ProviderError
from backend.text import normalize, segment


def _hash(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")


def _features(text: str) -> list[str]:
    """jieba tokens plus character bigrams (whitespace removed), prefixed so the two never collide."""
    compact = "".join(normalize(text).lower().split())
    bigrams = [compact[i : i + 2] for i in range(len(compact) - 1)] or [compact]
    return [f"w:{token}" for token in segment(text)] + [f"c:{gram}" for gram in bigrams if gram]


class HashingEmbedder:
    """Bag of tokens and bigrams hashed into signed buckets: shared words mean higher cosine. Tests only."""

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims
        self.model_id = f"hashing-test@{dims}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One hashed bag-of-features vector per text, unit length."""
        items = prepare_texts(texts)
        if not items:
            return empty_matrix(self.dims)
        return unit_rows(np.vstack([self._vector(text) for text in items]))

    def embed_query(self, text: str) -> np.ndarray:
        """Queries and documents share one vector space (no prefixes)."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dims, dtype=np.float32)
        for feature in _features(text):
            value = _hash(feature)
            vector[value % self.dims] += 1.0 if value >> 63 else -1.0
        if not vector.any():
            # Signed buckets of a 1-2 feature text can cancel out (or normalisation left nothing):
            # fall back to one bucket keyed by the raw text, so every text still gets a unit vector.
            vector[_hash(f"raw:{text}") % self.dims] = 1.0
        return vector


class FailingEmbedder:
    """Delegates to `inner`, but the `fail_on_call`-th embed_documents call (1-based) raises ProviderError."""

    def __init__(self, inner: Embedder, fail_on_call: int = 1) -> None:
        self.inner = inner
        self.fail_on_call = fail_on_call
        self.model_id = inner.model_id
        self.dims = inner.dims
        self.document_calls = 0
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's result, except on the chosen call."""
        with self._lock:
            self.document_calls += 1
            call = self.document_calls
        if call == self.fail_on_call:
            raise ProviderError(f"Simulated embedding failure on embed_documents call {call}.")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """Never fails: only document embedding is scripted."""
        return self.inner.embed_query(text)
