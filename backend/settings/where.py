"""The WhereBuilder: filters inferred from the question (issue 15; seed retrieval-layer.md).

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class WhereSettings(BaseModel):
    # --- WhereBuilder: filters inferred from the question (issue 15; seed retrieval-layer.md) ----
    where_builder: Literal["auto", "rules", "llm", "gemini"] = Field(
        default="auto",
        description="How infer_filters reads a question: rules; llm (the configured LLM's structured "
        "output, the rules as fallback on any failure); gemini (Gemini whatever LLM_PROVIDER says); auto: "
        "llm when LLM_PROVIDER is gemini or openai_compatible, else rules.",
    )
    where_timezone: str = Field(
        default="UTC",
        description="IANA zone of calendar words (今天, 上个月, last week), e.g. Asia/Shanghai.",
    )
    where_llm_timeout_s: float = Field(
        default=3.0, gt=0, le=60, description="Longest wait for the model's filters before the rules decide."
    )
    where_relax_enabled: bool = Field(
        default=True,
        description="When a search with inferred filters finds nothing, search once more without them "
        "(the request's `relax` overrides); the diagnostics say what was dropped.",
    )
    where_high_quality_min: float = Field(
        default=0.8, ge=0, le=1, description="The quality_score floor that 高质量 / high quality means."
    )
    where_infer_tags: bool = Field(
        default=True,
        description="A known tag named in the question becomes a tags filter (#tag always does).",
    )
    where_vocabulary_ttl_s: float = Field(
        default=60.0, ge=0, description="How long a caller's tags / languages / types are cached."
    )
    where_vocabulary_max_values: int = Field(
        default=5000, ge=1, le=100_000, description="Most distinct metadata values read for matching."
    )
