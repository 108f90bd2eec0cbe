"""Evidence for one chat answer: budgets, the main search, a gap supplement when evidence is scarce,
gap-protected fusion, and exactly one truncation to the result limit (seed: evidence-retention.md)."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from backend.config import Settings
from backend.errors import DomainError
from backend.llm import LLM
from backend.retrieval.budget import EvidenceBudget
from backend.services.diagnostics import (
    BudgetOut,
    EvidenceDiagnostics,
    GapDiagnostics,
    PoolFusionOut,
    RelevanceDiagnostics,
    TruncationDiagnostics,
)
from backend.services.gap_queries import generate_gap_queries
from backend.services.pool_fusion import fuse_pools_with_gap_protection
from backend.services.retrieval import RetrievalService, ScoredChunk, SearchRequest, SearchResult

logger = logging.getLogger(__name__)


@dataclass
class Evidence:
    chunks: list[ScoredChunk]  # ranked, relevant, truncated once to at most step_k
    search: SearchResult  # the main search (its confidence decides gap supplement and clarify)
    budget: EvidenceBudget
    diagnostics: EvidenceDiagnostics

    @property
    def confidence(self) -> dict[str, Any]:
        return self.search.confidence


def budget_from(settings: Settings) -> EvidenceBudget:
    """local_top_k defaults to RAG_TOP_K_MAX; step and write budgets default down the chain."""
    return EvidenceBudget.compute(
        settings.local_top_k or settings.rag_top_k_max, settings.step_top_k, settings.write_top_k
    )


def is_relevant(chunk: ScoredChunk, settings: Settings) -> bool:
    """Evidence worth showing the model: shares a share of the query's terms, or is very close."""
    return chunk.keyword_coverage >= settings.chat_min_keyword_coverage or (
        chunk.similarity is not None and chunk.similarity >= settings.chat_min_similarity
    )


def scarce(relevant: list[ScoredChunk], confidence: dict[str, Any], terms: list[str]) -> str | None:
    """Why the evidence counts as scarce (the gap supplement's trigger), or None: low confidence,
    fewer than two relevant chunks, or question terms that no relevant chunk contains."""
    if confidence.get("confidence_level") == "low":
        return "confidence low"
    if len(relevant) < 2:
        return f"{len(relevant)} relevant chunk(s)"
    missing = missing_terms(terms, relevant)
    if missing:
        return f"terms not in the evidence: {', '.join(missing)}"
    return None


def missing_terms(terms: list[str], chunks: list[ScoredChunk]) -> list[str]:
    """The question's significant terms that appear in none of the chunks (title, headings, text)."""
    tokens: set[str] = set()
    for chunk in chunks:
        tokens.update(chunk.content_tokens.split())
    return [t for t in terms if t not in tokens]


def by_final_score(items: list[ScoredChunk]) -> list[ScoredChunk]:
    """The global rerank of the fusion: the heuristic final score (stable on ties)."""
    return sorted(items, key=lambda c: -c.final_score)


def gather_evidence(question: str, retrieval: RetrievalService, llm: LLM, settings: Settings) -> Evidence:
    """Main search with the seed's recall budgets, gap supplement if scarce, one truncation."""
    s = settings
    budget = budget_from(s)
    search = retrieval.search(
        SearchRequest(
            query=question, top_k=budget.local_recall_k, prefetch_k=budget.actual_recall, dynamic=False
        )
    )
    main = search.results  # local_recall_k chunks after the local rerank, not yet truncated
    relevant_main = [c for c in main if is_relevant(c, s)]
    terms = search.diagnostics.query_terms
    reason = (
        scarce(relevant_main[: budget.write_k], search.confidence, terms)
        if s.chat_gap_supplement_enabled
        else None
    )

    if reason:
        chunks, gap, truncation = _with_gap_supplement(question, main, budget, retrieval, llm, s, reason)
    else:
        top_k_min = min(s.rag_top_k_min, budget.step_k)
        keep = retrieval.dynamic_cut(main, top_k_min=top_k_min, top_k_max=budget.step_k)
        chunks = main[:keep]
        gap = GapDiagnostics(triggered=False, reason=None)
        truncation = TruncationDiagnostics(by="dynamic_top_k", kept=keep, of=len(main))
    relevant = [c for c in chunks if is_relevant(c, s)]
    diagnostics = EvidenceDiagnostics(
        budget=BudgetOut(**asdict(budget)),
        gap=gap,
        truncation=truncation,
        relevance=RelevanceDiagnostics(kept=len(relevant), dropped=len(chunks) - len(relevant)),
    )
    return Evidence(relevant, search, budget, diagnostics)


def _with_gap_supplement(
    question: str,
    main: list[ScoredChunk],
    budget: EvidenceBudget,
    retrieval: RetrievalService,
    llm: LLM,
    s: Settings,
    reason: str,
) -> tuple[list[ScoredChunk], GapDiagnostics, TruncationDiagnostics]:
    gap_queries = generate_gap_queries(question, main[: budget.write_k], llm, s.chat_gap_max_queries)
    gap_top_k = max(5, budget.step_k // 2)
    gap_pool: list[ScoredChunk] = []
    failed: list[str] = []
    for query in gap_queries.queries:
        try:
            gap_pool.extend(
                retrieval.search(SearchRequest(query=query, top_k=gap_top_k, dynamic=False)).results
            )
        except (DomainError, psycopg.Error) as exc:
            logger.warning("[chat] gap supplement search failed for %r: %s", query, exc)
            failed.append(query)
    fusion: dict[str, Any] = {}
    chunks = fuse_pools_with_gap_protection(
        main,
        gap_pool,
        top_k=budget.step_k,
        gap_ratio=s.chat_gap_ratio,
        rank_pool_multiplier=s.chat_rank_pool_multiplier,
        rerank=by_final_score,
        diag=fusion,
    )
    gap = GapDiagnostics(
        triggered=True,
        reason=reason,
        queries=gap_queries.queries,
        method=gap_queries.method,
        top_k=gap_top_k,
        failed=failed,
        pool_fusion=PoolFusionOut(**fusion["pool_fusion"]),
    )
    truncation = TruncationDiagnostics(by="pool_fusion", kept=len(chunks), of=len(main) + len(gap_pool))
    return chunks, gap, truncation
