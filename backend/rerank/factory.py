"""The one place that picks the rerankers from settings."""

from __future__ import annotations

from backend.config import Settings
from backend.rerank.base import HeuristicReranker, Reranker
from backend.rerank.http import HttpReranker


def create_rerankers(settings: Settings) -> dict[str, Reranker]:
    """The rerankers a request may name: the heuristic one always, RERANK_PROVIDER's model if set."""
    rerankers: dict[str, Reranker] = {"heuristic": HeuristicReranker()}
    if settings.rerank_provider:
        rerankers[settings.rerank_provider] = HttpReranker(settings, settings.rerank_provider)
    return rerankers
