"""The shapes a research run is answered and stored in: the response body, a run as read back, errors."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import psycopg

from backend.chat.diagnostics import RewriteDiagnostics
from backend.chat.rewrite import Rewrite
from backend.errors import DomainError
from backend.research.budget import RunBudget
from backend.research.diagnostics import (
    AnswerOut,
    ChainOut,
    ChainVerifyOut,
    ResearchBudgetOut,
    ResearchDiagnostics,
    ResearchWebOut,
    section_diagnostics,
)
from backend.research.graph import ResearchOutcome
from backend.research.model import ResearchModel
from backend.research.types import PreparedRun
from backend.search.diagnostics import SearchScope

# A run still "running" this long after its deadline was cut off by a restart: shown as interrupted.
INTERRUPTED_AFTER_S = 120.0


def response_body(
    run: PreparedRun,
    outcome: ResearchOutcome,
    budget: RunBudget,
    rewrite: Rewrite,
    model: ResearchModel,
    *,
    web_enabled: bool,
    pruned: list[tuple[str, str]],
) -> dict[str, Any]:
    """What POST /research answers (conversation and message ids are added once stored)."""
    drafts = {d.index: d for d in outcome.drafts}
    generators = Counter(d.generator for d in outcome.drafts if d.generator != "none")
    generator = "+".join(sorted(generators)) if generators else "none"
    used_model = model.generative and (
        outcome.plan.method == "llm"
        or any(v.method == "llm" for s in outcome.sections for v in s.verdicts)
        or model.llm.generator in generators
        or any(v.method == "llm" for v in outcome.chain)
        or outcome.answer.method == "llm"
    )
    diagnostics = ResearchDiagnostics(
        preset=run.preset.name,
        scope=SearchScope.of(run.collections),
        step_top_k=run.step_k,
        write_top_k=run.write_k,
        max_loops=run.preset.max_loops,
        plan_method=outcome.plan.method,
        plan_fallback_reason=outcome.plan.fallback_reason,
        rewrite=RewriteDiagnostics(query=rewrite.query, method=rewrite.method) if run.history else None,
        web=ResearchWebOut(
            requested=run.web,
            enabled=web_enabled,
            passages=sum(int(q.get("web_results", 0)) for s in outcome.sections for q in s.queries),
        ),
        sections=[section_diagnostics(s, drafts[s.index]) for s in outcome.sections],
        chain=ChainOut(
            loops=max((s.plan.loop for s in outcome.sections), default=0),
            verify=[ChainVerifyOut(**v.as_event()) for v in outcome.chain],
            pruned=[{"direction": d, "reason": r} for d, r in pruned],
            hypotheses=outcome.hypotheses,
        ),
        answer=AnswerOut(**outcome.answer.as_dict()),
        budget=ResearchBudgetOut(
            limits=dict(run.limits.as_dict()),
            used={k: float(v) for k, v in budget.usage().items() if isinstance(v, int | float)},
            exhausted=list(budget.exhausted),
        ),
        timings=outcome.timings,
        llm=model.llm.name if used_model else None,
    )
    return {
        "run_id": str(run.run_id),
        "conversation_id": None,
        "message_id": None,
        "question": run.question,
        "report": outcome.report.markdown,
        # A single-fact question's normalised answer (the report's first line); None otherwise.
        "short_answer": outcome.answer.text,
        "sections": outcome.report.sections,
        "sources": outcome.report.sources,
        "partial": bool(outcome.partial_reasons),
        "partial_reasons": outcome.partial_reasons,
        "generator": generator,
        "diagnostics": diagnostics.model_dump(mode="json"),
    }


def error_record(exc: BaseException) -> dict[str, Any]:
    """A failure as stored with the run: a domain error's own message, nothing internal otherwise."""
    if isinstance(exc, DomainError):
        return {"error": type(exc).__name__, "detail": str(exc), "status": exc.status_code}
    if isinstance(exc, psycopg.Error):
        return {"error": "DatabaseError", "detail": "the database failed during the run", "status": 503}
    return {"error": "InternalError", "detail": "internal error; it has been logged", "status": 500}


def run_view(row: dict[str, Any]) -> dict[str, Any]:
    """A stored run for the API; a run left 'running' past its deadline (a restart) reads 'interrupted'."""
    view = dict(row)
    if view["status"] == "running":
        deadline = float((view.get("budget") or {}).get("limits", {}).get("deadline_s", 0.0))
        age = (dt.datetime.now(dt.UTC) - view["created_at"]).total_seconds()
        if age > deadline + INTERRUPTED_AFTER_S:
            view["status"] = "interrupted"
    return view
