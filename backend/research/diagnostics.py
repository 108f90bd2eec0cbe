"""What a research run did, as typed data: in the /research response, the stored run, the OpenAPI page."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.chat.diagnostics import PoolFusionOut, RewriteDiagnostics
from backend.research.checks import candidate_rows
from backend.research.records import EvidenceRecord, heuristic_records
from backend.research.sections import SectionState
from backend.research.write import SectionDraft
from backend.search.diagnostics import SearchScope


class _Diag(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResearchSearchOut(_Diag):
    query: str
    round: int = Field(description="0: the section's first round; 1..MAX_LOOPS: gap rounds")
    pool_source: Literal["research_round", "eval_supplement", "write_stage"]
    results: int = Field(description="local chunks the search kept (step_top_k at most)")
    web_results: int = Field(description="web passages the web leg added (0 when it did not run)")
    route: str | None = Field(
        default=None, description="what the search's confidence says (answer, web_fallback, ...)"
    )
    new: int = Field(description="passages new to the section's pool")
    ms: float
    confidence_level: str | None = None
    best_overall_score: float | None = None
    error: str | None = Field(default=None, description="why the search failed (the run went on)")
    engines: list[str] | None = Field(
        default=None, description="the web engines this search went to (null: no web leg ran)"
    )
    engine_reason: str | None = Field(
        default=None, description="why those engines: the routing rule or the plan (backend/web/routing.py)"
    )


class SufficiencyOut(_Diag):
    sufficient: bool
    method: Literal["llm", "heuristic", "none"] = Field(
        description="llm: the model judged; heuristic: the scarcity test (no model, or it failed); "
        "none: no check ran (budget)"
    )
    reason: str | None
    missing: str
    confidence_level: str = Field(description="best retrieval confidence among the section's searches")
    best_overall_score: float | None
    gap_queries: list[str]
    model_failure: str | None = Field(description="why the model's verdict was not used")


class SectionWriteOut(_Diag):
    evidence: int = Field(description="passages the section was written from (write_top_k at most)")
    cited: int
    citations_removed: int = Field(description="markers naming evidence the section was not given")
    generator: str = Field(description="gemini, scripted, extractive, or none (nothing to write from)")
    fallback_reason: str | None = Field(description="why the model did not write it (budget, timeout, error)")
    write_stage_search: bool
    pool_fusion: PoolFusionOut | None = Field(
        description="the gap-protected selection (evidence-retention 四)"
    )


class EvidenceRecordOut(_Diag):
    id: int = Field(description="the run-wide evidence id")
    statement: str = Field(description="the claim the passage supports, condensed")
    source: str
    url: str | None
    document_id: str | None = Field(description="a local passage's document (null: a web page)")
    source_kind: Literal["document", "encyclopedia", "web"]
    reliability: Literal["high", "medium", "low"] = Field(
        description="heuristic: by source kind (documents, encyclopedia: high; web by domain class), one "
        "step up when another source agrees; llm: the reflection's rating"
    )
    agreement: int = Field(description="other sources (another document or site) stating the same")
    anchor_hits: int = Field(description="anchors of the sub-question the passage names")
    strong_hit: bool = Field(description="a multi-anchor hit: several anchors in one passage")
    method: Literal["heuristic", "llm"]
    deleted: bool = Field(
        default=False, description="its document was deleted: statement and source erased (stored runs)"
    )


class RecordRatingOut(_Diag):
    """An evidence record without the passage's words (the stream's reflection event has them all)."""

    id: int
    source_kind: Literal["document", "encyclopedia", "web"]
    reliability: Literal["high", "medium", "low"]
    agreement: int
    anchor_hits: int
    strong_hit: bool
    method: Literal["heuristic", "llm"]


class ReflectionOut(_Diag):
    round: int
    method: Literal["llm", "heuristic"] = Field(
        description="llm: asked with the sufficiency verdict; heuristic: no model, or its reflection failed"
    )
    established: list[str]
    missing: str
    entities: list[str] = Field(description="entities worth an encyclopedia check")
    candidates: list[str] = Field(description="a candidate set found in the evidence, checked one by one")
    hypotheses: list[str] = Field(description="claims not yet supported by the evidence")
    anchors: list[str]
    strong_hits: list[int] = Field(description="evidence ids of multi-anchor hits")
    records: list[RecordRatingOut] = Field(description="the round's top evidence, rated")
    answer: str | None = Field(
        default=None,
        description="the sub-question's answer as the evidence states it (a multi-hop step's bridge)",
    )


class EntityCheckOut(_Diag):
    entity: str
    round: int
    status: Literal["checked", "not found", "failed", "skipped"]
    reason: str | None = Field(description="why skipped (no encyclopedia provider, budget) or failed")
    results: int
    new: int
    ms: float | None = None


class CandidateOut(_Diag):
    name: str
    status: Literal["pending", "verified", "excluded"] = Field(
        description="verified: a passage names it with the anchors; excluded: its search found none (the "
        "direction is pruned); pending: never searched"
    )
    query: str = Field(description="the multi-anchor query that checks it")
    evidence: list[int]
    reason: str | None


class HopOut(_Diag):
    asked: str = Field(description="the sub-question as planned, with the bridge words")
    after: int = Field(description="the section whose answer this one needs")
    bridge: str = Field(description="the words of the sub-question standing for that answer")
    entity: str | None = Field(description="the answer found there (None: none was found)")
    method: Literal["reflection", "unresolved"] = Field(
        description="reflection: the earlier section's reflection gave the answer; "
        "unresolved: searched as written"
    )
    question: str = Field(description="the sub-question as searched")


class SectionDiagnostics(_Diag):
    index: int
    title: str
    question: str
    engine: str | None = Field(default=None, description="the web engine the plan names for the section")
    engine_reason: str | None = Field(default=None, description="why: the plan's model, or the routing rule")
    priority: Literal["high", "medium", "low"]
    loop: int = Field(description="0: the first plan; n: a gap the n-th global verify sent back")
    hop: HopOut | None = Field(
        default=None,
        description="a multi-hop step: the earlier answer it was searched with (research/hops.py)",
    )
    status: Literal["pending", "done", "pruned"]
    status_reason: str | None = Field(description="why the global verify pruned it")
    rounds: int = Field(description="gap-search rounds run")
    stop_reason: str | None = Field(
        description="sufficient, max_loops, no new queries, or budget: <name> (the report is then partial)"
    )
    sufficient: bool
    pool: dict[str, int] = Field(description="the section's evidence by pool_source")
    searches: list[ResearchSearchOut]
    sufficiency: list[SufficiencyOut]
    reflections: list[ReflectionOut]
    entity_checks: list[EntityCheckOut]
    candidates: list[CandidateOut]
    evidence_records: list[EvidenceRecordOut] = Field(
        description="a record per evidence item the section cites (accepted into the report)"
    )
    write: SectionWriteOut


class ResearchBudgetOut(_Diag):
    limits: dict[str, float] = Field(description="deadline_s, max_model_calls, max_tokens, max_searches")
    used: dict[str, float] = Field(
        description="model_calls, tokens (tokens_estimated of them counted without provider usage), "
        "searches, elapsed_s"
    )
    exhausted: list[str] = Field(description="budgets that ran out, first first")


class ResearchWebOut(_Diag):
    requested: bool | Literal["auto"] = Field(description="the request's web choice")
    enabled: bool = Field(description="whether the server has a web provider (WEB_SEARCH_PROVIDER)")
    passages: int = Field(description="web passages the run's searches added to section pools")


class ChainVerifyOut(_Diag):
    loop: int
    sufficient: bool
    method: Literal["llm", "heuristic", "sections"] = Field(
        description="llm: the model judged the chain; heuristic: no model or it failed (prunes what found "
        "nothing relevant; its only gaps are multi-hop steps left unanswered, asked with another name the "
        "earlier step found); sections: every sub-question was sufficient"
    )
    gaps: list[str] = Field(description="sub-questions sent back to the planner")
    pruned: list[dict[str, Any]] = Field(description="{index, question, reason} of sections given up")
    hypotheses: list[str]
    skipped_gaps: list[dict[str, str]] = Field(description="gaps not planned: pruned before, or researched")
    model_failure: str | None


class ChainOut(_Diag):
    loops: int = Field(description="research passes after the first (at most MAX_LOOPS)")
    verify: list[ChainVerifyOut]
    pruned: list[dict[str, str]] = Field(
        description="every direction pruned ({direction, reason}): sections, excluded candidates"
    )
    hypotheses: list[dict[str, Any]] = Field(
        description="claims not yet supported ({claim, section, origin})"
    )


class AnswerOut(_Diag):
    text: str | None = Field(description="the normalised short answer (None: none given)")
    kind: Literal["who", "when", "number", "yesno", "entity"] | None
    method: Literal["llm", "heuristic", "skipped"]
    reason: str | None
    model_failure: str | None


class ResearchDiagnostics(_Diag):
    preset: Literal["lite", "comprehensive"]
    scope: SearchScope = Field(
        default_factory=lambda: SearchScope(kind="everything"), description="which chunks every search read"
    )
    step_top_k: int
    write_top_k: int
    max_loops: int
    plan_method: Literal["llm", "heuristic"]
    plan_fallback_reason: str | None = Field(description="why the model's plan was not used")
    rewrite: RewriteDiagnostics | None = Field(
        description="the follow-up made self-contained (conversations)"
    )
    web: ResearchWebOut
    sections: list[SectionDiagnostics]
    chain: ChainOut
    answer: AnswerOut
    budget: ResearchBudgetOut
    timings: dict[str, float] = Field(description="plan_ms, research_ms, write_ms, total_ms")
    llm: str | None = Field(description="the model that planned, judged or wrote, if one did")


def section_diagnostics(state: SectionState, draft: SectionDraft) -> SectionDiagnostics:
    fusion = PoolFusionOut(**draft.fusion) if draft.fusion else None
    return SectionDiagnostics(
        index=state.index,
        title=state.plan.title,
        question=state.plan.question,
        engine=state.plan.engine,
        engine_reason=state.plan.engine_reason,
        priority=state.plan.priority,
        loop=state.plan.loop,
        hop=HopOut(**state.hop) if state.hop else None,
        status=state.status,
        status_reason=state.status_reason,
        rounds=state.rounds,
        stop_reason=state.stop_reason,
        sufficient=state.sufficient,
        pool=state.pool.counts(),
        searches=[ResearchSearchOut(**_search_fields(q)) for q in state.queries if q],  # {}: cut short
        sufficiency=[SufficiencyOut(**v.as_event()) for v in state.verdicts],
        reflections=[
            ReflectionOut(**{**r.as_event(), "records": [x.rating() for x in r.records]})
            for r in state.reflections
        ],
        entity_checks=[EntityCheckOut(**c) for c in state.entity_checks],
        candidates=[CandidateOut(**c) for c in candidate_rows(state)],
        evidence_records=[EvidenceRecordOut(**r.as_dict()) for r in cited_records(state, draft)],
        write=SectionWriteOut(
            evidence=len(draft.evidence),
            cited=len(draft.cited),
            citations_removed=draft.citations_removed,
            generator=draft.generator,
            fallback_reason=draft.fallback_reason,
            write_stage_search=draft.write_stage_search,
            pool_fusion=fusion,
        ),
    )


def _search_fields(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k in ResearchSearchOut.model_fields}


def cited_records(state: SectionState, draft: SectionDraft) -> list[EvidenceRecord]:
    """A record per cited item: the last reflection's (the model's rating when it gave one), else the
    heuristic's against the section's anchors."""
    reflection = state.reflection
    known = {r.id: r for r in reflection.records} if reflection is not None else {}
    anchors = reflection.anchors if reflection is not None else []
    missing = [draft.evidence[i] for i in draft.cited if i not in known]
    fresh = {r.id: r for r in heuristic_records(missing, anchors)}
    return [known.get(i) or fresh[i] for i in draft.cited]
