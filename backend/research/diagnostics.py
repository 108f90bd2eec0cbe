"""What a research run did, as typed data: in the /research response, the stored run, the OpenAPI page."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.chat.diagnostics import PoolFusionOut, RewriteDiagnostics
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


class SectionDiagnostics(_Diag):
    index: int
    title: str
    question: str
    engine: str | None = Field(default=None, description="the web engine the plan names for the section")
    engine_reason: str | None = Field(default=None, description="why: the plan's model, or the routing rule")
    rounds: int = Field(description="gap-search rounds run")
    stop_reason: str | None = Field(
        description="sufficient, max_loops, no new queries, or budget: <name> (the report is then partial)"
    )
    sufficient: bool
    pool: dict[str, int] = Field(description="the section's evidence by pool_source")
    searches: list[ResearchSearchOut]
    sufficiency: list[SufficiencyOut]
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
        rounds=state.rounds,
        stop_reason=state.stop_reason,
        sufficient=state.sufficient,
        pool=state.pool.counts(),
        searches=[ResearchSearchOut(**_search_fields(q)) for q in state.queries if q],  # {}: cut short
        sufficiency=[SufficiencyOut(**v.as_event()) for v in state.verdicts],
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
