"""The branch's reflection after a search round (seed RESEARCH_REFLECT_PROMPT): what is established,
what is missing, which one or two entities deserve an encyclopedia check, which candidates a list in
the evidence offers, and which passages hit several anchors of the sub-question at once.

The model reflects in the same call that judges sufficiency (evaluate.py extends that call's JSON);
each field it leaves out or garbles falls back to the heuristic form here, so a malformed reflection
never costs the verdict. The reflection drives the next round: the entity check, a search per
candidate, and the gap queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.llm.parsing import clean_line
from backend.research.records import EvidenceRecord, Reliability, apply_ratings, heuristic_records
from backend.research.types import EvidenceItem
from backend.text.answers import asks_for_a_name, extract_answer, normalise_answer, question_type
from backend.text.names import anchor_count, anchor_terms, candidate_set, named_entities

MAX_LIST = 5

ReflectionMethod = Literal["llm", "heuristic"]


@dataclass
class ModelReflection:
    """The reflection fields of the model's verdict; None where it gave nothing usable."""

    established: list[str] | None = None
    entities: list[str] | None = None
    candidates: list[str] | None = None
    hypotheses: list[str] | None = None
    answer: str | None = None  # the sub-question's answer as the evidence states it
    ratings: dict[int, tuple[str, Reliability | None]] = field(default_factory=dict)


@dataclass
class Reflection:
    round: int
    method: ReflectionMethod
    established: list[str]
    missing: str
    entities: list[str]  # worth an encyclopedia check (checks.py)
    candidates: list[str]  # a candidate set to check one by one (checks.py)
    hypotheses: list[str]  # claims the evidence does not support yet
    anchors: list[str]  # the sub-question's anchors (multi-anchor hits)
    strong_hits: list[int]  # evidence ids of passages naming several anchors at once
    records: list[EvidenceRecord]
    # The sub-question's answer when the evidence states one (a name, a date, a number): what a
    # multi-hop step after this one searches with (bridge.py). None: not found, or an open question.
    answer: str | None = None

    def as_event(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "method": self.method,
            "established": self.established,
            "missing": self.missing,
            "entities": self.entities,
            "candidates": self.candidates,
            "hypotheses": self.hypotheses,
            "anchors": self.anchors,
            "strong_hits": self.strong_hits,
            "records": [r.as_dict() for r in self.records],  # the event's; stored: ratings only
            "answer": self.answer,
        }


def reflect(
    question: str,
    round_no: int,
    ranked: Sequence[EvidenceItem],
    *,
    missing: str,
    model: ModelReflection | None,
    max_entities: int,
    previous: Reflection | None = None,
) -> Reflection:
    """The round's reflection: the model's fields where it gave them, the heuristic's elsewhere."""
    anchors = anchor_terms(question)
    records = heuristic_records(ranked, anchors)
    if model is not None:
        apply_ratings(records, model.ratings)
    strong = [r.id for r in records if r.strong_hit]
    # A strong hit is the best evidence there is: it comes first wherever the top evidence is read.
    texts = [i.chunk.content for i in sorted(ranked, key=lambda i: i.id not in strong)]
    # Heuristically, what is established is which anchors of the sub-question trusted evidence names
    # (the question's words, never the passages': a stored run keeps no copy of a document's text).
    trusted = " ".join(
        i.chunk.content for i, r in zip(ranked, records, strict=True) if r.reliability != "low"
    )
    established = [a for a in anchors if anchor_count(trusted, [a])]
    candidates = candidate_set(question, texts[:3]) if asks_for_a_name(question) else []
    entities = named_entities(question, limit=max_entities)
    if len(entities) < max_entities and texts:
        entities += [e for e in named_entities(texts[0], limit=max_entities) if e not in entities]
    used_model = model is not None
    m = model or ModelReflection()
    kind = question_type(question)
    answer = m.answer
    if answer is None and kind is not None and kind != "yesno":
        answer = extract_answer(question, kind, texts[:3])
    return Reflection(
        round=round_no,
        method="llm" if used_model else "heuristic",
        established=m.established if m.established is not None else established,
        missing=missing,
        entities=(m.entities if m.entities is not None else entities)[:max_entities],
        candidates=(m.candidates if m.candidates is not None else candidates)[:MAX_LIST],
        # The model's latest list when it gave one (it may have confirmed one), else the last round's.
        hypotheses=m.hypotheses if m.hypotheses is not None else (previous.hypotheses if previous else []),
        anchors=anchors,
        strong_hits=strong,
        records=records,
        answer=answer,
    )


def model_reflection(value: dict[str, Any]) -> ModelReflection:
    """The reflection fields of the verdict JSON, each checked on its own (a bad one is None)."""
    return ModelReflection(
        established=_strings(value.get("established"), 200),
        entities=_strings(value.get("entities"), 40),
        candidates=_strings(value.get("candidates"), 40),
        hypotheses=_strings(value.get("hypotheses"), 200),
        answer=_answer(value.get("answer")),
        ratings=_ratings(value.get("evidence")),
    )


def _strings(value: Any, max_chars: int) -> list[str] | None:
    if not isinstance(value, list):
        return None
    cleaned = [clean_line(v) for v in value if isinstance(v, str)]
    return [v for v in dict.fromkeys(cleaned) if 1 <= len(v) <= max_chars][:MAX_LIST]


def _answer(value: Any) -> str | None:
    """The model's answer: one short line, or None (left out, empty, or not text)."""
    text = normalise_answer(clean_line(value)) if isinstance(value, str) else ""
    return text or None


def _ratings(value: Any) -> dict[int, tuple[str, Reliability | None]]:
    out: dict[int, tuple[str, Reliability | None]] = {}
    for entry in value if isinstance(value, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            continue
        statement = entry.get("statement")
        level = entry.get("reliability")
        reliability: Reliability | None = level if level in ("high", "medium", "low") else None
        out[entry["id"]] = (clean_line(statement) if isinstance(statement, str) else "", reliability)
    return out
