"""What a chat turn leaves behind: validated [n] citations, the numbered source records (local chunks
and web pages) stored in messages.sources, and the reply as the API returns it."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from backend.search.types import ScoredChunk
from backend.services.diagnostics import ChatDiagnostics
from backend.text.hygiene import drop_unstorable

_MARKER = re.compile(r"\[(\s*\d+(?:\s*[,，、]\s*\d+)*\s*)\]")
SNIPPET_CHARS = 300


@dataclass
class ChatReply:
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    answer: str
    sources: list[dict[str, Any]]
    generator: str
    diagnostics: ChatDiagnostics


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
    clean = _MARKER.sub(fix, drop_unstorable(answer))
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
    }


def reply_to_dict(reply: ChatReply) -> dict[str, Any]:
    return {
        "conversation_id": str(reply.conversation_id),
        "message_id": str(reply.message_id),
        "answer": reply.answer,
        "sources": reply.sources,
        "generator": reply.generator,
        "diagnostics": reply.diagnostics.model_dump(mode="json"),
    }
