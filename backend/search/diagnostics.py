"""What each stage of a search and its web leg did, as typed data: returned by the services, shown in
/docs.

Field descriptions are the documentation a web-app developer reads in the OpenAPI page, so each one
says what the number means, not how it is computed internally.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.retrieval.scoring import INDEX_METRIC, SCORE_MEANING
from backend.where.diagnostics import WhereDiagnostics


class _Diag(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScoreDiagnostics(_Diag):
    """The results' `score` (docs/scores.md) and what min_score did."""

    meaning: str = Field(default=SCORE_MEANING, description="what a result's score is")
    metric: str = Field(
        default=INDEX_METRIC, description="what the index returns, mapped by score_from_distance"
    )
    min_score: float | None = Field(default=None, description="the request's min_score")
    below_min_score: int = Field(default=0, description="ranked chunks min_score removed")
    unscored: int = Field(
        default=0, description="chunks without a score (no embedding of theirs in the query's model)"
    )
    best_score: float | None = Field(default=None, description="the highest score among the candidates")


class SearchParameters(_Diag):
    """The effective parameters of one search (request values merged with settings)."""

    prefetch_k: int = Field(description="candidates asked of the SQL function (match_count)")
    top_k_min: int = Field(description="the dynamic cut keeps at least this many results")
    top_k_max: int = Field(description="and at most this many")
    dynamic: bool = Field(description="whether the dynamic top-k cut was applied")
    drop_ratio: float = Field(
        description="the cut keeps results whose final score is at least best x drop_ratio (for a "
        "softmax policy: at least drop_ratio times as likely as the best)"
    )
    per_doc_cap: int = Field(
        description="at most this many chunks of one document among the results while other documents' "
        "candidates remain (0: no limit)"
    )
    min_similarity: float | None = Field(description="cosine floor of vector mode; null in other modes")
    rrf_k: int = Field(description="RRF smoothing constant of hybrid_search")
    full_text_weight: float = Field(description="weight of the full-text leg in the fusion")
    semantic_weight: float = Field(description="weight of the vector leg in the fusion")
    candidate_count: int | None = Field(description="rows each SQL leg fetches; null: 4 x prefetch_k")
    ef_search: int = Field(description="hnsw.ef_search without a filter")
    filtered_ef_search: int = Field(description="hnsw.ef_search with a filter")
    exact_scan_threshold: int = Field(
        default=0,
        description="a scope of at most this many chunks is ranked exactly (RAG_EXACT_SCAN_THRESHOLD)",
    )
    rerank_policy: str = Field(description="the versioned rerank policy (RAG_RERANK_POLICY)")
    rerank_weights: dict[str, float] = Field(
        description="the policy's weight per feature; a result's scores.contributions are weight x value"
    )
    rerank_similarity: str = Field(description="what the policy's 'similarity' feature is in this mode")
    filters: dict[str, Any] = Field(
        description="the filter applied inside each SQL leg, normalised (README: Filters): shorthand spelled "
        "out, list fields as $contains, a date-only value as its UTC day"
    )


class StageOut(_Diag):
    count: int = Field(description="items this stage produced")
    ms: float = Field(description="wall time of the stage in milliseconds")


class PrefetchStage(StageOut):
    embed_ms: float = Field(description="time spent embedding the query (0 in full-text mode)")
    plan: Literal["exact", "index"] | None = Field(
        default=None,
        description="exact: the filter and row-level security admitted at most RAG_EXACT_SCAN_THRESHOLD "
        "chunks, ranked exactly; index: the legs used their indexes (HNSW walk, GIN match); null: no rows",
    )
    scope_count: int | None = Field(
        default=None, description="chunks the scope admitted, when the exact plan ran"
    )


class ConfidenceStage(_Diag):
    parents: int = Field(description="parent documents scored for confidence")
    ms: float


class SearchStages(_Diag):
    prefetch: PrefetchStage = Field(
        description="Stage 1: the SQL function (hybrid_search or match_documents)"
    )
    rerank: StageOut = Field(description="Stage 2: the rerank policy scores every prefetched chunk")
    top_k: StageOut = Field(description="Stage 3: the (dynamic) top-k cut")
    confidence: ConfidenceStage


class ParentConfidenceOut(_Diag):
    """One parent document as the confidence scored it."""

    parent_id: str = Field(description="the document id (a chunk's parent)")
    title: str | None = None
    overall_score: float = Field(description="this document's score; the best one is best_overall_score")
    strength: float = Field(description="how strongly the document's best passages match the meaning")
    coverage: float = Field(description="how much of the question's terms the document covers")
    stability: float = Field(description="how much the retrieval legs and chunks agree on it")
    risk_flags: list[
        Literal["low_coverage", "single_spike", "sparse_evidence", "huge_doc_sparse", "ambiguous_candidate"]
    ] = Field(
        description="low_coverage: similar in meaning but missing the question's terms; single_spike: one "
        "chunk carries it; sparse_evidence / huge_doc_sparse: few of its chunks match; "
        "ambiguous_candidate: the runner-up competes with the best document"
    )
    features: dict[str, float | int | bool | str | list[str] | None] = Field(
        description="the raw features the policy's formula read (names depend on the formula)"
    )


class ConfidenceOut(_Diag):
    """Retrieval confidence (seed overall-score-confidence.md's output contract)."""

    score_policy_version: str = Field(description="the policy that scored, e.g. overall_v3")
    formula: str | None = Field(default=None, description="the policy's formula, e.g. answerability")
    normalization: Literal["per_query", "calibrated"]
    best_parent_id: str | None = Field(description="the best-scoring document; null without candidates")
    best_overall_score: float | None
    confidence_level: Literal["low", "medium", "high"]
    thresholds_used: dict[str, float] = Field(description="T_low, T_high and R_hitl of the policy")
    score_ratio: float | None = Field(
        description="runner-up document score / best score (the runner-up: the next document scored by the "
        "same model as the best, v6 on)"
    )
    need_hitl: bool = Field(description="two relevant documents compete: clarify rather than guess")
    web_fallback: bool = Field(description="the documents likely do not answer the question")
    web_fallback_reason: str | None = Field(
        description="no_results, or <level>_confidence; null when web_fallback is false"
    )
    parents_considered: int = Field(description="parent documents scored")
    candidates_scored: int | None = Field(default=None, description="chunks read to score them")
    score_source: str = Field(description="which chunk score fed the policy (answerability, final_score …)")
    top_parents: list[ParentConfidenceOut]


class RerankerOut(_Diag):
    """Which reranker ordered the results (backend/rerank) and whether it had to fall back."""

    requested: str = Field(description="the request's reranker, else RERANK_DEFAULT")
    used: str = Field(description="the reranker whose order stands: heuristic after a fallback")
    model: str | None = Field(description="the model that scored; null for the heuristic policy")
    top_n: int | None = Field(description="candidates the model was asked to score; null: heuristic")
    scored: int = Field(description="candidates the reranker scored")
    ms: float = Field(description="wall time of the reranker call")
    fallback: bool = Field(description="the model reranker failed: the heuristic order was kept")
    fallback_reason: str | None = Field(
        description="timeout, connection, http_error or bad_response; null without a fallback"
    )
    error: str | None = Field(default=None, description="the failure, as the provider reported it")


class SearchScope(_Diag):
    """Which chunks the search could find: what row-level security lets the caller read, narrowed to
    team collections when the request named some."""

    kind: Literal["everything", "collections"] = Field(
        description="everything: every chunk you may read (public, your own, your collections'); "
        "collections: only the chunks of the collections listed"
    )
    collections: list[uuid.UUID] | None = Field(default=None, description="the collections searched")

    @classmethod
    def of(cls, collections: list[uuid.UUID] | None) -> SearchScope:
        if collections is None:
            return cls(kind="everything")
        return cls(kind="collections", collections=collections)


class SearchDiagnostics(_Diag):
    query: str = Field(description="the query after cleaning (NFKC, whitespace)")
    query_terms: list[str] = Field(description="significant terms after segmentation and stopwords")
    query_term_idfs: dict[str, float] = Field(
        description="each term's idf in this corpus (rarer is higher; empty when nothing was found)"
    )
    mode: Literal["hybrid", "vector", "fulltext"]
    scope: SearchScope = Field(
        default_factory=lambda: SearchScope(kind="everything"), description="which chunks were searched"
    )
    embedding_model: str | None = Field(description="model that embedded the query; null in full-text mode")
    parameters: SearchParameters
    stages: SearchStages
    confidence: ConfidenceOut = Field(description="retrieval confidence over the candidates")
    total_ms: float
    where: WhereDiagnostics | None = Field(
        default=None, description="the effective filter: your filters, what infer_filters read, any relax"
    )
    scores: ScoreDiagnostics = Field(
        default_factory=ScoreDiagnostics, description="what a result's score means; what min_score removed"
    )
    matched_count: int = Field(
        default=0,
        description="candidate chunks the search found inside the applied filter, before rerank, the top-k "
        "cut and min_score (at most prefetch_k); 0: nothing in the filtered scope matched the question",
    )
    empty_reason: Literal["no_candidates", "filter", "min_score"] | None = Field(
        default=None,
        description="why there are no results (null when there are): no_candidates (nothing matched the "
        "question), filter (nothing matched inside the applied filter), min_score (every candidate "
        "scored below min_score)",
    )
    reranker: RerankerOut | None = Field(default=None, description="the reranker that ordered the results")


class WebProviderOut(BaseModel):
    """One provider's part of the web leg (backend/web: status, counts, latency, errors)."""

    model_config = ConfigDict(extra="allow")
    provider: str
    status: str = Field(description="ok, empty, error, timeout (cut at the soft deadline) or cancelled")
    results: int = 0
    latency_ms: float | None = None
    error: str | None = None


class WebDiagnostics(_Diag):
    """The web leg of a turn: why it ran, the soft-wait timing, what the providers gave, what was kept."""

    requested: bool | Literal["auto"] = Field(description="the request's web flag")
    local_timeout: bool = Field(description="local retrieval exceeded its hard timeout")
    web_timeout: bool = Field(description="a provider was cut at the soft deadline")
    soft_wait_ms: int = Field(description="how long the answer waited for the web after local retrieval")
    soft_deadline_ms: int = Field(description="WEB_SOFT_WAIT_MS: the most the web may add")
    providers: list[WebProviderOut]
    hits: int = Field(description="web results before deduplication")
    dedup: dict[str, int] = Field(
        description="kept, and dropped by url, by hash, by near duplicate, against local evidence"
    )
    passages: int = Field(description="web passages that entered the fusion with the local evidence")

    @classmethod
    def from_outcome(
        cls, requested: bool | Literal["auto"], outcome: Any, counts: Any, passages: int
    ) -> WebDiagnostics:
        d = outcome.diagnostics
        return cls(
            requested=requested,
            local_timeout=d.local_timeout,
            web_timeout=d.web_timeout,
            soft_wait_ms=d.soft_wait_ms,
            soft_deadline_ms=d.soft_deadline_ms,
            providers=[WebProviderOut.model_validate(p) for p in d.providers],
            hits=counts.web_in,
            dedup={k: v for k, v in vars(counts).items() if k != "web_in"},
            passages=passages,
        )
