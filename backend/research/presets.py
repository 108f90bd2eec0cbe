"""Research presets: how much evidence each step keeps (seed: evidence-retention.md 三) and the budgets.

The evidence shape of a preset is the seed's table (write_k 8 / cap 30 for lite, 12 / 60 for
comprehensive); the budgets (deadline, model calls, tokens, searches) are settings, per preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from backend.config import Settings
from backend.errors import InvalidInput

PresetName = Literal["lite", "comprehensive"]
MAX_SECTIONS = 4  # the seed's cap on sub-questions (multi-agent-research.md, Occam's razor)


@dataclass(frozen=True)
class Preset:
    name: PresetName
    max_sections: int
    max_loops: int  # gap-search rounds after the first round of a section
    queries_per_section: int  # searches of a section's first round (its question + planned queries)
    gap_queries_per_round: int
    step_top_k: int  # chunks one search keeps (the seed's step_top_k)
    eval_top_k: int  # pool evidence the sufficiency check reads (the seed's eval_top_k ~ 20)
    write_k: int  # the seed's search_top_k_write: evidence one section is written from
    write_k_cap: int  # search_top_k_write_max


@dataclass(frozen=True)
class RunLimits:
    """The budgets one run may spend; when any runs out, no new work starts."""

    deadline_s: float
    max_model_calls: int
    max_tokens: int
    max_searches: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "deadline_s": self.deadline_s,
            "max_model_calls": self.max_model_calls,
            "max_tokens": self.max_tokens,
            "max_searches": self.max_searches,
        }


def preset(name: PresetName, settings: Settings) -> Preset:
    """The preset `name` with the settings' MAX_LOOPS (lite never runs more than one gap round)."""
    # Every thing asked gets its section in both presets (a fourth part merged into the third is
    # searched and written as one muddled question); lite spends less per section instead.
    if name == "lite":
        return Preset(
            name="lite",
            max_sections=MAX_SECTIONS,
            max_loops=min(1, settings.research_max_loops),
            queries_per_section=2,
            gap_queries_per_round=2,
            step_top_k=8,
            eval_top_k=10,
            write_k=8,
            write_k_cap=30,
        )
    return Preset(
        name="comprehensive",
        max_sections=MAX_SECTIONS,
        max_loops=settings.research_max_loops,
        queries_per_section=3,
        gap_queries_per_round=3,
        step_top_k=12,
        eval_top_k=20,
        write_k=12,
        write_k_cap=60,
    )


def run_limits(name: PresetName, settings: Settings) -> RunLimits:
    """The budgets of one run of preset `name`: its RESEARCH_<PRESET>_* settings."""
    if name == "lite":
        return RunLimits(
            deadline_s=settings.research_lite_deadline_s,
            max_model_calls=settings.research_lite_max_model_calls,
            max_tokens=settings.research_lite_max_tokens,
            max_searches=settings.research_lite_max_searches,
        )
    return RunLimits(
        deadline_s=settings.research_comprehensive_deadline_s,
        max_model_calls=settings.research_comprehensive_max_model_calls,
        max_tokens=settings.research_comprehensive_max_tokens,
        max_searches=settings.research_comprehensive_max_searches,
    )


def effective_step_k(p: Preset, step_top_k: int | None, settings: Settings) -> int:
    """Chunks one research search keeps: the request's, else RESEARCH_STEP_TOP_K, else the preset's."""
    step = step_top_k or settings.research_step_top_k or p.step_top_k
    if step > settings.search_max_top_k:
        raise InvalidInput(f"step_top_k ({step}) exceeds the limit of {settings.search_max_top_k}")
    return step


def effective_write_k(p: Preset, step_top_k: int | None, write_top_k: int | None) -> int:
    """The seed's _compute_effective_write_k: an explicit write_top_k, else 1.5 x step_top_k, never below
    the preset's write_k and never above its cap."""
    if write_top_k and write_top_k > 0:
        return min(max(p.write_k, write_top_k), p.write_k_cap)
    if step_top_k and step_top_k > 0:
        return min(max(p.write_k, int(step_top_k * 1.5)), p.write_k_cap)
    return p.write_k
