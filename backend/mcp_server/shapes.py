"""What the MCP tools return: search hits, chat and research replies, documents - compact dicts a model
reads well (the citation metadata of each passage, no scoring internals)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backend.search.types import ScoredChunk

SNIPPET_CHARS = 1200  # a passage longer than this is cut (get_document reads the whole text)
SOURCE_FIELDS = ("n", "kind", "title", "heading", "external_id", "document_id", "chunk_id", "url", "snippet")


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def search_hit(rank: int, chunk: ScoredChunk) -> dict[str, Any]:
    return {
        "rank": rank,
        "title": chunk.title,
        "heading": chunk.heading,
        "external_id": chunk.external_id,
        "document_id": str(chunk.document_id),
        "chunk_id": chunk.chunk_id,
        "score": None if chunk.score is None else round(chunk.score, 4),
        "snippet": snippet(chunk.content),
    }


def source(record: Mapping[str, Any]) -> dict[str, Any]:
    """One numbered source of an answer or report ([n] in the text), with what cites it."""
    out = {k: record[k] for k in SOURCE_FIELDS if record.get(k) is not None}
    if "cited" in record:
        out["cited"] = bool(record["cited"])
    return out


def sources(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [source(r) for r in records]


def document(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "document_id": str(row["id"]),
        "title": row["title"],
        "external_id": row["external_id"],
        "source": row["source"],
        "visibility": row["visibility"],
        "metadata": row["metadata"],
        "chunk_count": row.get("chunk_count"),
        "created_at": row["created_at"].isoformat(),
        "updated_at": row["updated_at"].isoformat(),
    }
