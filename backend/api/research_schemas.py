"""Request and response bodies of /research (with examples for the OpenAPI page)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.api.collection_schemas import Collections
from backend.api.schemas import SourceOut
from backend.research.diagnostics import ResearchDiagnostics
from backend.research.types import ResearchRequest

RunStatus = Literal["running", "completed", "failed", "cancelled", "interrupted"]


class ResearchIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"question": "三阶段检索分别做什么？置信度分数是怎么计算的？", "stream": True},
                {
                    "question": "How is hybrid_search tuned, and how are chats budgeted?",
                    "preset": "comprehensive",
                },
            ]
        },
    )

    question: str = Field(min_length=1, max_length=10_000)
    conversation_id: uuid.UUID | None = Field(
        default=None, description="add the report to this conversation (a follow-up is made self-contained)"
    )
    stream: bool = Field(
        default=False,
        description="true: Server-Sent Events plan, section_started, search, evidence, sufficiency, "
        "reflection, entity_check, candidate, section_done (per section), verify (pruned, plan_gaps "
        "when the global verify sends gaps back), writing, then done (or error)",
    )
    preset: Literal["lite", "comprehensive"] | None = Field(
        default=None, description="budgets and evidence per step; default RESEARCH_DEFAULT_PRESET"
    )
    web: bool | Literal["auto"] = Field(
        default="auto",
        description="as on /chat: auto searches the web for a query the documents do not answer; true: "
        "beside every search; false: never. Needs WEB_SEARCH_PROVIDER.",
    )
    filters: dict[str, Any] | None = Field(
        default=None,
        description='metadata filter for every search of the run, as on /search: {"tags": ["x"]}',
    )
    collections: Collections = None
    step_top_k: int | None = Field(default=None, ge=1, description="chunks one research search keeps")
    write_top_k: int | None = Field(default=None, ge=1, description="evidence one section is written from")

    def to_request(self) -> ResearchRequest:
        return ResearchRequest(
            question=self.question,
            conversation_id=self.conversation_id,
            preset=self.preset,
            web=self.web,
            filters=self.filters,
            collections=self.collections,
            step_top_k=self.step_top_k,
            write_top_k=self.write_top_k,
        )


class ResearchSectionOut(BaseModel):
    title: str
    question: str = Field(description="the self-contained sub-question the section answers")
    content: str = Field(description="Markdown citing the report's sources as [n]")
    source_numbers: list[int] = Field(description="the [n] this section cites")


class ResearchSourceOut(SourceOut):
    """One bibliography entry: /chat's source shape, plus how research found it."""

    pool_source: Literal["research_round", "eval_supplement", "write_stage", "web"] = Field(
        description="how research found it: first round, a gap search, at writing, or the web"
    )
    sections: list[int] = Field(description="indexes of the sections citing it")


class ResearchOut(BaseModel):
    run_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    question: str
    report: str = Field(
        description="Markdown: the short answer first (a single-fact question), a section per sub-question "
        "(one not yet supported by the evidence marked as a hypothesis), the chain's unsupported claims, "
        "then the sources; cites [n]"
    )
    short_answer: str | None = Field(
        description="a question that asks one thing (a name, a date, a number, yes/no): its normalised "
        "answer, as the report's first line; None otherwise (diagnostics.answer says why)"
    )
    sections: list[ResearchSectionOut]
    sources: list[ResearchSourceOut] = Field(description="the bibliography, numbered by first citation")
    partial: bool = Field(description="a budget ran out: written from the evidence found until then")
    partial_reasons: list[str] = Field(description="deadline, max_model_calls, max_tokens, max_searches")
    generator: str = Field(description="who wrote the sections: gemini, extractive, ... (+ when mixed)")
    diagnostics: ResearchDiagnostics


class ResearchRunSummaryOut(BaseModel):
    id: uuid.UUID
    status: RunStatus
    partial: bool
    stop_reasons: list[str]
    question: str
    preset: str
    conversation_id: uuid.UUID | None
    message_id: uuid.UUID | None
    created_at: datetime
    finished_at: datetime | None


class ResearchRunOut(ResearchRunSummaryOut):
    """A run as stored: the result is POST /research's answer once completed; error when it failed."""

    options: dict[str, Any]
    plan: dict[str, Any] | None
    budget: dict[str, Any]
    timings: dict[str, Any]
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    updated_at: datetime
