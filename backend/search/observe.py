"""Recording what a /search or /chat request produced, from the typed results and diagnostics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from backend.telemetry.metrics import Metrics

if TYPE_CHECKING:
    from backend.search.diagnostics import WebDiagnostics
    from backend.search.types import ScoredChunk, SearchResult

_WEB_FAILURES = frozenset({"error", "timeout"})


def observe_search(metrics: Metrics, result: SearchResult, web: WebDiagnostics | None) -> None:
    """One /search answer: its result count, best score, emptiness, and its web leg."""
    best = result.results[0].final_score if result.results else None
    metrics.observe_results("search", len(result.results), best, result.reranker)
    observe_web(metrics, web)


def observe_answer(
    metrics: Metrics, sources: Sequence[ScoredChunk], web: WebDiagnostics | None, reranker: str
) -> None:
    """One /chat answer: the sources in its context (0: no evidence), the best one's score, its web leg."""
    best = max((c.final_score for c in sources), default=None)
    metrics.observe_results("chat", len(sources), best, reranker)
    observe_web(metrics, web)


def observe_web(metrics: Metrics, web: WebDiagnostics | None) -> None:
    """Each web provider call's latency (stage "web"), and its failure (error, or cut at the deadline)."""
    if web is None:
        return
    for provider in web.providers:
        if provider.latency_ms is not None:
            metrics.observe_stage("web", provider.latency_ms / 1000)
        if provider.status in _WEB_FAILURES:
            metrics.provider_error("web", provider.provider)
