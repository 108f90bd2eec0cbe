"""Judging one chat reply against the gold answers, and summing the judgements of a set."""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_MARKER = re.compile(r"\[\d+\]")
_SPACE = re.compile(r"\s+")

# Why an answer missed its gold string, from the chat's side of the pipe to the generator's.
CAUSES = (
    "not_found",  # the chat said the documents do not contain it
    "clarify",  # the chat asked which document was meant
    "gold_doc_not_in_context",  # retrieval / evidence selection did not give the generator the document
    "gold_string_not_in_context",  # the gold document is there but the passage given lacks the string
    "not_selected",  # the generator had the string and quoted something else
)


def normalise(text: str) -> str:
    """NFKC, case-folded, citation markers and all whitespace removed (Traditional/Simplified as-is).

    Whitespace goes entirely because gold strings of Chinese sets space numbers from units ("136 次")
    where passages do not, and the reverse."""
    return _SPACE.sub("", _MARKER.sub("", unicodedata.normalize("NFKC", text)).casefold())


def contains_gold(text: str, golds: Sequence[str]) -> bool:
    norm = normalise(text)
    return any(g and g in norm for g in (normalise(x) for x in golds))


def load_answers(path: Path) -> dict[str, list[str]]:
    """answers.jsonl: query id -> gold answer strings."""
    out: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out[str(row["_id"])] = [str(a) for a in row["answers"]]
    return out


def sample_ids(ids: Sequence[str], n: int | None, seed: str) -> list[str]:
    """A deterministic sample: the n ids with the smallest sha256(seed:id), in that order."""
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    return ranked if n is None else ranked[:n]


@dataclass
class Judged:
    """One question's reply, with what the benchmark concluded about it."""

    qid: str
    question: str
    golds: list[str]
    gold_docs: list[str]
    generator: str  # extractive | none | clarify
    answer: str
    cited_docs: list[str]
    context: list[dict[str, Any]]  # what the generator saw: n, external_id, title, heading, content
    numbered: list[str]  # external_id of every numbered source ([1] first), context and extra
    has_gold: bool = False
    cites_gold_doc: bool = False
    cause: str | None = None


def judge(item: Judged) -> Judged:
    """Fill has_gold, cites_gold_doc and, for a miss, its cause."""
    item.has_gold = contains_gold(item.answer, item.golds)
    item.cites_gold_doc = any(d in item.gold_docs for d in item.cited_docs)
    item.cause = None if item.has_gold else _cause(item)
    return item


def _cause(item: Judged) -> str:
    if item.generator == "none":
        return "not_found"
    if item.generator == "clarify":
        return "clarify"
    gold_sources = [s for s in item.context if s["external_id"] in item.gold_docs]
    if not gold_sources:
        return "gold_doc_not_in_context"
    if not any(contains_gold(s["content"], item.golds) for s in item.context):
        return "gold_string_not_in_context"
    return "not_selected"


def summarise(items: Sequence[Judged]) -> dict[str, Any]:
    """The set's figures: rates, answer lengths (extractive replies only), causes of misses."""
    n = max(len(items), 1)
    # What a user reads, [n] markers included; fixed replies (not found, clarify) are not answers.
    lengths = [len(i.answer) for i in items if i.generator not in ("none", "clarify")]
    causes = Counter(i.cause for i in items if i.cause)
    return {
        "questions": len(items),
        "gold_string_rate": sum(i.has_gold for i in items) / n,
        "gold_doc_cited_rate": sum(i.cites_gold_doc for i in items) / n,
        "not_found_rate": sum(i.generator == "none" for i in items) / n,
        "clarify_rate": sum(i.generator == "clarify" for i in items) / n,
        "answer_chars_median": statistics.median(lengths) if lengths else 0,
        "answer_chars_mean": statistics.fmean(lengths) if lengths else 0,
        "answer_chars_p90": _quantile(lengths, 0.9),
        "misses": {c: causes.get(c, 0) for c in CAUSES},
    }


def _quantile(values: Sequence[int], q: float) -> float:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def as_record(item: Judged) -> dict[str, Any]:
    return asdict(item)
