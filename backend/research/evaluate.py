"""Evaluate a section: is its evidence sufficient, and if not, what to search for next.

The model judges the chain of reasoning (seed 012: "充分/不充分", not a rigid percentage), told the
retrieval confidence of the section question and every query the run already asked, so it never
proposes one twice. Without a model (or when it fails) the chat's scarcity test decides: confidence
low, fewer than two relevant passages, or distinctive question terms the evidence lacks; gap queries
are then built from the missing terms.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.chat.gap import keyword_gap_queries, scarce
from backend.config import Settings
from backend.llm import load_prompt
from backend.llm.parsing import clean_line
from backend.llm.prompts import neutralise
from backend.research.model import ResearchModel
from backend.research.presets import Preset
from backend.research.reflect import ModelReflection, model_reflection
from backend.search.types import ScoredChunk, SearchResult

_EVIDENCE_CHARS = 300
_LEVELS = ("low", "medium", "high")
_TRUE = frozenset({"true", "yes", "sufficient", "充分", "是", "足够"})
_FALSE = frozenset({"false", "no", "insufficient", "不充分", "否", "不足"})

SUFFICIENCY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sufficient": {"type": "boolean"},
        "missing": {"type": "string"},
        "gap_queries": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        # The reflection (reflect.py), asked in the same call: one model call per round, not two.
        "established": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "entities": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "candidates": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "hypotheses": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "answer": {"type": "string"},
        "evidence": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "statement": {"type": "string"},
                    "reliability": {"type": "string", "enum": ["high", "medium", "low"]},
                },
                "required": ["id", "statement", "reliability"],
            },
        },
    },
    "required": ["sufficient", "gap_queries"],
}

VerdictMethod = Literal["llm", "heuristic", "none"]


class QueryLedger:
    """Every query the run has searched (normalised), shared by its sections: nothing is asked twice;
    and every direction the run pruned, with why: never searched or planned again."""

    def __init__(self) -> None:
        self._queries: dict[str, str] = {}
        self._pruned: dict[str, tuple[str, str]] = {}  # key -> (the direction, why it was pruned)
        self._lock = threading.Lock()

    def claim(self, query: str) -> bool:
        """Record `query`; False when it (or the same text with other spacing or case) was asked or
        its direction was pruned."""
        key = normalise_query(query)
        with self._lock:
            if not key or key in self._queries or key in self._pruned:
                return False
            self._queries[key] = query
            return True

    def prune(self, direction: str, reason: str) -> None:
        key = normalise_query(direction)
        with self._lock:
            if key:
                self._pruned.setdefault(key, (direction, reason))

    def is_pruned(self, direction: str) -> bool:
        with self._lock:
            return normalise_query(direction) in self._pruned

    def was_asked(self, query: str) -> bool:
        with self._lock:
            return normalise_query(query) in self._queries

    def pruned(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._pruned.values())

    def asked(self) -> list[str]:
        with self._lock:
            return list(self._queries.values())


def normalise_query(query: str) -> str:
    return "".join(query.lower().split()).strip("？?。.!！")


@dataclass
class Verdict:
    sufficient: bool
    method: VerdictMethod
    reason: str | None  # why insufficient (or why no verdict)
    confidence_level: str
    best_overall_score: float | None
    gap_queries: list[str] = field(default_factory=list)
    missing: str = ""
    model_failure: str | None = None  # the model was asked and gave nothing usable
    reflection: ModelReflection | None = None  # the model's reflection fields (None: heuristic)

    def as_event(self) -> dict[str, Any]:
        return {
            "sufficient": self.sufficient,
            "method": self.method,
            "reason": self.reason,
            "missing": self.missing,
            "confidence_level": self.confidence_level,
            "best_overall_score": self.best_overall_score,
            "gap_queries": self.gap_queries,
            "model_failure": self.model_failure,
        }


def section_confidence(searches: Sequence[SearchResult]) -> tuple[str, float | None]:
    """The section's retrieval confidence: the best level (and score) among its searches, the section
    question's own first - a gap query that finds the answer with high confidence counts.

    This is where research reads the confidence contract (overall-score-confidence.md section 10):
    `confidence_level` and `best_overall_score` of each search's `confidence`.
    """
    levels = [s.confidence.get("confidence_level") for s in searches]
    scores = [s.confidence.get("best_overall_score") for s in searches]
    level = max((lv for lv in levels if lv in _LEVELS), key=_LEVELS.index, default="low")
    known = [float(x) for x in scores if isinstance(x, int | float)]
    return level, max(known) if known else None


async def judge(
    question: str,
    original_question: str,
    ranked: Sequence[ScoredChunk],
    searches: Sequence[SearchResult],
    *,
    ids: Sequence[int] | None = None,
    model: ResearchModel,
    ledger: QueryLedger,
    preset: Preset,
    settings: Settings,
) -> Verdict:
    """The model's verdict when it gives one; else the heuristic's ('none' when the budget refused)."""
    level, score = section_confidence(searches)
    failure = None
    if model.generative:
        prompt = load_prompt("research_sufficiency").render(
            question=question,
            original_question=original_question,
            confidence_level=level,
            completed_queries="\n".join(f"- {q}" for q in ledger.asked()) or "(none)",
            evidence=_summary(ranked[: preset.eval_top_k], ids),
            max_queries=preset.gap_queries_per_round,
        )
        value, outcome = await model.complete_json("research", "", prompt, SUFFICIENCY_SCHEMA)
        if outcome.failure and outcome.failure.startswith("budget"):
            return Verdict(False, "none", outcome.failure, level, score)
        verdict = _from_json(value, level, score, preset) if value is not None else None
        if verdict is not None:
            if not verdict.sufficient and not verdict.gap_queries:
                verdict.gap_queries = _keyword_queries(question, ranked, preset)
            return verdict
        failure = outcome.failure or "malformed verdict"
    verdict = heuristic_verdict(question, ranked, searches, level, score, preset, settings)
    verdict.model_failure = failure
    return verdict


def heuristic_verdict(
    question: str,
    ranked: Sequence[ScoredChunk],
    searches: Sequence[SearchResult],
    level: str,
    score: float | None,
    preset: Preset,
    settings: Settings,
) -> Verdict:
    anchor = searches[0]
    reason = scarce(
        list(ranked[: preset.write_k]),
        {"confidence_level": level},
        anchor.diagnostics.query_terms,
        anchor.term_stats,
        settings.chat_gap_missing_idf_share,
    )
    gaps = _keyword_queries(question, ranked, preset) if reason else []
    return Verdict(reason is None, "heuristic", reason, level, score, gaps)


def _from_json(value: dict[str, Any], level: str, score: float | None, preset: Preset) -> Verdict | None:
    raw = value.get("sufficient")
    if isinstance(raw, str):
        word = clean_line(raw).lower()
        raw = True if word in _TRUE else False if word in _FALSE else None
    if not isinstance(raw, bool):
        return None
    queries = value.get("gap_queries")
    cleaned = [clean_line(q) for q in queries if isinstance(q, str)] if isinstance(queries, list) else []
    gaps = [q for q in cleaned if 2 <= len(q) <= 300][: preset.gap_queries_per_round]
    raw_missing = value.get("missing")
    missing = clean_line(raw_missing) if isinstance(raw_missing, str) else ""
    reason = None if raw else (missing or "the model found the evidence insufficient")
    verdict = Verdict(raw, "llm", reason, level, score, [] if raw else gaps, missing)
    verdict.reflection = model_reflection(value)
    return verdict


def _keyword_queries(question: str, ranked: Sequence[ScoredChunk], preset: Preset) -> list[str]:
    return keyword_gap_queries(question, list(ranked[: preset.write_k]), preset.gap_queries_per_round)


def _summary(chunks: Sequence[ScoredChunk], ids: Sequence[int] | None = None) -> str:
    """The evidence as the prompt shows it, each passage under its evidence id (the model rates by id)."""
    lines = []
    numbers = list(ids) if ids is not None else range(1, len(chunks) + 1)
    for k, chunk in zip(numbers, chunks, strict=False):
        label = " > ".join(p for p in (chunk.title, chunk.heading) if p)
        text = " ".join(chunk.content.split())
        lines.append(f"[{k}] {label}: {text[:_EVIDENCE_CHARS]}")
    return neutralise("\n".join(lines)) or "(nothing found)"  # inside the prompt's <evidence> block
