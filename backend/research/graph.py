"""The research graph on plain asyncio: plan -> sections in parallel (search, reflect, entity check,
gap and candidate searches) -> global verify over the chain (its gaps back to the planner, at most
MAX_LOOPS times; dead directions pruned) -> write each section from its own pool -> the short answer
-> assemble.

Structured concurrency: every branch is a task of a TaskGroup, the research phase runs under
asyncio.timeout until deadline x (1 - RESEARCH_WRITE_RESERVE), and cancelling the run (a client
that disconnects) cancels the whole tree. When a budget runs out nothing new starts; sections
stop where they are and the report is written from what their pools hold, marked partial.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from backend.research.answer import ShortAnswer, short_answer
from backend.research.assemble import Report, assemble
from backend.research.branch import research_section
from backend.research.hops import carry_answer, waves
from backend.research.plan import make_plan
from backend.research.pool import SectionPool
from backend.research.sections import RunContext, SectionState, finish_section
from backend.research.types import PRIORITIES, Plan
from backend.research.verify import ChainVerdict, global_verify, hypotheses, plan_gaps
from backend.research.write import SectionDraft, write_section

T = TypeVar("T")


@dataclass
class ResearchOutcome:
    plan: Plan
    sections: list[SectionState]
    drafts: list[SectionDraft]
    report: Report
    partial_reasons: list[str]
    timings: dict[str, float]
    chain: list[ChainVerdict]
    answer: ShortAnswer
    hypotheses: list[dict[str, Any]]


async def run_graph(ctx: RunContext) -> ResearchOutcome:
    """One research run from question to report; raises only what no section could work around."""
    started = time.perf_counter()
    plan = await make_plan(ctx.question, ctx.model, ctx.preset)
    ctx.budget.reserve_for_writing(len(plan.sections))
    ctx.emit(
        {
            "type": "plan",
            "method": plan.method,
            "fallback_reason": plan.fallback_reason,
            "preset": ctx.preset.name,
            "step_top_k": ctx.step_k,
            "write_top_k": ctx.write_k,
            "max_loops": ctx.preset.max_loops,
            "limits": ctx.budget.limits.as_dict(),
            "sections": [{"index": i, **s.as_dict()} for i, s in enumerate(plan.sections)],
        }
    )
    states = [SectionState(i, s, SectionPool(ctx.ids)) for i, s in enumerate(plan.sections)]
    planned = time.perf_counter()

    await _research(ctx, states)
    chain = await _verify_loop(ctx, states)
    researched = time.perf_counter()
    if ctx.failures and not ctx.succeeded:
        raise ctx.failures[
            0
        ]  # not one search worked: the cause (database down, model mismatch) is the answer

    ctx.emit(
        {
            "type": "writing",
            "sections": [{"index": s.index, "title": s.plan.title, "pool": len(s.pool)} for s in states],
            "write_top_k": ctx.write_k,
        }
    )
    slots = asyncio.Semaphore(ctx.settings.research_parallel_sections)
    drafts = await _gather(states, lambda s: _bounded(slots, write_section(ctx, s)))
    answer = await short_answer(ctx, plan, states, drafts)
    written = time.perf_counter()

    reasons: list[str] = list(dict.fromkeys(ctx.budget.exhausted))
    claims = hypotheses(states, chain)
    report = assemble(
        ctx.asked or ctx.question,
        drafts,
        reasons,
        answer=answer.text,
        # A section with evidence the checks found insufficient is written, and marked as a hypothesis.
        unsupported=frozenset(s.index for s in states if s.verdicts and not s.sufficient and s.relevant),
        hypotheses=claims,
    )
    timings = {
        "plan_ms": _ms(started, planned),
        "research_ms": _ms(planned, researched),
        "write_ms": _ms(researched, written),
        "total_ms": _ms(started, time.perf_counter()),
    }
    return ResearchOutcome(plan, states, drafts, report, reasons, timings, chain, answer, claims)


async def _verify_loop(ctx: RunContext, states: list[SectionState]) -> list[ChainVerdict]:
    """Global verify after each research pass; its gaps (only those, never a pruned direction) become
    new sections researched in the next pass, at most MAX_LOOPS passes, while the budget lasts."""
    verdicts: list[ChainVerdict] = []
    for loop in range(ctx.preset.max_loops + 1):
        if ctx.budget.stopped:
            break
        verdict = await global_verify(ctx, states, loop)
        verdicts.append(verdict)
        last = loop == ctx.preset.max_loops
        gaps = [] if verdict.sufficient or last else plan_gaps(ctx, verdict, states)
        ctx.emit({"type": "verify", **verdict.as_event(), "new_sections": len(gaps)})
        if not gaps or ctx.budget.stopped:
            break
        fresh = [SectionState(len(states) + i, p, SectionPool(ctx.ids)) for i, p in enumerate(gaps)]
        ctx.budget.reserve_for_writing(len(states) + len(fresh))
        ctx.emit(
            {
                "type": "plan_gaps",
                "loop": loop + 1,
                "sections": [{"index": s.index, **s.plan.as_dict()} for s in fresh],
            }
        )
        states.extend(fresh)
        await _research(ctx, fresh, states)
    return verdicts


async def _research(
    ctx: RunContext, states: list[SectionState], known: Sequence[SectionState] | None = None
) -> None:
    """Every section in parallel, the higher priorities first, until done or research time runs out
    (then each stops where it is)."""
    states = sorted(states, key=lambda s: PRIORITIES.index(s.plan.priority))  # stable: plan order
    slots = asyncio.Semaphore(ctx.settings.research_parallel_sections)
    known = list(known or states)
    try:
        async with asyncio.timeout(max(ctx.budget.research_remaining(), 0.0)):
            # A multi-hop step waits for the answer it needs (hops.py); the rest run at once.
            for wave in waves(states):
                for state in wave:
                    carry_answer(ctx, state, known)
                await _gather(wave, lambda s: _bounded(slots, research_section(ctx, s)))
    except TimeoutError:
        ctx.budget.exhaust("deadline")
    for state in states:
        finish_section(ctx, state, reason=f"budget: {ctx.budget.stop_reason() or 'deadline'}")


async def _bounded(slots: asyncio.Semaphore, work: Awaitable[T]) -> T:
    async with slots:
        return await work


async def _gather(items: Sequence[SectionState], work: Callable[[SectionState], Awaitable[T]]) -> list[T]:
    """Run work(item) for every item in one TaskGroup; a failure cancels the rest and is re-raised as
    itself (not as an ExceptionGroup), so the API maps it to its status."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_as_coroutine(work(item))) for item in items]
    except BaseExceptionGroup as grouped:
        raise _first(grouped) from None
    return [task.result() for task in tasks]


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _first(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 1)
