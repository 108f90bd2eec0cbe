"""What a search takes and gives: the request, each scored chunk (with why it ranks where it does), the
result (backend.search.service runs the pipeline)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from backend.retrieval.params import Mode
from backend.search.diagnostics import SearchDiagnostics


@dataclass
class SearchRequest:
    query: str
    top_k: int | None = None
    mode: Mode | None = None
    dynamic: bool = True
    filters: dict[str, Any] | None = None
    prefetch_k: int | None = None  # candidates asked of the database; None: max(rag_prefetch_k, top_k)
    infer_filters: bool = False  # the WhereBuilder adds filters read in the query (backend.where.builder)
    relax: bool | None = None  # search again without inferred filters when they find nothing; None: setting
    min_score: float | None = None  # results with a lower score are dropped (backend.retrieval.scoring)
    reranker: str | None = None  # "heuristic" or the configured model reranker; None: RERANK_DEFAULT
    # Narrow the search to these team collections (migration 024); None: everything the caller may read.
    collections: list[uuid.UUID] | None = None


@dataclass
class ScoredChunk:
    chunk_id: int
    document_id: uuid.UUID
    external_id: str
    title: str
    heading_path: list[str]
    position: int
    content: str
    content_hash: str
    metadata: dict[str, Any]
    content_tokens: str  # jieba tokens of title > headings + text, as indexed
    vector_rank: int | None
    full_text_rank: int | None
    rrf_score: float | None
    similarity: float | None  # cosine to the query (None in full-text mode)
    full_text_score: float | None = None  # the BM25-style score of the full-text leg (None: no term)
    keyword_coverage: float = 0.0
    # The rerank policy's features of this chunk and what each added to rerank_score (weight x value).
    contributions: dict[str, float] = field(default_factory=dict)
    rerank_score: float = 0.0  # the policy's weighted sum (a logit for softmax policies)
    final_score: float = 0.0  # what ranks and cuts: rerank_score, or its share among the candidates
    # The seed formula's absolute score (rerank_v1), whatever the policy: the scale the confidence
    # policies were calibrated on (a softmax share says how dominant a chunk is, not how relevant).
    seed_score: float = 0.0
    # A model reranker (backend/rerank) replaces final_score with its relevance score (0 for candidates
    # beyond its top_n); policy_score keeps the policy's final score for the fallback order.
    policy_score: float | None = None
    model_score: float | None = None
    scored_by: str = "heuristic"
    # Web evidence (backend/search/web.py) is scored and fused like a chunk; it has no row
    # in chunks (its chunk_id is negative, unique within one request) and cites its page instead.
    kind: Literal["local", "web"] = "local"
    url: str | None = None
    provider: str | None = None
    fetched_at: datetime | None = None
    # The API's score in [0, 1]: (1 + cosine) / 2, whatever the mode or reranker (backend.retrieval.scoring).
    score: float | None = None

    @property
    def heading(self) -> str:
        """The heading path for display, without a leading H1 that repeats the title."""
        path = self.heading_path[1:] if self.heading_path[:1] == [self.title] else self.heading_path
        return " > ".join(path)

    def why(self) -> dict[str, Any]:
        """The features that put this chunk where it is (stored with citations for audits)."""
        keys = (
            "vector_rank",
            "full_text_rank",
            "rrf_score",
            "similarity",
            "full_text_score",
            "keyword_coverage",
            "rerank_score",
            "final_score",
            "seed_score",
            "score",
            "model_score",
            "scored_by",
        )
        why = {k: _round(getattr(self, k)) for k in keys}
        why["contributions"] = {k: _round(v) for k, v in self.contributions.items()}
        return why


@dataclass
class SearchResult:
    query: str
    mode: Mode
    results: list[ScoredChunk]
    candidates: list[ScoredChunk]  # every prefetched chunk, reranked (results are a prefix)
    diagnostics: SearchDiagnostics
    confidence: dict[str, Any]  # overall-score-confidence.md, section 10
    embedding: np.ndarray | None = None  # the query vector (None in full-text mode)
    term_stats: dict[str, tuple[int, float]] = field(default_factory=dict)  # term -> (df, idf)
    reranker: str = "heuristic"  # the reranker whose order stands (heuristic after a fallback)


def _round(v: Any) -> Any:
    return round(v, 6) if isinstance(v, float) else v
