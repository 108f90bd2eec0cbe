"""Write each section from its own pool, citing evidence ids; unsupported citations are dropped.

A section's writer sees only the evidence chosen for it (gap-protected fusion, pool.py), numbered by
run-wide evidence id, and cites those ids as [n]. A marker naming an id the section was not given is
removed: a section can only cite what it was written from. assemble.py renumbers the ids.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from backend.chat.citations import MARKER
from backend.chat.context import BuiltContext, ContextBuilder
from backend.config import Settings
from backend.llm import SourceText, load_prompt_for
from backend.llm.token_count import EstimateCounter
from backend.research.model import ModelOutcome
from backend.research.pool import PoolRanker, select_for_writing
from backend.research.sections import RunContext, SectionState, search
from backend.research.types import EvidenceItem
from backend.search.types import ScoredChunk
from backend.telemetry import Metrics
from backend.text.hygiene import drop_unstorable


@dataclass
class SectionDraft:
    index: int
    title: str
    question: str
    text: str  # Markdown citing evidence ids as [id]
    evidence: dict[int, EvidenceItem]  # what the writer was given, by evidence id
    cited: list[int]  # evidence ids cited, in order of first appearance
    generator: str  # gemini | extractive | scripted | none (no evidence)
    fallback_reason: str | None = None  # why the model did not write it
    citations_removed: int = 0
    fusion: dict[str, Any] = field(default_factory=dict)
    write_stage_search: bool = False


async def write_section(ctx: RunContext, section: SectionState) -> SectionDraft:
    """The section's text from its best write_k items (searching first if research never reached it)."""
    searched_again = False
    if section.anchor is None:
        # evidence-retention.md 3.1 write_stage: research ended before this section could search.
        result = await search(
            ctx, section, section.plan.question, round_no=0, pool_source="write_stage", phase="write"
        )
        if result is not None:
            searched_again = True
            section.searches.append(result)
    chosen: list[EvidenceItem] = []
    fusion: dict[str, Any] = {}
    if section.anchor is not None and section.pool.items:
        if section.ranker is None or section.ranker.anchor is not section.anchor:
            section.ranker = PoolRanker(
                ctx.retrieval, ctx.embedder, ctx.settings, ctx.identity, section.anchor
            )
        ranker = section.ranker
        chosen, fusion = await asyncio.to_thread(
            select_for_writing, section.pool, ranker.rank, write_k=ctx.write_k, settings=ctx.settings
        )
    draft = SectionDraft(
        section.index, section.plan.title, section.plan.question, "", {}, [], "none", fusion=fusion
    )
    draft.write_stage_search = searched_again
    if not chosen:
        draft.text = not_found_text(section.plan.question)
        return draft
    sources, evidence = _sources(ctx, section, chosen)
    text, generator, outcome = await ctx.model.write(section.plan.question, sources)
    draft.evidence, draft.generator = evidence, generator
    draft.fallback_reason = _fallback_reason(outcome, generator, ctx)
    draft.text, draft.cited, draft.citations_removed = keep_supported(text, set(evidence))
    return draft


def _sources(
    ctx: RunContext, section: SectionState, chosen: list[EvidenceItem]
) -> tuple[list[SourceText], dict[int, EvidenceItem]]:
    """The chosen items as numbered sources (number = evidence id) within the context budget."""
    assert section.ranker is not None
    scored = [section.ranker.scored.get(i.key, i.chunk) for i in chosen]
    context = _build_context(scored, ctx.settings, ctx.identity.cache_scope)
    by_chunk = {i.chunk.chunk_id: i for i in chosen}
    sources, evidence = [], {}
    for chunk, built in zip(context.chunks, context.sources, strict=True):
        item = by_chunk[chunk.chunk_id]
        item.chunk = chunk  # keep the score against the section question, for the source record
        evidence[item.id] = item
        sources.append(SourceText(n=item.id, title=built.title, heading=built.heading, content=built.content))
    return sources, evidence


def _build_context(chunks: list[ScoredChunk], settings: Settings, scope: uuid.UUID) -> BuiltContext:
    """The chat's context builder (duplicates and near-duplicates dropped, the calibrated estimate)
    within RESEARCH_CONTEXT_MAX_TOKENS for one section's sources; the reply's room is separate."""
    budget = settings.model_copy(
        update={"context_max_tokens": settings.research_context_max_tokens, "context_reply_tokens": 0}
    )
    counter = EstimateCounter(settings.context_estimate_margin)
    return ContextBuilder(budget, counter, _CONTEXT_METRICS).build(chunks, scope=scope)


_CONTEXT_METRICS = Metrics()  # research contexts are not part of /metrics' chat context figures


def keep_supported(text: str, allowed: set[int]) -> tuple[str, list[int], int]:
    """(text without markers outside `allowed`, cited ids in order of appearance, markers removed)."""
    cited: list[int] = []
    removed = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal removed
        numbers = [int(x) for x in re.split(r"\s*[,，、]\s*", match.group(1).strip())]
        kept = [n for n in numbers if n in allowed]
        removed += len(numbers) - len(kept)
        cited.extend(n for n in kept if n not in cited)
        return "".join(f"[{n}]" for n in kept)

    clean = MARKER.sub(fix, drop_unstorable(text))  # storable whatever the sources made the model write
    return re.sub(r"[ \t]+([。.,，!！?？])", r"\1", clean).strip(), cited, removed


def not_found_text(question: str) -> str:
    return load_prompt_for("not_found", question).render().strip()


def _fallback_reason(outcome: ModelOutcome, generator: str, ctx: RunContext) -> str | None:
    if not ctx.model.generative or generator == ctx.model.llm.generator:
        return None
    return outcome.failure or "the model wrote nothing"
