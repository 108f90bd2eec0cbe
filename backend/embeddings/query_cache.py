"""Query embeddings: a small in-memory LRU cache in front of the embedder, and the start-up warm-up.

Users repeat questions (a retry, the same FAQ, a chat turn's gap searches), and a query vector costs a
model run or an API call, so the last QUERY_EMBEDDING_CACHE_SIZE vectors are kept per process. The key
is the caller's scope, the model id and the exact (cleaned) query text: a model change never serves a
stale vector, and a hit never tells a user (by `embed_ms` in the diagnostics, or by latency) that
somebody else asked the same question (issue 24).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict

import numpy as np

from backend.embeddings.base import Embedder
from backend.errors import ProviderError
from backend.telemetry.metrics import Metrics

logger = logging.getLogger(__name__)


class QueryEmbeddings:
    """embed_query through an LRU cache, timed and counted in the metrics."""

    def __init__(self, embedder: Embedder, metrics: Metrics, *, size: int) -> None:
        self.embedder = embedder
        self.size = size
        self._metrics = metrics
        self._cache: OrderedDict[tuple[uuid.UUID, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, text: str, *, scope: uuid.UUID) -> np.ndarray:
        """The query's vector for the caller of `scope` (Identity.cache_scope); a read-only array:
        that caller's later searches share it."""
        key = (scope, self.embedder.model_id, text)
        if self.size:
            with self._lock:
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
            if cached is not None:
                self._metrics.query_cache.labels("hit").inc()
                return cached
            self._metrics.query_cache.labels("miss").inc()
        try:
            with self._metrics.stage("embed"):
                vector = self.embedder.embed_query(text)
        except ProviderError:
            self._metrics.provider_error("embedding", self.embedder.model_id)
            raise
        vector.setflags(write=False)
        if self.size:
            with self._lock:
                self._cache[key] = vector
                self._cache.move_to_end(key)
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return vector

    def __len__(self) -> int:
        return len(self._cache)


def warm_up(embedder: Embedder, metrics: Metrics) -> float | None:
    """Load a local model before the first request needs it; its seconds, or None (nothing to load).

    Only in-process models are warmed: an API embedder has nothing to load, and a call would cost money.
    Blocking (seconds): the server runs it in a worker thread at start-up.
    """
    load = getattr(embedder, "warm_up", None)
    if load is None:
        return None
    started = time.perf_counter()
    load()
    seconds = time.perf_counter() - started
    metrics.warm_up.set(seconds)
    logger.info("embedder %s warmed up in %.2f s", embedder.model_id, seconds)
    return seconds
