"""The search report: what each stage of one search did (SearchDiagnostics, in /search and /chat), and
its one log line."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from backend.db.repositories.retrieval import Prefetched
from backend.rerank import Reranker
from backend.retrieval.params import HybridParams, Mode
from backend.search.cut import CutRules
from backend.search.diagnostics import (
    ConfidenceStage,
    PrefetchStage,
    RerankerOut,
    SearchDiagnostics,
    SearchParameters,
    SearchScope,
    SearchStages,
    StageOut,
)
from backend.search.policies import SearchPolicies
from backend.search.result_scores import score_diagnostics
from backend.search.types import ScoredChunk, SearchResult

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchPlan:
    """What one search was asked to do, once the request met the settings."""

    query: str
    terms: list[str]
    mode: Mode
    filters: dict[str, Any]
    params: HybridParams  # for this mode
    prefetch_k: int
    top_k_max: int
    dynamic: bool
    min_score: float | None
    similarity: str  # what the policy's similarity feature read (similarity_source)
    reranker: Reranker  # the request's, else RERANK_DEFAULT
    collections: list[uuid.UUID] | None = None  # the team collections searched; None: all the caller reads


@dataclass(frozen=True)
class StageResults:
    """What the stages gave, with each stage's wall time (ms)."""

    prefetched: Prefetched
    candidates: list[ScoredChunk]
    results: list[ScoredChunk]
    below_min_score: int
    confidence: dict[str, Any]
    reranker: RerankerOut
    embedding_model: str | None  # None: no query embedding (full-text mode)
    timings: dict[str, float]


def search_report(
    plan: SearchPlan, out: StageResults, *, rules: CutRules, policies: SearchPolicies
) -> SearchDiagnostics:
    """The diagnostics of one search, from its plan and what its stages gave."""
    rows, timings, params = out.prefetched.rows, out.timings, plan.params
    diagnostics = SearchDiagnostics(
        query=plan.query,
        query_terms=plan.terms,
        query_term_idfs={term: idf for term, (_df, idf) in out.prefetched.term_stats.items()},
        mode=plan.mode,
        scope=SearchScope.of(plan.collections),
        embedding_model=out.embedding_model,
        parameters=SearchParameters(
            prefetch_k=plan.prefetch_k,
            top_k_min=min(rules.top_k_min, plan.top_k_max),
            top_k_max=plan.top_k_max,
            dynamic=plan.dynamic,
            drop_ratio=rules.ratio_for(out.candidates),
            per_doc_cap=rules.per_doc_cap,
            min_similarity=params.min_similarity if plan.mode == "vector" else None,
            rrf_k=params.rrf_k,
            full_text_weight=params.full_text_weight,
            semantic_weight=params.semantic_weight if plan.mode != "fulltext" else 0.0,
            candidate_count=params.candidate_count,
            ef_search=params.ef_search,
            filtered_ef_search=params.filtered_ef_search,
            exact_scan_threshold=params.exact_scan_threshold,
            rerank_policy=policies.rerank.name,
            rerank_weights=policies.rerank.weights,
            rerank_similarity=plan.similarity,
            filters=plan.filters,
        ),
        stages=SearchStages(
            prefetch=PrefetchStage(
                count=len(rows),
                ms=timings["prefetch_ms"],
                embed_ms=timings["embed_ms"],
                plan=(None if not rows else "index" if rows[0].get("scope_count") is None else "exact"),
                scope_count=rows[0].get("scope_count") if rows else None,
            ),
            rerank=StageOut(count=len(out.candidates), ms=timings["rerank_ms"]),
            top_k=StageOut(count=len(out.results), ms=timings["cut_ms"]),
            confidence=ConfidenceStage(
                parents=out.confidence["parents_considered"], ms=timings["confidence_ms"]
            ),
        ),
        confidence=out.confidence,
        total_ms=round(sum(timings.values()), 3),
        reranker=out.reranker,
    )
    diagnostics.matched_count = len(rows)
    diagnostics.scores = score_diagnostics(out.candidates, plan.min_score, out.below_min_score)
    if not out.results:
        diagnostics.empty_reason = (
            "min_score" if out.below_min_score else "filter" if plan.filters else "no_candidates"
        )
    return diagnostics


def log_search_done(result: SearchResult) -> None:
    """One INFO line per /search request: what ran and how long, never document text."""
    d = result.diagnostics
    logger.info(
        "[search] retrieval done | mode=%s | top_k=%d | prefetch=%d | chunks=%d | dynamic=%s | "
        "filters=%s | confidence=%s | %.0fms",
        result.mode,
        d.parameters.top_k_max,
        d.stages.prefetch.count,
        len(result.results),
        d.parameters.dynamic,
        "yes" if d.parameters.filters else "no",
        result.confidence.get("confidence_level"),
        d.total_ms,
    )
