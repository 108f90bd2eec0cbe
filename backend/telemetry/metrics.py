"""The Prometheus metrics of one process (prometheus_client), created once by the composition function.

Every metric lives in the Metrics object's own CollectorRegistry rather than the library's global one:
two apps in one process (the tests build dozens) never collide, and nothing is looked up through a
global. Names follow Prometheus conventions (`_seconds`, `_total`); label values come from small fixed
sets (route templates, stage names, provider names, reasons), never from user input.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

Stage = Literal["embed", "sql", "rerank", "generate", "web", "context"]
ProviderKind = Literal["embedding", "llm", "web", "rerank", "token_count"]

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_COUNT_BUCKETS = (0, 1, 2, 3, 5, 8, 10, 20, 50, 100)
_SCORE_BUCKETS = tuple(round(0.1 * i, 1) for i in range(1, 11))
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The counters and histograms /metrics exposes, and small helpers that record them."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Histogram(
            "pgrag_http_request_duration_seconds",
            "HTTP request latency by route template (streamed answers: until the last byte)",
            ["method", "route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.stages = Histogram(
            "pgrag_stage_duration_seconds",
            "Latency of one pipeline stage: embed (query embedding), sql (the retrieval function), "
            "rerank, generate (the answer), web (the web leg), context (token counting)",
            ["stage"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.results = Histogram(
            "pgrag_results",
            "Results per /search request, evidence sources per /chat answer",
            ["endpoint"],
            buckets=_COUNT_BUCKETS,
            registry=r,
        )
        self.best_score = Histogram(
            "pgrag_best_score",
            "The best result's final score (its scale depends on the reranker label)",
            ["endpoint", "reranker"],
            buckets=_SCORE_BUCKETS,
            registry=r,
        )
        self.searches = Counter(
            "pgrag_searches_total",
            "Searches answered, by outcome (empty: no result); empty rate = empty / all",
            ["endpoint", "outcome"],
            registry=r,
        )
        self.reranks = Counter(
            "pgrag_rerank_total",
            "Searches by the reranker that ordered them, and whether it fell back to the heuristic order",
            ["reranker", "outcome"],
            registry=r,
        )
        self.rerank_fallbacks = Counter(
            "pgrag_rerank_fallbacks_total",
            "Model reranker failures by reason (the heuristic order was kept)",
            ["reranker", "reason"],
            registry=r,
        )
        self.provider_errors = Counter(
            "pgrag_provider_errors_total",
            "Failed calls to an external provider (after its retries)",
            ["kind", "provider"],
            registry=r,
        )
        self.query_cache = Counter(
            "pgrag_query_embedding_cache_total",
            "Query embeddings served from the in-memory LRU cache (hit) or computed (miss)",
            ["result"],
            registry=r,
        )
        self.token_counts = Counter(
            "pgrag_context_token_counts_total",
            "Texts whose tokens the context builder counted, by how (api, cache, estimate)",
            ["method"],
            registry=r,
        )
        self.warm_up = Gauge(
            "pgrag_embedder_warm_up_seconds",
            "How long loading the local embedding model took at start-up",
            registry=r,
        )

    @contextmanager
    def stage(self, stage: Stage) -> Iterator[None]:
        """Time a block as one observation of `stage` (also when it raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages.labels(stage).observe(time.perf_counter() - started)

    def observe_stage(self, stage: Stage, seconds: float) -> None:
        self.stages.labels(stage).observe(max(0.0, seconds))

    def provider_error(self, kind: ProviderKind, provider: str) -> None:
        self.provider_errors.labels(kind, provider).inc()

    def observe_results(
        self, endpoint: Literal["search", "chat"], count: int, best: float | None, reranker: str
    ) -> None:
        """One answered request: how many results, the best score, empty or not."""
        self.results.labels(endpoint).observe(count)
        self.searches.labels(endpoint, "results" if count else "empty").inc()
        if count and best is not None:
            self.best_score.labels(endpoint, reranker).observe(best)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
