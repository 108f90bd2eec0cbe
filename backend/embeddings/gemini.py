"""Gemini embeddings through the google-genai SDK: batched, bounded concurrency, retried, re-normalised."""

from __future__ import annotations

import importlib
import logging
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from backend.config import Settings
from backend.embeddings.base import empty_matrix, prepare_texts, unit_rows
from backend.errors import ProviderError

logger = logging.getLogger(__name__)

# batchEmbedContents accepts at most 100 requests per call (Settings allows larger batches).
API_MAX_BATCH = 100


def _transport_errors() -> tuple[type[Exception], ...]:
    """Timeout and connection errors: google-genai 3.x sends with httpx2 (an httpx fork), older with httpx."""
    found: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


def _make_client(settings: Settings, timeout_ms: int) -> genai.Client:
    key = settings.gemini_api_key.get_secret_value().strip() if settings.gemini_api_key else ""
    if not key:
        raise ValueError("Gemini embeddings need GEMINI_API_KEY (or set EMBEDDING_PROVIDER=local).")
    options = types.HttpOptions(base_url=settings.gemini_base_url or None, timeout=timeout_ms)
    return genai.Client(api_key=key, http_options=options)


def _shorten(message: object, limit: int = 300) -> str:
    text = " ".join(str(message or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rejection_message(error: genai_errors.APIError, model: str) -> str:
    hints = {
        401: "check GEMINI_API_KEY",
        403: "check GEMINI_API_KEY and that the key may use the Gemini API",
        404: f"check GEMINI_EMBEDDING_MODEL ({model!r} was not found)",
    }
    hint = hints.get(error.code, "check GEMINI_API_KEY, GEMINI_EMBEDDING_MODEL, GEMINI_EMBEDDING_DIMS")
    return (
        f"Gemini rejected the embedding request (HTTP {error.code} {error.status or ''}: "
        f"{_shorten(error.message)}). Not retried: {hint}."
    )


class GeminiEmbedder:
    """Gemini embeddings, truncated to `dims` (Matryoshka) and re-normalised to unit length."""

    def __init__(
        self,
        settings: Settings,
        client: genai.Client | None = None,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        self.model = settings.gemini_embedding_model
        self.dims = settings.gemini_embedding_dims
        self.model_id = f"{self.model}@{self.dims}"
        self._batch_size = min(settings.gemini_embedding_batch_size, API_MAX_BATCH)
        self._max_in_flight = settings.gemini_max_in_flight
        # Shared by all callers of this instance, so parallel ingests still respect the cap.
        self._in_flight = threading.BoundedSemaphore(settings.gemini_max_in_flight)
        self._attempts = settings.gemini_max_retries + 1
        self._timeout_s = settings.gemini_timeout_s
        self._timeout_ms = max(1, round(settings.gemini_timeout_s * 1000))  # the SDK counts milliseconds
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._client = client or _make_client(settings, self._timeout_ms)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (task RETRIEVAL_DOCUMENT), batches sent concurrently, rows in input order."""
        items = prepare_texts(texts)
        if not items:
            return empty_matrix(self.dims)
        batches = [items[i : i + self._batch_size] for i in range(0, len(items), self._batch_size)]
        workers = min(self._max_in_flight, len(batches))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gemini-embed") as pool:
            # map() yields in submission order and cancels the pending batches if one fails.
            parts = list(pool.map(lambda batch: self._embed_batch(batch, "RETRIEVAL_DOCUMENT"), batches))
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (task RETRIEVAL_QUERY)."""
        return self._embed_batch(prepare_texts([text]), "RETRIEVAL_QUERY")[0]

    def _embed_batch(self, texts: list[str], task_type: str) -> np.ndarray:
        # One Content per text: given bare strings, the SDK merges them into a single multi-part
        # content (one embedding for the whole batch) for multimodal models such as gemini-embedding-2.
        contents = [types.Content(parts=[types.Part(text=text)]) for text in texts]
        config = types.EmbedContentConfig(
            task_type=task_type,
            output_dimensionality=self.dims,
            http_options=types.HttpOptions(timeout=self._timeout_ms),
        )
        response = self._send(contents, config)
        embeddings = response.embeddings or []
        if len(embeddings) != len(texts) or any(len(e.values or []) != self.dims for e in embeddings):
            raise ProviderError(
                f"Gemini returned {len(embeddings)} embeddings of unexpected shape for {len(texts)} "
                f"texts (wanted {self.dims} dims each); check GEMINI_EMBEDDING_MODEL."
            )
        return unit_rows(np.array([e.values for e in embeddings], dtype=np.float32))

    def _send(
        self, contents: list[types.Content], config: types.EmbedContentConfig
    ) -> types.EmbedContentResponse:
        last_error: Exception | None = None
        for attempt in range(self._attempts):
            if attempt:
                time.sleep(self._backoff(attempt - 1))
            try:
                with self._in_flight:
                    return self._client.models.embed_content(
                        model=self.model, contents=contents, config=config
                    )
            except genai_errors.APIError as error:
                if error.code != 429 and not 500 <= (error.code or 0) < 600:
                    raise ProviderError(_rejection_message(error, self.model)) from error
                last_error = error
            except _TRANSPORT_ERRORS as error:
                last_error = error
            logger.warning(
                "Gemini embedding attempt %d/%d failed: %s", attempt + 1, self._attempts, last_error
            )
        raise ProviderError(self._exhausted_message(last_error)) from last_error

    def _backoff(self, retry: int) -> float:
        # Full jitter: concurrent batches that failed together do not retry in lockstep.
        return random.uniform(0, min(self._backoff_max_s, self._backoff_base_s * 2**retry))

    def _exhausted_message(self, error: Exception | None) -> str:
        prefix = f"Gemini embedding request failed after {self._attempts} attempt(s): "
        if isinstance(error, genai_errors.APIError) and error.code == 429:
            return prefix + (
                f"HTTP 429 {error.status or ''} ({_shorten(error.message)}). The API is rate limiting "
                "this key: retry later, or lower GEMINI_MAX_IN_FLIGHT, or raise GEMINI_MAX_RETRIES."
            )
        if isinstance(error, genai_errors.APIError):
            return prefix + (
                f"HTTP {error.code} {error.status or ''} ({_shorten(error.message)}). The service is "
                "unavailable: retry later, or raise GEMINI_MAX_RETRIES."
            )
        return prefix + (
            f"{type(error).__name__}: {_shorten(error)}. Check the network, or raise GEMINI_TIMEOUT_S "
            f"(now {self._timeout_s:g} s) if requests time out."
        )
