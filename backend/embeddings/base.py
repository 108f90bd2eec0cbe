"""The embedding interface every provider implements, and the checks they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from backend.errors import InvalidInput, ProviderError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; `model_id` is stored with every chunk."""

    @property
    def model_id(self) -> str:
        """The model and its dimension, e.g. "gemini-embedding-001@768" (read-only: a provider may have to
        ask its server for the size first)."""
        ...

    @property
    def dims(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages for storage: shape (len(texts), dims), float32, rows of unit length."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query: shape (dims,), float32, unit length."""
        ...


def prepare_texts(texts: Sequence[str]) -> list[str]:
    """The texts as a list, refusing a bare string and empty or whitespace-only items."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of texts, not a single str")
    items = list(texts)
    for position, text in enumerate(items):
        # Refused rather than padded: an empty chunk or query is a bug upstream, and a
        # placeholder vector would match unrelated text in search.
        if not text or not text.strip():
            raise InvalidInput(
                f"Cannot embed an empty text (item {position + 1} of {len(items)}); "
                "drop empty chunks and queries before embedding."
            )
    return items


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length, as float32; a zero row is a provider fault."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise ProviderError("The embedding provider returned a zero or non-finite vector.")
    return matrix / norms


def empty_matrix(dims: int) -> np.ndarray:
    """The (0, dims) result of embedding no texts."""
    return np.empty((0, dims), dtype=np.float32)
