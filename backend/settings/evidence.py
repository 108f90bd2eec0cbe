"""A chat turn's evidence: budgets, gap supplement, relevance gate, confidence and clarify (seeds:
evidence-retention, overall-score-confidence).

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

ConfidenceLevel = Literal["low", "medium", "high"]
DEFAULT_CLARIFY_LEVELS: tuple[ConfidenceLevel, ...] = ("low", "medium")


class EvidenceSettings(BaseModel):
    # --- evidence budgets, gap supplement, confidence (seeds: evidence-retention, overall-score-confidence)
    local_top_k: int | None = Field(default=None, ge=1, description="None: rag_top_k_max.")
    step_top_k: int | None = Field(default=None, ge=1, description="None: local_top_k.")
    write_top_k: int | None = Field(default=None, ge=1, description="None: step_top_k.")
    chat_gap_supplement_enabled: bool = True
    chat_gap_max_queries: int = Field(default=3, ge=1, le=10)
    chat_gap_ratio: float = Field(default=0.2, ge=0, le=1)
    chat_gap_missing_idf_share: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Gap searches run when question terms the corpus has but the evidence lacks carry "
        "this share of the question's idf (a rare missing name triggers, a generic word does not).",
    )
    chat_rank_pool_multiplier: float = Field(default=3.0, gt=0)
    chat_second_chance_enabled: bool = Field(
        default=True,
        description="A weak first search (it would route to not found / the web) is reformulated once - "
        "keywords, the other language (with a model), without inferred filters - and searched again "
        "before routing; the best confidence goes on.",
    )
    chat_assist_tools: bool = Field(
        default=True,
        description="Assist mode: a model that can call functions (Gemini) may run search_local / "
        "search_web while answering; what it finds joins the cited sources.",
    )
    chat_assist_max_calls: int = Field(default=3, ge=0, le=10, description="Tool calls per answer.")
    chat_clarify_enabled: bool = True
    chat_clarify_levels: list[ConfidenceLevel] = Field(
        default_factory=lambda: list(DEFAULT_CLARIFY_LEVELS),
        description="Clarify only at these confidence levels: a strongly supported best answer is given.",
    )
    score_policy_version: str = "v7"  # v3 in one language, a cross-lingual branch (docs/routing.md)
    score_policies_dir: Path | None = Field(default=None, description="None: the shipped policies.")
    confidence_top_n: int = Field(default=5, ge=1, le=50)
