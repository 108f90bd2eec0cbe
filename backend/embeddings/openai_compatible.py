"""Embeddings from a server speaking OpenAI's POST /v1/embeddings: bge-m3 on vLLM, Ollama or Infinity,
Qwen's text-embedding-v3 on DashScope, OpenAI itself. Batched, bounded concurrency, retried (the chat
model's wire client), every row checked and re-normalised.

The vectors' size is OPENAI_EMBEDDING_DIMS, or found with one request the first time it is needed; it is
part of `model_id` ("BAAI/bge-m3@1024"), which is stored with every chunk, so the embedding-space guard
(sql/assert_embedding_space.sql) refuses to search a corpus embedded by another model or size.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from backend.config import Settings
from backend.embeddings.base import empty_matrix, prepare_texts, unit_rows
from backend.errors import ProviderError
from backend.llm.openai_client import OpenAIClient

PATH = "embeddings"


class OpenAICompatibleEmbedder:
    """OPENAI_EMBEDDING_MODEL at OPENAI_EMBEDDING_BASE_URL (else OPENAI_BASE_URL)."""

    def __init__(
        self,
        settings: Settings,
        *,
        client: OpenAIClient | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
    ) -> None:
        self.model = settings.openai_embedding_model.strip()
        base_url = settings.openai_embedding_url
        if not base_url or not self.model:
            raise ProviderError(
                "EMBEDDING_PROVIDER=openai_compatible needs OPENAI_EMBEDDING_MODEL and "
                "OPENAI_EMBEDDING_BASE_URL (or OPENAI_BASE_URL)"
            )
        self._dims = settings.openai_embedding_dims
        self._send_dims = settings.openai_embedding_send_dims
        self._query_prefix = settings.openai_embedding_query_prefix
        self._document_prefix = settings.openai_embedding_document_prefix
        self._batch_size = settings.openai_embedding_batch_size
        self._max_in_flight = settings.openai_embedding_max_in_flight
        # Shared by all callers of this instance, so parallel ingests still respect the cap.
        self._in_flight = threading.BoundedSemaphore(self._max_in_flight)
        self._probe_lock = threading.Lock()
        self._client = client or OpenAIClient(
            base_url,
            settings.openai_embedding_key,
            label=f"the embedding model {self.model} at {base_url}",
            timeout_s=settings.openai_embedding_timeout_s,
            max_retries=settings.openai_embedding_max_retries,
            timeout_setting="OPENAI_EMBEDDING_TIMEOUT_S",
            backoff_s=backoff_s,
            max_backoff_s=max_backoff_s,
        )

    @property
    def dims(self) -> int:
        """OPENAI_EMBEDDING_DIMS, else the size of one vector the server returns (asked once)."""
        if self._dims is None:
            with self._probe_lock:
                if self._dims is None:
                    self._dims = len(self._request(["dimension probe"], expected=None)[0])
        return self._dims

    @property
    def model_id(self) -> str:
        """The model and its size, stored with every chunk: "BAAI/bge-m3@1024"."""
        return f"{self.model}@{self.dims}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (OPENAI_EMBEDDING_DOCUMENT_PREFIX first), batches sent concurrently, in order."""
        items = [self._document_prefix + text for text in prepare_texts(texts)]
        dims = self.dims
        if not items:
            return empty_matrix(dims)
        batches = [items[i : i + self._batch_size] for i in range(0, len(items), self._batch_size)]
        if len(batches) == 1:
            return self._embed_batch(batches[0])
        workers = min(self._max_in_flight, len(batches))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai-embed") as pool:
            # map() yields in submission order and cancels the pending batches if one fails.
            return np.vstack(list(pool.map(self._embed_batch, batches)))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (OPENAI_EMBEDDING_QUERY_PREFIX first)."""
        return self._embed_batch([self._query_prefix + prepare_texts([text])[0]])[0]

    def close(self) -> None:
        self._client.close()

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return unit_rows(self._request(texts, expected=self.dims))

    def _request(self, texts: list[str], *, expected: int | None) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self._send_dims:
            body["dimensions"] = self._dims
        with self._in_flight:
            reply = self._client.post(PATH, body)
        return _vectors(reply, len(texts), expected, self._client.label)


def _vectors(reply: dict[str, Any], count: int, dims: int | None, label: str) -> np.ndarray:
    """The reply's `data[].embedding` in input order (by `index`), each of `dims` numbers; a reply that
    is not that is a ProviderError saying what came back and what to check."""
    data = reply.get("data")
    rows: list[tuple[int, Any]] = []
    if isinstance(data, list):
        for position, item in enumerate(data):
            if isinstance(item, dict):
                index = item.get("index")
                rows.append((index if isinstance(index, int) else position, _values(item.get("embedding"))))
    rows.sort(key=lambda row: row[0])
    vectors = [values for _, values in rows]
    if len(vectors) != count or any(v is None for v in vectors):
        raise ProviderError(
            f"{label} returned {len(vectors)} usable embeddings for {count} texts; "
            "check OPENAI_EMBEDDING_MODEL (is it an embedding model?) and OPENAI_EMBEDDING_BASE_URL"
        )
    sizes = {len(v) for v in vectors if v is not None}
    want = dims if dims is not None else next(iter(sizes))
    if sizes != {want} or want == 0:
        got = ", ".join(str(s) for s in sorted(sizes))
        raise ProviderError(
            f"{label} returned vectors of {got} dimensions, expected {want}; "
            "set OPENAI_EMBEDDING_DIMS to the model's size (or OPENAI_EMBEDDING_SEND_DIMS=true for a "
            "model that can shorten its vectors)"
        )
    return np.array(vectors, dtype=np.float32)


def _values(embedding: Any) -> list[float] | None:
    """A list of numbers, or base64 of little-endian float32 (encoding_format=base64); else None."""
    if isinstance(embedding, str):
        try:
            raw = base64.b64decode(embedding, validate=True)
        except ValueError:
            return None
        if len(raw) % 4:
            return None
        return np.frombuffer(raw, dtype="<f4").astype(np.float32).tolist()
    if isinstance(embedding, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in embedding
    ):
        return [float(x) for x in embedding]
    return None
