"""Counting prompt tokens for the context budget: Gemini's count-tokens API, or the calibrated estimate.

The API counts with the model's own tokenizer, so it is exact, but it is a network call: texts are
counted concurrently, each count is remembered by the caller and the text's sha256 (a chunk is counted
once per process and caller, however many of that caller's answers cite it), and whatever is not
counted within CONTEXT_COUNT_TIMEOUT_S is estimated (backend/text/tokens.py) and reported as such. A
count that arrives late still fills the cache. Per caller, because the texts include the question and
the context diagnostics say which counts came from the cache: a shared cache would tell a user that
somebody else just asked the same question (issue 24).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal, Protocol

from google import genai
from google.genai import types

from backend.config import Settings
from backend.telemetry import Metrics
from backend.text.tokens import estimate_tokens

logger = logging.getLogger(__name__)
_WORKERS = 4


@dataclass
class Counts:
    """Token counts of some texts (in order), and how each was obtained."""

    tokens: list[int]
    exact: list[bool]  # counted by the model's tokenizer (else estimated)
    methods: dict[str, int] = field(default_factory=lambda: {"api": 0, "cache": 0, "estimate": 0})
    error: str | None = None  # why some texts were estimated although an API counter is configured


class TokenCounter(Protocol):
    name: Literal["gemini", "estimate"]
    model: str | None

    def count(self, texts: Sequence[str], *, scope: uuid.UUID) -> Counts:
        """The tokens of each text, for the caller of `scope` (Identity.cache_scope: whose cached
        counts it may use); never raises (an API failure falls back to the estimate)."""
        ...


class EstimateCounter:
    """The calibrated character-class estimate, times CONTEXT_ESTIMATE_MARGIN."""

    name: Literal["gemini", "estimate"] = "estimate"
    model: str | None = None

    def __init__(self, margin: float, metrics: Metrics | None = None) -> None:
        self.margin = margin
        self._metrics = metrics

    def count(self, texts: Sequence[str], *, scope: uuid.UUID | None = None) -> Counts:
        counts = Counts([estimate_tokens(t, self.margin) for t in texts], [False] * len(texts))
        counts.methods["estimate"] = len(texts)
        if self._metrics is not None and texts:
            self._metrics.token_counts.labels("estimate").inc(len(texts))
        return counts


class GeminiTokenCounter:
    """models.countTokens of the chat model, cached by text hash, bounded in time, estimated on failure."""

    name: Literal["gemini", "estimate"] = "gemini"

    def __init__(self, settings: Settings, metrics: Metrics, *, client: genai.Client | None = None) -> None:
        self.model: str | None = settings.gemini_chat_model
        self._timeout_s = settings.context_count_timeout_s
        self._estimate = EstimateCounter(settings.context_estimate_margin)
        self._metrics = metrics
        self._size = settings.context_count_cache_size
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="count-tokens")
        self._client = client or _make_client(settings)

    def count(self, texts: Sequence[str], *, scope: uuid.UUID) -> Counts:
        counts = Counts([0] * len(texts), [False] * len(texts))
        keys = [_key(scope, t) for t in texts]
        pending: dict[str, Future[int]] = {}
        for i, (text, key) in enumerate(zip(texts, keys, strict=True)):
            cached = self._cached(key)
            if cached is not None:
                counts.tokens[i] = cached
                counts.methods["cache"] += 1
                counts.exact[i] = True
            elif key not in pending:
                pending[key] = self._pool.submit(self._count_one, text, key)
        wait(pending.values(), timeout=self._timeout_s)
        for i, (text, key) in enumerate(zip(texts, keys, strict=True)):
            future = pending.get(key)
            if future is None:
                continue
            if future.done() and future.exception() is None:
                counts.tokens[i] = future.result()
                counts.methods["api"] += 1
                counts.exact[i] = True
                continue
            counts.tokens[i] = self._estimate.count([text]).tokens[0]
            counts.methods["estimate"] += 1
            if counts.error is None:
                error = future.exception() if future.done() else None
                # The SDK's own timeout may fire just before ours: both mean the count was too slow.
                counts.error = (
                    f"count_tokens failed: {error}"
                    if error and not _timed_out(error)
                    else (f"count_tokens took longer than {self._timeout_s:g} s (CONTEXT_COUNT_TIMEOUT_S)")
                )
        for method, n in counts.methods.items():
            if n:
                self._metrics.token_counts.labels(method).inc(n)
        if counts.error:
            logger.warning("[context] %s; %d text(s) estimated", counts.error, counts.methods["estimate"])
        return counts

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _count_one(self, text: str, key: str) -> int:
        try:
            response = self._client.models.count_tokens(model=self.model or "", contents=text)
        except Exception:
            # Any failure of an optional call (HTTP, network, SDK) means "estimate instead"; counted.
            self._metrics.provider_error("token_count", "gemini")
            raise
        if response.total_tokens is None:
            raise ValueError("count_tokens returned no total_tokens")
        tokens = int(response.total_tokens)
        self._remember(key, tokens)
        return tokens

    def _cached(self, key: str) -> int | None:
        with self._lock:
            value = self._cache.get(key)
            if value is not None:
                self._cache.move_to_end(key)
            return value

    def _remember(self, key: str, tokens: int) -> None:
        if not self._size:
            return
        with self._lock:
            self._cache[key] = tokens
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)


def create_token_counter(settings: Settings, metrics: Metrics) -> TokenCounter:
    """Gemini's API when CONTEXT_TOKEN_COUNTER says so (auto: when the LLM is Gemini), else the estimate."""
    choice = settings.context_token_counter
    use_api = choice == "gemini" or (choice == "auto" and settings.resolved_llm_provider == "gemini")
    if use_api and settings.gemini_api_key is not None:
        return GeminiTokenCounter(settings, metrics)
    return EstimateCounter(settings.context_estimate_margin, metrics)


def _key(scope: uuid.UUID, text: str) -> str:
    return hashlib.sha256(f"{scope}\x00{text}".encode()).hexdigest()


def _make_client(settings: Settings) -> genai.Client:
    assert settings.gemini_api_key is not None
    options = types.HttpOptions(timeout=max(1, round(settings.context_count_timeout_s * 1000)))
    if settings.gemini_base_url:
        options.base_url = settings.gemini_base_url
    return genai.Client(
        api_key=settings.gemini_api_key.get_secret_value(), vertexai=False, http_options=options
    )


def _timed_out(error: BaseException) -> bool:
    """A timeout raised by the HTTP client under the SDK (httpx's, or the standard library's)."""
    seen: BaseException | None = error
    for _ in range(8):  # a chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, TimeoutError) or "Timeout" in type(seen).__name__:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
