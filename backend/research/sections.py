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
from backend.research.evaluate import QueryLedger, Verdict, judge
from backend.research.model import ResearchModel
from backend.research.pool import EvidenceIds, PoolRanker, SectionPool
from backend.research.presets import Preset
from backend.research.types import Emit, PoolSource, SectionPlan
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

    @property
    def anchor(self) -> SearchResult | None:
        """The search the pool is ranked against: the section question's, else the first that ran."""
        return self.searches[0] if self.searches else None

    @property
    def sufficient(self) -> bool:
        return bool(self.verdicts) and self.verdicts[-1].sufficient


async def research_section(ctx: RunContext, section: SectionState) -> None:
    """Search, evaluate, search the gaps; ends sufficient, at MAX_LOOPS, out of queries or of budget."""
    ctx.emit({"type": "section_started", "section": section.index, **section.plan.as_dict()})
    # The section question is searched even if another section asked it too: it anchors the ranking.
    ctx.ledger.claim(section.plan.question)
    queries = [section.plan.question, *(q for q in section.plan.queries[1:] if ctx.ledger.claim(q))]
    await _search_all(ctx, section, queries, round_no=0, pool_source="research_round")
    round_no = 0
    while True:
        if ctx.budget.stopped:
            section.stop_reason = f"budget: {ctx.budget.stop_reason()}"
            break
        verdict = await evaluate(ctx, section, round_no)
        if verdict.sufficient:
            section.stop_reason = "sufficient"
            break
        if verdict.method == "none":
            section.stop_reason = verdict.reason or "no verdict"
            break
        if round_no >= ctx.preset.max_loops:
            section.stop_reason = "max_loops"
            break
        gaps = [q for q in verdict.gap_queries if ctx.ledger.claim(q)]
        if not gaps:
            section.stop_reason = "no new queries"
            break
        round_no += 1
        section.rounds = round_no
        await _search_all(ctx, section, gaps, round_no=round_no, pool_source="eval_supplement")
    finish_section(ctx, section)


def finish_section(ctx: RunContext, section: SectionState, reason: str | None = None) -> None:
    """Mark the section done (once) and report it."""
    if section.done:
        return
    section.done = True
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


async def evaluate(ctx: RunContext, section: SectionState, round_no: int) -> Verdict:
    """Rank the pool against the section question, then judge it; reports evidence and sufficiency."""
    ranked = await rank_pool(ctx, section)
    top = ranked[: ctx.preset.eval_top_k]
    ctx.emit(
        {
            "type": "evidence",
            "section": section.index,
            "round": round_no,
            "pool": len(section.pool),
            "pool_sources": section.pool.counts(),
            "relevant": len(ranked),
            "top": [{"id": i.id, "title": i.chunk.title, "heading": i.chunk.heading} for i in top[:5]],
        }
    )
    if section.anchor is None:
        verdict = Verdict(False, "none", "nothing could be searched", "low", None)
    else:
        # An empty pool was never ranked (no ranker): nothing is evidence.
        ranker = section.ranker
        chunks = [ranker.scored[i.key] for i in ranked] if ranker is not None else []
        verdict = await judge(
            section.plan.question,
            ctx.question,
            chunks,
            section.searches,
            model=ctx.model,
            ledger=ctx.ledger,
            preset=ctx.preset,
            settings=ctx.settings,
        )
    section.verdicts.append(verdict)
    ctx.emit({"type": "sufficiency", "section": section.index, "round": round_no, **verdict.as_event()})
    return verdict


async def rank_pool(ctx: RunContext, section: SectionState) -> list[Any]:
    """The pool's relevant items, best first against the section question (empty without a search)."""
    anchor = section.anchor
    if anchor is None or not section.pool.items:
        return []
    if section.ranker is None or section.ranker.anchor is not anchor:
        section.ranker = PoolRanker(ctx.retrieval, ctx.embedder, ctx.settings, ctx.identity, anchor)
    ranker = section.ranker
    return await asyncio.to_thread(ranker.rank, list(section.pool.items.values()))


async def _search_all(
    ctx: RunContext, section: SectionState, queries: list[str], *, round_no: int, pool_source: PoolSource
) -> None:
    results = await asyncio.gather(
        *(search(ctx, section, q, round_no=round_no, pool_source=pool_source) for q in queries)
    )
    # In query order: the section question's own search anchors the ranking, whichever finished first.
    section.searches.extend(r for r in results if r is not None)


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
                # Past WEB_LOCAL_TIMEOUT_S the web's hits stand alone, as in /chat (no documents read).
                unsearched=lambda: ctx.retrieval.unsearched(request, identity=ctx.identity),
            )
            passages = await asyncio.to_thread(
                web_passages, beyond.hits, ctx.embedder, beyond.search.embedding, ctx.settings
            )
        except (DomainError, psycopg.Error, TimeoutError) as exc:
            failure: Exception | None = exc
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
    return "database"


def round_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
