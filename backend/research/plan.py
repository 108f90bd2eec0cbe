"""The plan: sections (sub-questions with their searches) asked of the model as JSON, checked, and
replaced by the heuristic plan whenever the model cannot give a usable one."""

from __future__ import annotations

from typing import Any

from backend.llm import load_prompt
from backend.llm.parsing import clean_line
from backend.research.heuristic_plan import heuristic_plan
from backend.research.model import ResearchModel
from backend.research.presets import Preset
from backend.research.types import PRIORITIES, Plan, SectionPlan
from backend.web.routing import ROUTED_ENGINES, classify

MAX_QUERY_CHARS = 300

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sections": {
            "type": "array",
            "minItems": 1,
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "question": {"type": "string"},
                    "queries": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                    "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                    "engine": {"type": "string", "enum": list(ROUTED_ENGINES)},
                    "after": {"type": "integer", "minimum": 0},
                    "bridge": {"type": "string"},
                },
                "required": ["title", "question", "queries"],
            },
        }
    },
    "required": ["sections"],
}


async def make_plan(question: str, model: ResearchModel, preset: Preset) -> Plan:
    """The model's plan when it gives a usable one, else the heuristic plan (with the reason)."""
    fallback = heuristic_plan(
        question, max_sections=preset.max_sections, queries_per_section=preset.queries_per_section
    )
    if not model.generative:
        return fallback
    prompt = load_prompt("research_plan").render(
        question=question, max_sections=preset.max_sections, max_queries=preset.queries_per_section
    )
    value, outcome = await model.complete_json("plan", "", prompt, PLAN_SCHEMA)
    if value is None:
        return Plan(fallback.sections, "heuristic", outcome.failure or "no plan")
    sections = sections_from_json(value, preset)
    if not sections:
        return Plan(fallback.sections, "heuristic", "malformed plan (no usable section)")
    return Plan(sections, "llm")


def sections_from_json(value: dict[str, Any], preset: Preset) -> list[SectionPlan]:
    """The usable sections of a model's plan: text cleaned of markdown and labels, empty or repeated
    sections dropped, at most max_sections with at most queries_per_section searches each."""
    raw = value.get("sections")
    if not isinstance(raw, list):
        return []
    sections: list[SectionPlan] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            continue
        question = _text(item.get("question")) or _text(item.get("title"))
        if not question or _key(question) in seen:
            continue
        seen.add(_key(question))
        title = _text(item.get("title")) or question
        queries = [question]
        for query in _list(item.get("queries")):
            text = _text(query)
            if text and _key(text) not in {_key(q) for q in queries}:
                queries.append(text)
        engine, reason = _engine(item.get("engine"), question)
        after, bridge = _hop(item, question, len(sections))
        priority = item.get("priority")
        sections.append(
            SectionPlan(
                title[:120],
                question,
                queries[: preset.queries_per_section],
                engine,
                reason,
                priority=priority if priority in PRIORITIES else "high",
                after=after,
                bridge=bridge,
            )
        )
        if len(sections) == preset.max_sections:
            break
    return sections


def _hop(item: dict[str, Any], question: str, index: int) -> tuple[int | None, str | None]:
    """A multi-hop step's earlier section and the words standing for its answer; (None, None) unless
    both are usable: an earlier section, words the sub-question holds."""
    after, bridge = item.get("after"), item.get("bridge")
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < index:
        return None, None
    if not isinstance(bridge, str) or not bridge.strip() or bridge.strip() not in question:
        return None, None
    return after, bridge.strip()


def _engine(value: Any, question: str) -> tuple[str, str]:
    """The model's engine for a section when it names a known one, else the routing rule's."""
    named = value.strip().lower() if isinstance(value, str) else ""
    if named in ROUTED_ENGINES:
        return named, "the plan's model chose it"
    _, engines, reason = classify(question)
    why = "the model named no engine" if value is None else f"the model named an unknown engine {value!r}"
    return engines[0], f"rule: {reason} ({why})"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    text = clean_line(" ".join(value.split()))
    return text if 2 <= len(text) <= MAX_QUERY_CHARS else ""


def _key(text: str) -> str:
    return "".join(text.lower().split()).rstrip("？?。.")
