"""The reranker seam: what orders a query's candidates after the rerank policy has scored them.

Stage 2 always computes the policy's features and score (the confidence, the chat relevance gate and
the fallback order read them). A Reranker then decides the final order: the heuristic one keeps the
policy's order and score; a model reranker (a cross-encoder behind an HTTP API) scores the policy's
best `top_n` candidates against the query itself. A model reranker that fails raises RerankError and
the caller keeps the heuristic order, saying so in the diagnostics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

RerankFailure = Literal["timeout", "connection", "http_error", "bad_response"]


@dataclass(frozen=True)
class RerankDocument:
    """One candidate as a reranker sees it: the text to judge, and the policy's score of it."""

    text: str
    policy_score: float


@dataclass(frozen=True)
class Ranked:
    """A candidate's place after reranking: its index in the input, and the reranker's score."""

    index: int
    score: float


class RerankError(Exception):
    """A model reranker failed (the heuristic order stands); `reason` is a metrics label."""

    def __init__(self, message: str, *, reason: RerankFailure) -> None:
        super().__init__(message)
        self.reason = reason


class Reranker(Protocol):
    """Orders candidates by relevance to a query, best first."""

    name: str  # what a request names: "heuristic", "jina", "cohere"
    model: str | None  # the model that scores (None: the rerank policy)
    scale: Literal["policy", "model"]  # what its scores mean (the dynamic cut reads them)

    def rerank(self, query: str, documents: Sequence[RerankDocument], *, top_n: int) -> list[Ranked]:
        """The documents, best first, each with its score; at most top_n of them are model-scored and
        only those are returned by a model reranker. Raises RerankError on failure."""
        ...


class HeuristicReranker:
    """The default: the rerank policy's own order and score (RAG_RERANK_POLICY), no external call."""

    name = "heuristic"
    model: str | None = None
    scale: Literal["policy", "model"] = "policy"

    def rerank(self, query: str, documents: Sequence[RerankDocument], *, top_n: int) -> list[Ranked]:
        order = sorted(range(len(documents)), key=lambda i: -documents[i].policy_score)  # stable on ties
        return [Ranked(i, documents[i].policy_score) for i in order]
