"""What a reflection sets off: the encyclopedia check of the entities it names, and a search per
candidate of a candidate set (seed 第七次/第九次修改). Both are searches of the run's budget.

The entity check asks only the encyclopedia provider ('baike': WebSearch.legs(..., engines=...)), with
the entity's bare name, as the seed's baike_search takes it; without that provider it is skipped and
the section's diagnostics say so. A candidate is searched together with the sub-question's anchors
(the multi-anchor joint query: "张欣 贞观之治 配音" rather than "张欣"), then settled by multi-anchor
hit detection: verified when a passage names it with the anchors, excluded (its direction pruned,
never searched again) when its own search found no such passage, pending when it was never searched.
"""

from __future__ import annotations

import asyncio
from typing import Any

from backend.research.records import strong_hit_threshold
from backend.research.sections import RunContext, SectionState
from backend.search.web import web_passages
from backend.text.names import anchor_count
from backend.web.softwait import WaitBudget, web_only

ENCYCLOPEDIA: tuple[str, ...] = ("baike",)
NO_ENCYCLOPEDIA = "skipped: no encyclopedia provider ('baike' in the web providers) is configured"
NO_WEB = "skipped: the request said web=false"


def encyclopedia_configured(ctx: RunContext) -> bool:
    return any(provider.name in ENCYCLOPEDIA for provider in ctx.web.providers)


async def check_entities(ctx: RunContext, section: SectionState, round_no: int) -> None:
    """The reflection's entities looked up in the encyclopedia (each once per run), into the pool."""
    reflection = section.reflection
    limit = ctx.settings.research_entity_checks
    if reflection is None or not reflection.entities or limit == 0:
        return
    entities = [e for e in reflection.entities[:limit] if e not in ctx.checked_entities]
    if not encyclopedia_configured(ctx):
        for entity in entities:
            ctx.checked_entities.add(entity)
            _record(
                ctx, section, round_no, {"entity": entity, "status": "skipped", "reason": NO_ENCYCLOPEDIA}
            )
        return
    for entity in entities:
        ctx.checked_entities.add(entity)
        if ctx.budget.stopped or not ctx.budget.take_search():
            _record(ctx, section, round_no, {"entity": entity, "status": "skipped", "reason": "budget"})
            continue
        _record(ctx, section, round_no, await _look_up(ctx, section, entity, round_no))


async def _look_up(ctx: RunContext, section: SectionState, entity: str, round_no: int) -> dict[str, Any]:
    started = asyncio.get_running_loop().time()
    legs = ctx.web.legs(entity, caller=ctx.identity.cache_scope, engines=ENCYCLOPEDIA)
    async with ctx.search_slots:
        outcome = await web_only(legs, WaitBudget.for_mode(ctx.settings, "research"))
    anchor = section.anchor
    embedding = anchor.embedding if anchor is not None else None
    passages = await asyncio.to_thread(web_passages, outcome.web, ctx.embedder, embedding, ctx.settings)
    new = section.pool.add(passages, pool_source="eval_supplement", round_no=round_no, query=entity)
    errors = [leg.diagnostics.error for leg in legs if leg.diagnostics.error]
    return {
        "entity": entity,
        "status": "checked" if outcome.web else ("failed" if errors else "not found"),
        "reason": errors[0] if errors else None,
        "results": len(outcome.web),
        "new": new,
        "ms": round((asyncio.get_running_loop().time() - started) * 1000, 1),
    }


def _record(ctx: RunContext, section: SectionState, round_no: int, record: dict[str, Any]) -> None:
    record = {"round": round_no, "reason": None, "results": 0, "new": 0, **record}
    section.entity_checks.append(record)
    ctx.emit({"type": "entity_check", "section": section.index, **record})


def candidate_queries(ctx: RunContext, section: SectionState) -> list[str]:
    """A multi-anchor query for each candidate of the reflection not yet taken up (at most
    RESEARCH_MAX_CANDIDATES per section; those beyond stay pending, recorded)."""
    reflection = section.reflection
    if reflection is None:
        return []
    queries = []
    for name in reflection.candidates:
        if name in section.candidates:
            continue
        query = " ".join(dict.fromkeys([name, *reflection.anchors[:3]]))
        entry: dict[str, Any] = {"status": "pending", "query": query, "evidence": [], "reason": None}
        section.candidates[name] = entry
        if sum(1 for c in section.candidates.values() if c["reason"] != "limit") > (
            ctx.settings.research_max_candidates
        ):
            entry["reason"] = "limit"  # over RESEARCH_MAX_CANDIDATES: listed, not searched
        elif ctx.ledger.claim(query):
            queries.append(query)
        else:
            entry["reason"] = "already searched or pruned"
    return queries


def settle_candidates(ctx: RunContext, section: SectionState, searched: set[str]) -> None:
    """Each candidate searched this round: verified by a multi-anchor hit that singles it out (the
    passage names it with the anchors and no other candidate: the list itself proves nothing), else
    excluded and its direction pruned."""
    reflection = section.reflection
    anchors = reflection.anchors if reflection is not None else []
    need = strong_hit_threshold(anchors) if len(anchors) >= 2 else len(anchors)
    for name, entry in section.candidates.items():
        if entry["status"] != "pending" or entry["query"] not in searched:
            continue
        others = [other for other in section.candidates if other != name]
        hits = [
            item.id
            for item in section.pool.items.values()
            if name in item.chunk.content
            and anchor_count(item.chunk.content, anchors) >= need
            and not any(other in item.chunk.content for other in others)
        ]
        if hits:
            entry.update(status="verified", evidence=hits[:5])
        else:
            reason = f"no passage names {name} with the anchors {' '.join(anchors[:3])}"
            entry.update(status="excluded", reason=reason)
            ctx.ledger.prune(entry["query"], reason)
        ctx.emit({"type": "candidate", "section": section.index, "candidate": name, **entry})


def candidate_rows(section: SectionState) -> list[dict[str, Any]]:
    return [{"name": name, **entry} for name, entry in section.candidates.items()]
