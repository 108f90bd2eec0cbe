"""Evidence for one chat answer, gathered by one entry, `gather`, whose stages run in order: the main
search (the web beside it when asked) -> a second chance when it is weak (reformulated searches,
backend/chat/second_chance.py) -> the route the better confidence decides -> the web when the route
calls for it -> the relevance gate -> the gap supplement when the evidence is scarce -> one fusion ->
exactly one truncation (seed: evidence-retention.md). The turn's budget is computed once, by the caller,
and passed down.

Design constraint 1 of the seed: truncation happens once. The relevance gate is part of the ranking
(a candidate below it is not evidence at all), so it runs before the one truncation - the dynamic
cut, or gap-protected fusion - and nothing is removed after it: a quota-protected gap chunk survives.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg

from backend.auth.identity import Identity
from backend.budget import EvidenceBudget, budget_problem
from backend.chat.diagnostics import (
    BudgetOut,
    EvidenceDiagnostics,
    EvidenceOptionsOut,
    GapDiagnostics,
    PoolFusionOut,
    RelevanceDiagnostics,
    SecondChanceDiagnostics,
    TruncationDiagnostics,
)
from backend.chat.fusion import fuse_pools_with_gap_protection
from backend.chat.gap import generate_gap_queries, scarce
from backend.chat.second_chance import second_chance
from backend.confidence.routing import Route
from backend.config import MAX_MATCH_COUNT, Settings
from backend.errors import DomainError, InvalidInput
from backend.llm import LLM
from backend.retrieval.params import Mode
from backend.search.diagnostics import WebDiagnostics
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchRequest, SearchResult
from backend.search.web import Beyond, WebChoice, search_beyond, web_after, web_passages
from backend.web import WebSearch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvidenceOptions:
    """Per-request retrieval options of a chat turn (seed 000 passes budgets per request).

    None means the setting: top_k -> LOCAL_TOP_K (else RAG_TOP_K_MAX), step_top_k -> STEP_TOP_K,
    write_top_k -> WRITE_TOP_K, mode -> hybrid, filters -> none.
    """

    mode: Mode | None = None
    filters: dict[str, Any] | None = None
    infer_filters: bool = False  # the main search reads filters in the question (WhereBuilder)
    relax: bool | None = None
    min_score: float | None = None  # every search of the turn drops results scoring below it
    top_k: int | None = None
    step_top_k: int | None = None
    write_top_k: int | None = None
    reranker: str | None = None  # None: RERANK_DEFAULT
    collections: list[uuid.UUID] | None = None  # every search of the turn narrowed to them; None: all

    def budget(self, settings: Settings) -> EvidenceBudget:
        """The budget these options give, or a 422 naming the option that breaks a limit."""
        local = self.top_k or settings.local_top_k or settings.rag_top_k_max
        step = self.step_top_k or settings.step_top_k
        write = self.write_top_k or settings.write_top_k
        problem = budget_problem(
            local, step, write, max_top_k=settings.search_max_top_k, max_match_count=MAX_MATCH_COUNT
        )
        if problem:
            raise InvalidInput(problem)
        return EvidenceBudget.compute(local, step, write)


@dataclass
class Evidence:
    chunks: list[ScoredChunk]  # ranked against the question, relevant, truncated once to at most step_k
    search: SearchResult  # the main search (its confidence decides gap supplement and clarify)
    budget: EvidenceBudget
    diagnostics: EvidenceDiagnostics
    options: EvidenceOptions = field(default_factory=EvidenceOptions)
    web: WebDiagnostics | None = None  # the web leg, when one ran

    @property
    def confidence(self) -> dict[str, Any]:
        return self.search.confidence

    @property
    def route(self) -> Route:
        return self.diagnostics.route


@dataclass(frozen=True)
class EvidenceSources:
    """What evidence is gathered from: the documents (as the caller), the model, the web."""

    retrieval: RetrievalService
    llm: LLM
    web: WebSearch
    settings: Settings


async def gather(
    question: str,
    options: EvidenceOptions,
    budget: EvidenceBudget,
    choice: WebChoice,
    *,
    sources: EvidenceSources,
    identity: Identity,
) -> Evidence:
    """The turn's evidence, every search as `identity`: the main search (and its second chance when it
    is weak) and the route the better confidence decides, with the web beside it (choice True) or after
    it (auto, when the route is web_fallback); then the relevance gate, the gap supplement, one fusion
    and one truncation (select)."""
    s = sources.settings
    chance: list[SecondChanceDiagnostics] = []  # filled by the local leg (in its thread)

    def local() -> SearchResult:
        started = time.perf_counter()
        first = main_search(question, sources.retrieval, budget, options, identity=identity)
        best, diagnostics = second_chance(
            first,
            question,
            infer_filters=options.infer_filters,
            first_ms=round((time.perf_counter() - started) * 1000, 3),
            search=lambda query, infer: main_search(
                query,
                sources.retrieval,
                budget,
                dataclasses.replace(options, infer_filters=infer),
                identity=identity,
            ),
            llm=sources.llm,
            settings=s,
        )
        chance.append(diagnostics)
        return best

    beyond = await search_beyond(
        local,
        question,
        sources.web,
        s,
        choice,
        caller=identity.cache_scope,
        unsearched=lambda: sources.retrieval.unsearched(
            SearchRequest(query=question, dynamic=False, mode=options.mode, reranker=options.reranker),
            identity=identity,
        ),
    )
    return await _selected(
        question, beyond, options, budget, sources, identity, chance[0] if chance else None
    )


async def gather_web_instead(
    question: str, declined: Evidence, *, sources: EvidenceSources, identity: Identity
) -> Evidence | None:
    """The web's evidence for a turn whose documents' evidence the model read and declined (web auto):
    the same search, route web_fallback, the web's passages only; None when no provider is configured
    or the web found nothing to add."""
    beyond = await web_after(
        declined.search, question, sources.web, sources.settings, caller=identity.cache_scope
    )
    if beyond is None or not beyond.hits:
        return None
    return await _selected(
        question,
        beyond,
        declined.options,
        declined.budget,
        sources,
        identity,
        declined.diagnostics.second_chance,
    )


async def _selected(
    question: str,
    beyond: Beyond,
    options: EvidenceOptions,
    budget: EvidenceBudget,
    sources: EvidenceSources,
    identity: Identity,
    second: SecondChanceDiagnostics | None,
) -> Evidence:
    """A search and the web's hits made evidence: the hits embedded as passages, then `select`."""
    passages = await asyncio.to_thread(
        web_passages, beyond.hits, sources.retrieval.embedder, beyond.search.embedding, sources.settings
    )
    if beyond.web is not None:
        beyond.web.passages = len(passages)
    evidence = await asyncio.to_thread(
        select,
        question,
        beyond.search,
        beyond.route,
        passages,
        options,
        budget,
        sources=sources,
        identity=identity,
        second=second,
    )
    evidence.web = beyond.web
    return evidence


def main_search(
    question: str,
    retrieval: RetrievalService,
    budget: EvidenceBudget,
    options: EvidenceOptions,
    *,
    identity: Identity,
) -> SearchResult:
    """The turn's one main search, with the seed's recall budgets (its confidence decides the route)."""
    return retrieval.search(
        SearchRequest(
            query=question,
            top_k=budget.local_recall_k,
            prefetch_k=budget.actual_recall,
            dynamic=False,
            mode=options.mode,
            filters=options.filters,
            infer_filters=options.infer_filters,
            relax=options.relax,
            min_score=options.min_score,
            reranker=options.reranker,
            collections=options.collections,
        ),
        identity=identity,
    )


def is_relevant(chunk: ScoredChunk, settings: Settings) -> bool:
    """Evidence worth showing the model: shares a share of the query's terms, or is very close."""
    return chunk.keyword_coverage >= settings.chat_min_keyword_coverage or (
        chunk.similarity is not None and chunk.similarity >= settings.chat_min_similarity
    )


CROSS_LINGUAL_TIE = 0.02  # a cross-lingual document's chunks this close to its best cosine are evidence


def relevance_gate(search: SearchResult, settings: Settings) -> Callable[[ScoredChunk], bool]:
    """The turn's relevance gate: `is_relevant`, or - in a document of another language than the
    question, which the confidence scores as holding the answer (overall score >= T_low) - the chunk
    that scored it (and its near ties). Across languages no term is shared and the cosines sit below
    CHAT_MIN_SIMILARITY, so without this the route said "answer" and the gate then dropped the very
    evidence it stood on (issue 26 item 1: the turn replied "not found")."""
    answering = _answering_cross_lingual(search.confidence)

    def relevant(chunk: ScoredChunk) -> bool:
        if is_relevant(chunk, settings):
            return True
        best = answering.get(str(chunk.document_id))
        return (
            best is not None and chunk.similarity is not None and chunk.similarity >= best - CROSS_LINGUAL_TIE
        )

    return relevant


def _answering_cross_lingual(confidence: dict[str, Any]) -> dict[str, float]:
    """Cross-lingual documents scored at or above T_low -> their best chunk's cosine."""
    low = (confidence.get("thresholds_used") or {}).get("T_low")
    if low is None:
        return {}
    out = {}
    for parent in confidence.get("top_parents") or []:
        features = parent.get("features") or {}
        score, cosine = parent.get("overall_score"), features.get("cosine")
        if features.get("cross_lingual") and score is not None and score >= low and cosine is not None:
            out[str(parent["parent_id"])] = float(cosine)
    return out


def select(
    question: str,
    search: SearchResult,
    route: Route,
    web: Sequence[ScoredChunk],
    options: EvidenceOptions,
    budget: EvidenceBudget,
    *,
    sources: EvidenceSources,
    identity: Identity,
    second: SecondChanceDiagnostics | None = None,
) -> Evidence:
    """The evidence of a main search and web passages, truncated once (blocking: run it in a thread).

    route "web_fallback" / "not_in_documents": the documents do not answer the question, so no local
    chunk is evidence (a question the documents cannot answer is never answered from them): only the
    web passages, if any.
    """
    started = time.perf_counter()
    s, retrieval = sources.settings, sources.retrieval
    beyond = route in ("web_fallback", "not_in_documents")
    main = [] if beyond else search.results  # local_recall_k chunks, not yet truncated
    gate = relevance_gate(search, s)
    relevant_main = [c for c in main if gate(c)]
    reason = None
    if s.chat_gap_supplement_enabled and not beyond:
        terms = search.diagnostics.query_terms
        written = relevant_main[: budget.write_k]  # what the answer would be written from
        reason = scarce(written, search.confidence, terms, search.term_stats, s.chat_gap_missing_idf_share)

    if reason or web:
        chunks, gap, truncation = _fused(
            question, search, main, options, budget, sources, reason, identity, web
        )
        considered = gap.pool_fusion.total_reranked if gap.pool_fusion else len(chunks)
        relevance = RelevanceDiagnostics(kept=len(chunks), dropped=considered - len(chunks))
    else:
        top_k_min = min(s.rag_top_k_min, budget.step_k)
        keep = retrieval.dynamic_cut(relevant_main, top_k_min=top_k_min, top_k_max=budget.step_k)
        chunks = relevant_main[:keep]
        gap = GapDiagnostics(triggered=False, reason=None)
        truncation = TruncationDiagnostics(by="dynamic_top_k", kept=keep, of=len(relevant_main))
        relevance = RelevanceDiagnostics(kept=len(relevant_main), dropped=len(main) - len(relevant_main))
    applied = EvidenceOptionsOut(
        mode=search.mode,
        filters=search.diagnostics.parameters.filters,
        top_k=budget.local_top_k,
        step_top_k=budget.step_k,
        write_top_k=budget.write_k,
    )
    diagnostics = EvidenceDiagnostics(
        options=applied,
        route=route,
        budget=BudgetOut(**asdict(budget)),
        gap=gap,
        truncation=truncation,
        relevance=relevance,
        second_chance=second or SecondChanceDiagnostics(triggered=False),
    )
    evidence = Evidence(chunks, search, budget, diagnostics, options)
    log_retrieval_done(evidence, started)
    return evidence


def _fused(
    question: str,
    search: SearchResult,
    main: list[ScoredChunk],
    options: EvidenceOptions,
    budget: EvidenceBudget,
    sources: EvidenceSources,
    reason: str | None,
    identity: Identity,
    web: Sequence[ScoredChunk],
) -> tuple[list[ScoredChunk], GapDiagnostics, TruncationDiagnostics]:
    """One fusion of the main pool with the protected pool: gap-search chunks (when the evidence is
    scarce) and web passages. Both are what the main search missed, so both get the gap quota."""
    s = sources.settings
    gap_pool: list[ScoredChunk] = []
    failed: list[str] = []
    queries, method, gap_top_k = [], None, None
    if reason:
        generated = generate_gap_queries(
            question, main[: budget.write_k], sources.llm, s.chat_gap_max_queries
        )
        queries, method, gap_top_k = generated.queries, generated.method, max(5, budget.step_k // 2)
        for query in queries:
            # Gap searches keep the main search's effective filter (inferred and relaxed as it was).
            request = SearchRequest(
                query=query,
                top_k=gap_top_k,
                dynamic=False,
                mode=options.mode,
                filters=_applied_where(search, options),
                min_score=options.min_score,
                reranker=options.reranker,
                collections=options.collections,
            )
            try:
                gap_pool.extend(sources.retrieval.search(request, identity=identity).results)
            except (DomainError, psycopg.Error) as exc:
                logger.warning("[chat] gap supplement search failed for %r: %s", query, exc)
                failed.append(query)
    protected = [*gap_pool, *web]
    fusion: dict[str, Any] = {}
    chunks = fuse_pools_with_gap_protection(
        main,
        protected,
        top_k=budget.step_k,
        gap_ratio=s.chat_gap_ratio,
        rank_pool_multiplier=s.chat_rank_pool_multiplier,
        rerank=global_rerank(search, sources.retrieval, s, identity),
        diag=fusion,
    )
    gap = GapDiagnostics(
        triggered=reason is not None,
        reason=reason,
        queries=queries,
        method=method,
        top_k=gap_top_k,
        failed=failed,
        pool_fusion=PoolFusionOut(**fusion["pool_fusion"]),
    )
    truncation = TruncationDiagnostics(by="pool_fusion", kept=len(chunks), of=len(main) + len(protected))
    return chunks, gap, truncation


def _applied_where(search: SearchResult, options: EvidenceOptions) -> dict[str, Any] | None:
    where = search.diagnostics.where
    return (where.applied_where or None) if where is not None else options.filters


def global_rerank(
    search: SearchResult, retrieval: RetrievalService, settings: Settings, identity: Identity
) -> Callable[[list[ScoredChunk]], list[ScoredChunk]]:
    """Seed §四 Step 2: main and gap candidates scored together against the question (not against the
    gap query that found them), best first; candidates below the relevance gate are left out."""
    gate = relevance_gate(search, settings)

    def rerank(items: list[ScoredChunk]) -> list[ScoredChunk]:
        rescored = retrieval.rescore(search, items, identity=identity)
        ranked = sorted(rescored, key=lambda c: -c.final_score)  # stable: main before gap on ties
        return [c for c in ranked if gate(c)]

    return rerank


def log_retrieval_done(evidence: Evidence, started: float) -> None:
    """Seed 000's retrieval-done line: one INFO line per chat retrieval, no document text."""
    d, b = evidence.diagnostics, evidence.budget
    fusion = d.gap.pool_fusion
    logger.info(
        "[chat] retrieval done | mode=%s | top_k=%d | step_top_k=%d | write_top_k=%d | chunks=%d | "
        "sources=%s | route=%s | second_chance=%s | gap=%s | fusion(main=%s,gap=%s,out=%s) | truncation=%s | "
        "confidence=%s | %.0fms",
        evidence.search.mode,
        b.local_top_k,
        b.step_k,
        b.write_k,
        len(evidence.chunks),
        ",".join(sorted({c.kind for c in evidence.chunks})) or "none",
        d.route,
        d.second_chance.chosen if d.second_chance.triggered else "no",
        "yes" if d.gap.triggered else "no",
        fusion.main_in if fusion else len(evidence.search.results),
        fusion.gap_in if fusion else 0,
        len(evidence.chunks),
        d.truncation.by,
        evidence.confidence.get("confidence_level"),
        (time.perf_counter() - started) * 1000,
    )
