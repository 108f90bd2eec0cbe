"""Citations: the numbers [n] an answer cites its sources by, which of them are valid, and the numbered
source records stored with the answer (messages.sources; /conversations redraws them).

The sources of a turn are numbered once, in this order: the context's chunks [1..m] (what the model
sees), then further evidence (citable, not shown), then what the model's own searches found (assist
mode). Deep research renumbers its sections' sources into one list (backend/research/assemble.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backend.ingest.provenance import source_provenance
from backend.search.types import ScoredChunk
from backend.text.hygiene import drop_unstorable

# A citation marker: [1], [1, 2], [1，2、3] (group 1: the numbers).
MARKER = re.compile(r"\[(\s*\d+(?:\s*[,，、]\s*\d+)*\s*)\]")
SNIPPET_CHARS = 300


@dataclass(frozen=True)
class Cited:
    answer: str  # markers that point at no source removed
    cited: set[int]  # the source numbers the answer cites
    removed: int  # markers removed
    sources: list[dict[str, Any]]  # every numbered source, as stored


def cite(raw_answer: str, numbered: Sequence[ScoredChunk], *, answerable: bool, in_context: int) -> Cited:
    """The answer's citations checked against the numbered sources (none are citable in a reply that
    needs no model), and the source records; [1..in_context] were in the model's context."""
    answer, cited, removed = validate_citations(raw_answer, len(numbered) if answerable else 0)
    sources = [
        source_record(n, chunk, cited=n in cited, in_context=answerable and n <= in_context)
        for n, chunk in enumerate(numbered, 1)
    ]
    return Cited(answer, cited, removed, sources)


def validate_citations(answer: str, n_sources: int) -> tuple[str, set[int], int]:
    """Drop markers that point at no source; returns (clean answer, cited numbers, removed count)."""
    cited: set[int] = set()
    removed = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal removed
        numbers = [int(x) for x in re.split(r"\s*[,，、]\s*", match.group(1).strip())]
        valid = [n for n in numbers if 1 <= n <= n_sources]
        removed += len(numbers) - len(valid)
        cited.update(valid)
        return "".join(f"[{n}]" for n in valid)

    # A source can talk the model into writing a NUL; the answer must still be storable.
    clean = MARKER.sub(fix, drop_unstorable(answer))
    return re.sub(r"[ \t]+([。.,，!！?？])", r"\1", clean), cited, removed


def source_record(n: int, chunk: ScoredChunk, *, cited: bool, in_context: bool) -> dict[str, Any]:
    """One numbered source as messages.sources stores it (and /conversations redraws it)."""
    snippet = chunk.content if len(chunk.content) <= SNIPPET_CHARS else chunk.content[:SNIPPET_CHARS] + "…"
    record: dict[str, Any] = {
        "n": n,
        "kind": chunk.kind,
        "title": chunk.title,
        "heading": chunk.heading,
        "snippet": snippet,
        "cited": cited,
        "in_context": in_context,
        "content_hash": chunk.content_hash,
        "why": chunk.why(),
    }
    if chunk.kind == "web":
        assert chunk.url is not None
        assert chunk.fetched_at is not None
        return {
            **record,
            "chunk_id": None,
            "document_id": None,
            "external_id": chunk.external_id,  # the canonical URL
            "url": chunk.url,
            "provider": chunk.provider,
            "fetched_at": chunk.fetched_at.isoformat(),
        }
    return {
        **record,
        "chunk_id": chunk.chunk_id,
        "document_id": str(chunk.document_id),
        "external_id": chunk.external_id,
        "provenance": source_provenance(chunk.metadata),
    }
