"""The global verify over the reasoning chain (seed GlobalVerify, GoT): is the chain complete, which
directions are dead (pruned, with why, never planned or searched again), and which gaps go back to the
planner, only those, at most MAX_LOOPS times (graph.py).

With a model it judges the chain; without one (or when it fails) the heuristic prunes what found
nothing relevant and sends back only the gaps the chain shows (hops.chain_gaps: a multi-hop step not
answered, asked with another name its earlier step found): each section already searched its own
missing terms.
When every sub-question is sufficient no check is asked for: the chain is complete.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.llm import load_prompt
from backend.llm.parsing import clean_line
from backend.llm.prompts import neutralise
from backend.research.evaluate import normalise_query
from backend.research.heuristic_plan import heuristic_plan
from backend.research.hops import chain_gaps
from backend.research.sections import RunContext, SectionState
from backend.research.types import SectionPlan

VERIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sufficient": {"type": "boolean"},
        "gaps": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
        "prune": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"index": {"type": "integer"}, "reason": {"type": "string"}},
                "required": ["index", "reason"],
            },
        },
        "hypotheses": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
    "required": ["sufficient", "gaps"],
}
_MARK = {"verified": "✓", "excluded": "✗", "pending": "?"}

VerifyMethod = Literal["llm", "heuristic", "sections"]


@dataclass
class ChainVerdict:
    loop: int
    sufficient: bool
    method: VerifyMethod  # sections: every sub-question was sufficient, nothing to ask
    gaps: list[str] = field(default_factory=list)
    pruned: list[dict[str, Any]] = field(default_factory=list)  # {index, question, reason}
    hypotheses: list[str] = field(default_factory=list)
    skipped_gaps: list[dict[str, str]] = field(default_factory=list)  # {gap, reason}
    model_failure: str | None = None

    def as_event(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


async def global_verify(ctx: RunContext, states: Sequence[SectionState], loop: int) -> ChainVerdict:
    """The chain's verdict; prunes the sections it gives up (recorded in the run's ledger)."""
    live = [s for s in states if s.status != "pruned"]
    if live and all(s.sufficient for s in live):
        return ChainVerdict(loop, True, "sections")
    failure = None
    if ctx.model.generative:
        prompt = load_prompt("research_verify").render(
            question=ctx.question,
            chain=chain_text(states),
            pruned="\n".join(f"- {d}: {r}" for d, r in ctx.ledger.pruned()) or "(none)",
            max_gaps=ctx.settings.research_gap_sections,
        )
        value, outcome = await ctx.model.complete_json("research", "", prompt, VERIFY_SCHEMA)
        verdict = _from_json(value, loop, states) if value is not None else None
        if verdict is not None:
            _prune(ctx, states, verdict)
            return verdict
        failure = outcome.failure or "malformed verdict"
    verdict = ChainVerdict(loop, False, "heuristic", model_failure=failure)
    for state in live:
        if state.done and state.verdicts and state.relevant == 0:  # evaluated, not cut short
            reason = f"nothing relevant found in {len(state.queries)} searches"
            verdict.pruned.append({"index": state.index, "question": state.plan.question, "reason": reason})
    _prune(ctx, states, verdict)
    # What no section could search by itself: a multi-hop step asked with another name the earlier
    # step's evidence holds (each section already searched its own missing terms).
    verdict.gaps = chain_gaps(states, _asked(ctx, states), ctx.settings.research_gap_sections)
    return verdict


def _asked(ctx: RunContext, states: Sequence[SectionState]) -> Callable[[str], bool]:
    known = {normalise_query(s.plan.question) for s in states}
    return lambda q: normalise_query(q) in known or ctx.ledger.was_asked(q) or ctx.ledger.is_pruned(q)


def plan_gaps(ctx: RunContext, verdict: ChainVerdict, states: Sequence[SectionState]) -> list[SectionPlan]:
    """The verdict's gaps as new sub-questions (medium priority), minus any direction already pruned
    or researched: the planner gets the gaps and nothing else."""
    known = {normalise_query(s.plan.question) for s in states}
    plans: list[SectionPlan] = []
    for gap in verdict.gaps[: ctx.settings.research_gap_sections]:
        if ctx.ledger.is_pruned(gap):
            verdict.skipped_gaps.append({"gap": gap, "reason": "pruned before"})
            continue
        if normalise_query(gap) in known or ctx.ledger.was_asked(gap):
            verdict.skipped_gaps.append({"gap": gap, "reason": "already researched"})
            continue
        known.add(normalise_query(gap))
        [part] = heuristic_plan(
            gap, max_sections=1, queries_per_section=ctx.preset.queries_per_section
        ).sections
        plans.append(dataclasses.replace(part, priority="medium", loop=verdict.loop + 1))
    return plans


def chain_text(states: Sequence[SectionState]) -> str:
    """The reasoning chain as the verify prompt shows it."""
    lines = []
    for s in states:
        r = s.reflection
        lines.append(f"[{s.index}] ({s.status}, {s.plan.priority}) {s.plan.question}")
        lines.append(f"  sufficient: {'yes' if s.sufficient else 'no'}")
        if r is not None:
            lines += [f"  established: {fact}" for fact in r.established]
            lines += [f"  missing: {r.missing}"] if r.missing else []
            lines += [f"  hypothesis: {h}" for h in r.hypotheses]
        for name, entry in s.candidates.items():
            lines.append(f"  candidate {_MARK.get(entry['status'], '?')} {name}")
    return neutralise("\n".join(lines)) or "(nothing researched)"


def _from_json(value: dict[str, Any], loop: int, states: Sequence[SectionState]) -> ChainVerdict | None:
    sufficient = value.get("sufficient")
    if not isinstance(sufficient, bool):
        return None
    raw_gaps = value.get("gaps")
    gaps = [clean_line(g) for g in raw_gaps if isinstance(g, str)] if isinstance(raw_gaps, list) else []
    by_index = {s.index: s for s in states}
    pruned = []
    raw_prune = value.get("prune")
    for entry in raw_prune if isinstance(raw_prune, list) else []:
        index = entry.get("index") if isinstance(entry, dict) else None
        if isinstance(index, int) and index in by_index and by_index[index].status != "pruned":
            reason = clean_line(entry.get("reason")) if isinstance(entry.get("reason"), str) else ""
            pruned.append(
                {
                    "index": index,
                    "question": by_index[index].plan.question,
                    "reason": reason or "the model gave it up",
                }
            )
    raw_hyp = value.get("hypotheses")
    hypotheses = [clean_line(h) for h in raw_hyp if isinstance(h, str)] if isinstance(raw_hyp, list) else []
    return ChainVerdict(
        loop,
        sufficient,
        "llm",
        gaps=[] if sufficient else [g for g in gaps if 2 <= len(g) <= 300],
        pruned=pruned,
        hypotheses=[h for h in hypotheses if h][:5],
    )


def _prune(ctx: RunContext, states: Sequence[SectionState], verdict: ChainVerdict) -> None:
    by_index = {s.index: s for s in states}
    for entry in verdict.pruned:
        state = by_index[entry["index"]]
        state.status, state.status_reason = "pruned", entry["reason"]
        ctx.ledger.prune(state.plan.question, entry["reason"])
        for query in state.plan.queries:
            ctx.ledger.prune(query, entry["reason"])
        ctx.emit(
            {
                "type": "pruned",
                "section": state.index,
                "question": state.plan.question,
                "reason": entry["reason"],
            }
        )


def hypotheses(states: Sequence[SectionState], verdicts: Sequence[ChainVerdict]) -> list[dict[str, Any]]:
    """Every claim of the chain not yet supported by evidence (seed: 推测, marked as such): what the
    reflections and the global verify inferred, and the candidates never checked."""
    out: list[dict[str, Any]] = []
    for s in states:
        r = s.reflection
        out += [{"claim": h, "section": s.index, "origin": "reflection"} for h in (r.hypotheses if r else [])]
        out += [
            {"claim": name, "section": s.index, "origin": "candidate"}
            for name, entry in s.candidates.items()
            if entry["status"] == "pending"
        ]
    out += [{"claim": h, "section": None, "origin": "verify"} for v in verdicts for h in v.hypotheses]
    seen: set[str] = set()
    return [h for h in out if not (h["claim"] in seen or seen.add(h["claim"]))]  # type: ignore[func-returns-value]
