"""What a loader produces: a document's text and provenance, or why a file could not be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backend.ingest.provenance import Span


@dataclass
class LoadedDocument:
    """One document's readable text and provenance, ready for chunking."""

    title: str
    content: str
    source: str
    filename: str | None
    content_type: str
    external_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Where parts of `content` were read from (PDF pages, slides, sheet rows, chapters), by offset.
    spans: tuple[Span, ...] = ()


@dataclass
class LoadFailure:
    """A file (or JSONL line) that could not be read, and why; a batch goes on past it."""

    source: str
    reason: str
