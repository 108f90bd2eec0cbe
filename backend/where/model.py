"""The WhereBuilder's model path: Gemini structured output (a JSON schema) read into conditions.

Whatever the model says is checked before it is used: dates must parse (a date without a zone is
midnight in the configured zone), a language / type / tag must be one the caller's documents hold, a
quality must lie in [0, 1], and a phrase to remove must occur in the question. Anything else is a
WhereModelError, and the builder falls back to the rules.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from backend.llm import LLM, load_prompt
from backend.llm.prompts import neutralise
from backend.where.rules import Inferred, Vocabulary

MAX_PROMPT_TAGS = 200  # the most frequent tags the model is shown

WHERE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "date_field": {"type": "string", "enum": ["created_at", "updated_at"]},
        "date_from": {"type": "string", "description": "ISO 8601, inclusive; empty: open"},
        "date_to": {"type": "string", "description": "ISO 8601, exclusive; empty: open"},
        "lang": {"type": "string"},
        "content_type": {"type": "string"},
        "media_type": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "min_quality": {"type": "number", "description": "0..1, or -1 for none"},
        "phrases": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["date_field", "date_from", "date_to", "lang", "tags", "min_quality", "phrases"],
}


class WhereModelError(Exception):
    """The model gave nothing usable (the message says why); the rules decide instead."""


def where_prompt(question: str, now: datetime, vocabulary: Vocabulary, high_quality_min: float) -> str:
    def listed(field: str, limit: int | None = None) -> str:
        values = vocabulary.ordered(field)[:limit]
        return neutralise(", ".join(values)) if values else "(none)"  # in the <document_values> block

    return load_prompt("where_filters").render(
        today=now.strftime("%Y-%m-%d %A %H:%M"),
        timezone=str(now.tzinfo),
        languages=listed("lang"),
        content_types=listed("content_type"),
        media_types=listed("media_type"),
        tags=listed("tags", MAX_PROMPT_TAGS),
        high_quality=high_quality_min,
        question=question,
    )


def infer_with_model(
    llm: LLM, question: str, now: datetime, vocabulary: Vocabulary, *, high_quality_min: float
) -> list[Inferred]:
    """The conditions the model reads in `question` (checked), or WhereModelError."""
    prompt = where_prompt(question, now, vocabulary, high_quality_min)
    value = llm.complete_json("", prompt, WHERE_SCHEMA)
    if value is None:
        raise WhereModelError("malformed output (no JSON object)")
    return conditions_from_json(value, question, now.tzinfo, vocabulary)


def conditions_from_json(
    value: dict[str, Any], question: str, zone: tzinfo | None, vocabulary: Vocabulary
) -> list[Inferred]:
    """The model's object as conditions; WhereModelError naming the first value that does not check."""
    phrases = [p for p in _strings(value.get("phrases")) if p.strip() and p in question]
    spans = [(question.index(p), question.index(p) + len(p)) for p in phrases]
    phrase = " ".join(phrases)
    found: list[Inferred] = []
    start, end = _date(value.get("date_from"), zone), _date(value.get("date_to"), zone)
    if start and end and start >= end:
        raise WhereModelError(f"date_from {start.isoformat()} is not before date_to {end.isoformat()}")
    if start or end:
        field = value.get("date_field")
        if field not in ("created_at", "updated_at"):
            raise WhereModelError(f"date_field {field!r} is neither created_at nor updated_at")
        condition = {"$gte": start.isoformat()} if start else {}
        condition |= {"$lt": end.isoformat()} if end else {}
        found.append(Inferred(field, condition, phrase, spans))
    for field in ("lang", "content_type", "media_type"):
        chosen = value.get(field) or ""
        if not isinstance(chosen, str):
            raise WhereModelError(f"{field} must be a string, got {chosen!r}")
        if chosen and not vocabulary.has(field, chosen):
            raise WhereModelError(f"{field} {chosen!r} is not a value of the documents")
        if chosen:
            found.append(Inferred(field, {"$eq": chosen}, phrase, spans))
    tags = [t for t in _strings(value.get("tags")) if vocabulary.has("tags", t)]
    if tags:
        found.append(Inferred("tags", {"$contains": tags[0]} if len(tags) == 1 else {"$in": tags}, phrase))
    quality = value.get("min_quality", -1)
    if isinstance(quality, bool) or not isinstance(quality, int | float):
        raise WhereModelError(f"min_quality must be a number, got {quality!r}")
    if quality > 1:
        raise WhereModelError(f"min_quality {quality} is above 1")
    if quality >= 0:
        found.append(Inferred("quality_score", {"$gte": float(quality)}, phrase, spans))
    return found


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WhereModelError(f"expected a list of strings, got {value!r}")
    return value


def _date(value: Any, zone: tzinfo | None) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise WhereModelError(f"a date must be an ISO 8601 string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise WhereModelError(f"{value!r} is not an ISO 8601 date") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=zone)
