"""What the WhereBuilder and the score mapping did in one search, as typed data (in /search and /chat)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.where.builder import WherePlan


class _Diag(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InferredConditionOut(_Diag):
    """One condition read in the question."""

    field: str
    condition: dict[str, Any] = Field(description='e.g. {"$gte": "2025-05-01T00:00:00+00:00"}')
    phrase: str = Field(description="the words of the question that expressed it")
    status: Literal["applied", "overridden", "ignored", "relaxed"] = Field(
        description="applied: in applied_where; overridden: your `filters` name this field, yours apply; "
        "ignored: the filter grammar refused it (reason); relaxed: applied, then dropped because the "
        "filtered search found nothing"
    )
    reason: str | None = None


class WhereDiagnostics(_Diag):
    """The effective filter: the request's `filters` (user) and what infer_filters read (inferred)."""

    infer_filters: bool = Field(description="whether the request asked to infer filters from the question")
    method: Literal["none", "rules", "gemini", "openai_compatible"] = Field(
        description="what read the question: none (infer_filters false), rules, or the model's structured "
        "output (gemini, openai_compatible)"
    )
    fallback: str | None = Field(
        default=None, description="why the model's reading was not used and the rules decided (timeout, …)"
    )
    question: str = Field(description="the question as asked")
    retrieval_query: str = Field(
        description="the text that was searched: the question without the words that only set a filter"
    )
    removed_phrases: list[str] = Field(default_factory=list)
    applied_where: dict[str, Any] = Field(
        description="the filter the results were found with: user AND inferred (after any relax); valid "
        "as `filters` of another request"
    )
    user: dict[str, Any] = Field(description="the request's own filters, applied as given")
    inferred: dict[str, Any] = Field(description="inferred conditions in applied_where (after any relax)")
    conditions: list[InferredConditionOut] = Field(default_factory=list)
    relax_enabled: bool = Field(description="the request's `relax`, else WHERE_RELAX_ENABLED")
    relaxed: bool = Field(
        description="the filtered search found nothing, so it ran once more without the inferred conditions"
    )
    dropped: dict[str, Any] = Field(default_factory=dict, description="the inferred conditions relax dropped")
    matched_count_before_relax: int | None = Field(
        default=None, description="candidates the first, fully filtered search found (0 when it relaxed)"
    )

    @classmethod
    def from_plan(cls, plan: WherePlan, *, infer: bool, relax_enabled: bool) -> WhereDiagnostics:
        conditions = [
            InferredConditionOut(field=i.field, condition=i.condition, phrase=i.phrase, status="applied")
            for i in plan.applied
        ]
        conditions += [
            InferredConditionOut(field=i.field, condition=i.condition, phrase=i.phrase, status="overridden")
            for i in plan.overridden
        ]
        conditions += [
            InferredConditionOut(
                field=i.field, condition=i.condition, phrase=i.phrase, status="ignored", reason=why
            )
            for i, why in plan.ignored
        ]
        return cls(
            infer_filters=infer,
            method=plan.method,
            fallback=plan.fallback,
            question=plan.question,
            retrieval_query=plan.query,
            removed_phrases=plan.removed_phrases,
            applied_where=plan.effective,
            user=plan.user,
            inferred=plan.inferred,
            conditions=conditions,
            relax_enabled=relax_enabled,
            relaxed=False,
        )

    def mark_relaxed(self, first_count: int) -> None:
        """The search ran again with the user's filters only."""
        self.relaxed = True
        self.dropped = self.inferred
        self.inferred = {}
        self.applied_where = self.user
        self.matched_count_before_relax = first_count
        for condition in self.conditions:
            if condition.status == "applied":
                condition.status = "relaxed"
                condition.reason = "the filtered search found nothing"
