"""The two measures of bench.where over the WhereBuilder as /search runs it (rules, the filter compiler
with the default whitelist), without a database: the vocabulary is fixed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.config import DEFAULT_METADATA_WHITELIST
from backend.retrieval.filters import DATE_FIELDS, compile_filter
from backend.where.builder import WhereBuilder
from backend.where.rules import Inferred, Vocabulary
from bench.common import bench_settings
from bench.where.scoping import NOW, SCOPING, ZONE, expected_condition

VOCABULARY = Vocabulary(
    {"lang": ["zh", "en"], "content_type": ["application/pdf", "text/markdown", "text/plain", "text/html"]}
)


class NoQuestions(SystemExit):
    """No question file under the datasets folder: the message names the path (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


@dataclass
class DatasetRate:
    name: str
    questions: int
    flagged: list[tuple[str, Inferred]] = field(default_factory=list)  # (question, its date condition)

    @property
    def rate(self) -> float:
        return len(self.flagged) / self.questions if self.questions else 0.0


@dataclass
class ScopingRate:
    total: int
    missed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (question, what it got)

    @property
    def rate(self) -> float:
        return (self.total - len(self.missed)) / self.total if self.total else 0.0


def make_builder() -> WhereBuilder:
    """The rules WhereBuilder at the bench's fixed now and zone."""
    settings = bench_settings(where_builder="rules", where_timezone=str(ZONE))
    whitelist = list(DEFAULT_METADATA_WHITELIST)
    return WhereBuilder(
        settings,
        lambda identity: VOCABULARY,
        lambda filters: compile_filter(filters, whitelist),
        clock=lambda: NOW,
    )


def date_condition(builder: WhereBuilder, question: str) -> Inferred | None:
    """The document-date condition the builder applies to `question`, if any."""
    plan = builder.plan(question, None, infer=True, identity=LOCAL_IDENTITY)
    return next((item for item in plan.applied if item.field in DATE_FIELDS), None)


def question_files(root: Path) -> list[Path]:
    """Every <dataset>/queries.jsonl under root, by name; NoQuestions naming root when there is none."""
    files = sorted(root.glob("*/queries.jsonl"))
    if not files:
        state = "does not exist" if not root.is_dir() else "holds no <dataset>/queries.jsonl"
        raise NoQuestions(f"development datasets: {root.resolve()} {state} (pass --datasets-dir)")
    return files


def dataset_rate(builder: WhereBuilder, path: Path) -> DatasetRate:
    """The share of one dataset's questions that get a date filter (all of them false ones)."""
    with path.open(encoding="utf-8") as fh:
        questions = [json.loads(line)["text"] for line in fh if line.strip()]
    out = DatasetRate(path.parent.name, len(questions))
    for question in questions:
        found = date_condition(builder, question)
        if found is not None:
            out.flagged.append((question, found))
    return out


def scoping_rate(builder: WhereBuilder) -> ScopingRate:
    """How many of the hand-written scoping questions get exactly their range on their field."""
    out = ScopingRate(len(SCOPING))
    for item in SCOPING:
        found = date_condition(builder, item.question)
        got = {found.field: found.condition} if found else {}
        if got != {item.field: expected_condition(item)}:
            out.missed.append((item.question, got))
    return out
