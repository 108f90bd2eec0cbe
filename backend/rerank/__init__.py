"""Rerankers behind one Protocol: the heuristic policy order (default) and model rerankers over HTTP."""

from backend.rerank.base import HeuristicReranker, Ranked, RerankDocument, Reranker, RerankError
from backend.rerank.factory import create_rerankers
from backend.rerank.http import DIALECTS, HttpReranker

__all__ = [
    "DIALECTS",
    "HeuristicReranker",
    "HttpReranker",
    "Ranked",
    "RerankDocument",
    "RerankError",
    "Reranker",
    "create_rerankers",
]
