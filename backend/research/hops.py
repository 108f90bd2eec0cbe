"""Multi-hop steps: a section whose sub-question needs an earlier section's answer (SectionPlan.after,
named by the words SectionPlan.bridge: "该地区", "that person") is researched once that section is,
with the answer its reflection found in place of those words. The answer travels in the `hop` event
and the section's diagnostics; when none was found the step is searched as written (and says so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from backend.research.heuristic_plan import keywords
from backend.research.sections import RunContext, SectionState
from backend.text.bridge import fill_bridge


def waves(states: Sequence[SectionState]) -> list[list[SectionState]]:
    """The sections in the order their answers allow: each wave needs only answers of earlier ones
    (a section whose `after` is not among `states` was answered before: it starts at once)."""
    pending = {s.index: s for s in states}
    out: list[list[SectionState]] = []
    while pending:
        ready = [s for s in pending.values() if s.plan.after not in pending or s.plan.after == s.index]
        if not ready:  # a cycle cannot be planned (after < index), but never wait forever
            ready = list(pending.values())
        out.append(ready)
        for state in ready:
            del pending[state.index]
    return out


def carry_answer(ctx: RunContext, section: SectionState, states: Sequence[SectionState]) -> None:
    """Put the earlier section's answer into this step's sub-question and searches (once)."""
    plan = section.plan
    if plan.after is None or plan.bridge is None or section.hop is not None:
        return
    source = next((s for s in states if s.index == plan.after), None)
    entity = source.reflection.answer if source is not None and source.reflection is not None else None
    question = fill_bridge(plan.question, plan.bridge, entity) if entity else plan.question
    if entity:
        queries = [question, *(fill_bridge(q, plan.bridge, entity) for q in plan.queries[1:])]
        if len(queries) > 1 and plan.bridge not in plan.queries[1]:  # the keywords lost the phrase
            queries[1] = keywords(question)
        section.plan = dataclasses.replace(plan, question=question, queries=list(dict.fromkeys(queries)))
    section.hop = {
        "asked": plan.question,
        "after": plan.after,
        "bridge": plan.bridge,
        "entity": entity,
        "method": "reflection" if entity else "unresolved",
        "question": question,
    }
    ctx.emit({"type": "hop", "section": section.index, **section.hop})


def chain_gaps(states: Sequence[SectionState], asked: Callable[[str], bool], limit: int) -> list[str]:
    """The gaps only the chain shows (the global verify's without a model): a multi-hop step its
    evidence did not answer, asked again with another name the earlier section's evidence holds (its
    reflection's answer, candidates, then entities), one not asked with yet. At most `limit`."""
    by_index = {s.index: s for s in states}
    gaps: list[str] = []
    for state in states:
        hop = state.hop
        source = by_index.get(hop["after"]) if hop else None
        reflection = source.reflection if source is not None else None
        if not hop or state.sufficient or reflection is None:
            continue
        names = [reflection.answer, *reflection.candidates, *reflection.entities]
        for name in dict.fromkeys(n for n in names if n and n != hop["entity"] and n not in hop["asked"]):
            gap = fill_bridge(hop["asked"], hop["bridge"], name)
            if not asked(gap) and gap not in gaps:
                gaps.append(gap)
                break
    return gaps[:limit]
