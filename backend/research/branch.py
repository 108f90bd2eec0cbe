"""One research branch (seed ResearchBranch: search -> reflect -> encyclopedia check -> evidence):
its first round of searches, then evaluate-and-reflect -> entity check -> gap and candidate searches,
at most MAX_LOOPS times, every step reported as an event. Sections run concurrently on one event loop;
their searches run in worker threads, at most RESEARCH_PARALLEL_SEARCHES at a time per run."""

from __future__ import annotations

import asyncio
from typing import Any

from backend.research.checks import candidate_queries, check_entities, settle_candidates
from backend.research.evaluate import Verdict, judge
from backend.research.reflect import reflect
from backend.research.sections import RunContext, SectionState, finish_section, rank_pool, search
from backend.research.types import PoolSource


async def research_section(ctx: RunContext, section: SectionState) -> None:
    """Search, reflect, check, search the gaps; ends sufficient, at MAX_LOOPS, out of queries or of
    budget."""
    ctx.emit({"type": "section_started", "section": section.index, **section.plan.as_dict()})
    # The section question is searched even if another section asked it too: it anchors the ranking.
    ctx.ledger.claim(section.plan.question)
    queries = [section.plan.question, *(q for q in section.plan.queries[1:] if ctx.ledger.claim(q))]
    await search_all(ctx, section, queries, round_no=0, pool_source="research_round")
    round_no = 0
    while True:
        if ctx.budget.stopped:
            section.stop_reason = f"budget: {ctx.budget.stop_reason()}"
            break
        verdict = await evaluate(ctx, section, round_no)
        await check_entities(ctx, section, round_no)
        if verdict.sufficient:
            section.stop_reason = "sufficient"
            break
        if verdict.method == "none":
            section.stop_reason = verdict.reason or "no verdict"
            break
        if round_no >= ctx.preset.max_loops:
            section.stop_reason = "max_loops"
            break
        candidates = candidate_queries(ctx, section)
        gaps = [q for q in verdict.gap_queries if ctx.ledger.claim(q)]
        if not gaps and not candidates:
            section.stop_reason = "no new queries"
            break
        round_no += 1
        section.rounds = round_no
        searched = await search_all(
            ctx, section, [*gaps, *candidates], round_no=round_no, pool_source="eval_supplement"
        )
        settle_candidates(ctx, section, searched)
    finish_section(ctx, section)


async def search_all(
    ctx: RunContext, section: SectionState, queries: list[str], *, round_no: int, pool_source: PoolSource
) -> set[str]:
    """The queries searched at once; returns those that ran (not refused by the budget, not failed)."""
    results = await asyncio.gather(
        *(search(ctx, section, q, round_no=round_no, pool_source=pool_source) for q in queries)
    )
    # In query order: the section question's own search anchors the ranking, whichever finished first.
    section.searches.extend(r for r in results if r is not None)
    return {q for q, r in zip(queries, results, strict=True) if r is not None}


async def evaluate(ctx: RunContext, section: SectionState, round_no: int) -> Verdict:
    """Rank the pool against the section question, judge it and reflect on it; reports the evidence,
    the verdict and the reflection (with its evidence records)."""
    ranked = await rank_pool(ctx, section)
    section.relevant = len(ranked)
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
    # What reflection knows before the model: the anchors and which passages hit several at once.
    first = reflect(section.plan.question, round_no, top, missing="", model=None, max_entities=0)
    if ctx.model.generative and first.strong_hits:  # the model reads strong hits first
        top = sorted(top, key=lambda i: i.id not in first.strong_hits)
    if section.anchor is None:
        verdict = Verdict(False, "none", "nothing could be searched", "low", None)
    else:
        # An empty pool was never ranked (no ranker): nothing is evidence.
        ranker = section.ranker
        order = [*top, *ranked[len(top) :]]
        chunks = [ranker.scored[i.key] for i in order] if ranker is not None else []
        verdict = await judge(
            section.plan.question,
            ctx.question,
            chunks,
            section.searches,
            ids=[i.id for i in order] if ranker is not None else [],
            model=ctx.model,
            ledger=ctx.ledger,
            preset=ctx.preset,
            settings=ctx.settings,
        )
    section.verdicts.append(verdict)
    ctx.emit({"type": "sufficiency", "section": section.index, "round": round_no, **verdict.as_event()})
    reflection = reflect(
        section.plan.question,
        round_no,
        top,
        missing=verdict.missing or (verdict.reason or "" if not verdict.sufficient else ""),
        model=verdict.reflection,
        max_entities=ctx.settings.research_entity_checks,
        previous=section.reflection,
    )
    section.reflections.append(reflection)
    event: dict[str, Any] = {"type": "reflection", "section": section.index, **reflection.as_event()}
    ctx.emit(event)
    return verdict
