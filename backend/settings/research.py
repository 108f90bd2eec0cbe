"""Deep research (issue 14; seeds: multi-agent-research.md, evidence-retention.md 三): the presets' budgets.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ResearchSettings(BaseModel):
    # --- deep research (issue 14; seeds: multi-agent-research.md, evidence-retention.md 三) -------
    # POST /research: a plan of <= 4 sections researched in parallel, each with its own evidence pool,
    # then a cited report. Every run is bounded by the budgets of its preset (lite | comprehensive);
    # when one runs out no new work starts, the report is written from what exists and marked partial.
    research_default_preset: Literal["lite", "comprehensive"] = "lite"
    research_max_loops: int = Field(
        default=2,
        ge=0,
        le=5,
        description="MAX_LOOPS: gap-search rounds a section may run after its first search round "
        "(comprehensive; lite runs at most 1).",
    )
    research_step_top_k: int | None = Field(
        default=None, ge=1, le=100, description="Chunks one research search keeps; None: the preset's."
    )
    research_write_top_k: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Evidence a section is written from; None: max(preset, 1.5 x step_top_k), capped.",
    )
    research_gap_ratio: float = Field(
        default=0.25, ge=0, le=1, description="Share of a section's evidence reserved for gap-search finds."
    )
    research_rank_pool_multiplier: float = Field(default=3.0, gt=0)
    research_context_max_tokens: int = Field(
        default=6000, ge=500, description="Token budget of one section's sources in the model's context."
    )
    research_parallel_sections: int = Field(default=4, ge=1, le=4, description="Sections researched at once.")
    research_parallel_searches: int = Field(
        default=2, ge=1, le=16, description="Searches in flight per run (each holds a connection)."
    )
    research_model_timeout_s: float = Field(
        default=45.0, gt=0, description="Longest one model call of a run may take before its fallback."
    )
    research_write_reserve: float = Field(
        default=0.25,
        ge=0.05,
        le=0.9,
        description="Share of the deadline kept for writing: research stops at deadline x (1 - this).",
    )
    research_heartbeat_s: float = Field(
        default=10.0,
        gt=0,
        description="A quiet SSE stream sends a comment this often (proxies, disconnects).",
    )
    research_lite_deadline_s: float = Field(default=90.0, gt=0, le=3600)
    research_lite_max_model_calls: int = Field(default=12, ge=1)
    research_lite_max_tokens: int = Field(default=80_000, ge=1000)
    research_lite_max_searches: int = Field(default=16, ge=1)
    research_comprehensive_deadline_s: float = Field(default=240.0, gt=0, le=3600)
    research_comprehensive_max_model_calls: int = Field(default=30, ge=1)
    research_comprehensive_max_tokens: int = Field(default=250_000, ge=1000)
    research_comprehensive_max_searches: int = Field(default=40, ge=1)
    # --- the branch's reasoning steps (issue 30; seed multi-agent-research.md) --------------------
    research_entity_checks: int = Field(
        default=1,  # the seed's MAX_BAIKE_VERIFY
        ge=0,
        le=4,
        description="Entities a run checks in the encyclopedia (the 'baike' web provider) after a "
        "section's reflection names them; 0: never. Each check is one search of the run's budget.",
    )
    research_max_candidates: int = Field(
        default=5,
        ge=0,
        le=10,
        description="Candidates of a candidate set (a list of names a section found) checked one by one "
        "with a search each (the candidate with the question's anchors); 0: never.",
    )
    research_gap_sections: int = Field(
        default=2,
        ge=0,
        le=4,
        description="Sub-questions the global verify may send back to the planner per loop (only the "
        "reasoning chain's gaps; at most MAX_LOOPS loops).",
    )
