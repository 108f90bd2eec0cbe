"""Research one section: its first round of searches, then evaluate -> gap searches, at most MAX_LOOPS
times, every step reported as an event. Sections run concurrently on one event loop; their searches
run in worker threads, at most RESEARCH_PARALLEL_SEARCHES at a time per run."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg

from backend.auth.identity import Identity
from backend.budget import EvidenceBudget
from backend.config import Settings
from backend.embeddings import Embedder
from backend.errors import DomainError
from backend.research.budget import Phase, RunBudget
from backend.research.evaluate import QueryLedger, Verdict
from backend.research.model import ResearchModel
from backend.research.pool import EvidenceIds, PoolRanker, SectionPool
from backend.research.presets import Preset
from backend.research.reflect import Reflection
from backend.research.types import Emit, PoolSource, SectionPlan, SubQuestionStatus
from backend.search.service import RetrievalService
from backend.search.types import SearchRequest, SearchResult
from backend.search.web import WebChoice, search_beyond, web_passages
from backend.web import WebSearch

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    """What every branch of one run shares: its services, budget, ledgers and event sink."""

    question: str
    identity: Identity
    settings: Settings
    preset: Preset
    step_k: int
    write_k: int
    filters: dict[str, Any] | None
    retrieval: RetrievalService
    embedder: Embedder
    model: ResearchModel
    budget: RunBudget
    emit: Emit
    web: WebSearch
    web_choice: WebChoice = "auto"
    collections: list[uuid.UUID] | None = None  # every search narrowed to these team collections
    asked: str = ""  # the question as the user wrote it (the report's heading); "": `question`
    ledger: QueryLedger = field(default_factory=QueryLedger)
    ids: EvidenceIds = field(default_factory=EvidenceIds)
    search_slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(2))
    failures: list[Exception] = field(default_factory=list)  # searches that raised (the run goes on)
    succeeded: int = 0  # searches that returned
    checked_entities: set[str] = field(default_factory=set)  # encyclopedia checks run (once per entity)


@dataclass
class SectionState:
    index: int
    plan: SectionPlan
    pool: SectionPool
    searches: list[SearchResult] = field(default_factory=list)  # the section question's first
    queries: list[dict[str, Any]] = field(default_factory=list)  # each search, for the diagnostics
    verdicts: list[Verdict] = field(default_factory=list)
    rounds: int = 0  # gap rounds run
    stop_reason: str | None = None
    done: bool = False
    ranker: PoolRanker | None = None
    status: SubQuestionStatus = "pending"
    status_reason: str | None = None  # why it was pruned
    relevant: int = 0  # pool items above the relevance gate at the last evaluation
    reflections: list[Reflection] = field(default_factory=list)
    entity_checks: list[dict[str, Any]] = field(default_factory=list)
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {status, query, hits}
    hop: dict[str, Any] | None = None  # a multi-hop step: {after, bridge, entity, method, question}

    @property
    def anchor(self) -> SearchResult | None:
        """The search the pool is ranked against: the section question's, else the first that ran."""
        return self.searches[0] if self.searches else None

    @property
    def sufficient(self) -> bool:
        return bool(self.verdicts) and self.verdicts[-1].sufficient

    @property
    def reflection(self) -> Reflection | None:
        return self.reflections[-1] if self.reflections else None


def finish_section(ctx: RunContext, section: SectionState, reason: str | None = None) -> None:
    """Mark the section done (once) and report it."""
    if section.done:
        return
    section.done = True
    section.status = "done" if section.status == "pending" else section.status
    section.stop_reason = section.stop_reason or reason
    ctx.emit(
        {
            "type": "section_done",
            "section": section.index,
            "title": section.plan.title,
            "rounds": section.rounds,
            "pool": len(section.pool),
            "pool_sources": section.pool.counts(),
            "sufficient": section.sufficient,
            "stop_reason": section.stop_reason,
        }
    )


async def rank_pool(ctx: RunContext, section: SectionState) -> list[Any]:
    """The pool's relevant items, best first against the section question (empty without a search)."""
    anchor = section.anchor
    if anchor is None or not section.pool.items:
        return []
    if section.ranker is None or section.ranker.anchor is not anchor:
        section.ranker = PoolRanker(ctx.retrieval, ctx.embedder, ctx.settings, ctx.identity, anchor)
    ranker = section.ranker
    return await asyncio.to_thread(ranker.rank, list(section.pool.items.values()))


async def search(
    ctx: RunContext,
    section: SectionState,
    query: str,
    *,
    round_no: int,
    pool_source: PoolSource,
    phase: Phase = "research",
) -> SearchResult | None:
    """One local search (and the web leg, when enabled) into the section's pool; None when the budget
    refused it or it failed (a failure is recorded and reported; the run goes on)."""
    if not ctx.budget.take_search(phase):
        return None
    started = time.perf_counter()
    # Reserved now, filled when the search returns: the diagnostics list searches in the order they
    # were asked, not in the order concurrent searches happened to finish.
    record: dict[str, Any] = {}
    section.queries.append(record)
    request = SearchRequest(
        query=query,
        top_k=ctx.step_k,
        prefetch_k=EvidenceBudget.compute(ctx.step_k).actual_recall,
        dynamic=False,
        filters=ctx.filters,
        collections=ctx.collections,
    )
    async with ctx.search_slots:
        # The web leg as /chat runs it: beside the search (web=true), or only when the confidence says
        # the documents do not answer this query (auto); deduplicated against the local candidates.
        try:
            beyond = await search_beyond(
                lambda: ctx.retrieval.search(request, identity=ctx.identity),
                query,
                ctx.web,
                ctx.settings,
                ctx.web_choice,
                mode="research",
                caller=ctx.identity.cache_scope,
                engine=section.plan.engine,
                # Past WEB_LOCAL_TIMEOUT_S the web's hits stand alone, as in /chat (no documents read).
                unsearched=lambda: ctx.retrieval.unsearched(request, identity=ctx.identity),
            )
            passages = await asyncio.to_thread(
                web_passages, beyond.hits, ctx.embedder, beyond.search.embedding, ctx.settings
            )
        except (DomainError, psycopg.Error, TimeoutError) as exc:
            failure: Exception | None = exc
        except Exception as exc:  # a defect in one search (an engine's parser, say) costs that search only
            log.exception("research search raised unexpectedly for %r", query)
            failure = exc
        else:
            failure = None
    event: dict[str, Any] = {"type": "search", "section": section.index, "round": round_no, "query": query}
    event["pool_source"] = pool_source
    if failure is not None:
        log.warning("research search failed for %r: %s", query, failure)
        ctx.failures.append(failure)
        result, chunks = None, []
        event["error"] = _describe(failure)
        event["web_results"] = 0
    else:
        ctx.succeeded += 1
        result, chunks = beyond.search, [*beyond.search.results, *passages]
        event["confidence_level"] = result.confidence.get("confidence_level")
        event["best_overall_score"] = result.confidence.get("best_overall_score")
        event["route"] = beyond.route
        event["web_results"] = len(passages)
        if beyond.web is not None:  # which engine the query went to, and why
            event["engines"] = [p.provider for p in beyond.web.providers]
            event["engine_reason"] = next((p.route for p in beyond.web.providers if p.route), None)
    new = section.pool.add(chunks, pool_source=pool_source, round_no=round_no, query=query)
    event.update(results=len(chunks) - event["web_results"], new=new)
    event["ms"] = round_ms(started)
    record.update({k: v for k, v in event.items() if k not in ("type", "section")})
    ctx.emit(event)
    return result


def _describe(exc: Exception) -> str:
    if isinstance(exc, DomainError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "the local search took longer than WEB_LOCAL_TIMEOUT_S"
    if isinstance(exc, psycopg.Error):
        return "database"
    return f"unexpected error ({type(exc).__name__}; in the server log)"


def round_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
