"""What an ingestion reports: each document's outcome, the run's summary, and progress as it goes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from backend.documents.bulk_load import BulkLoadStats

Status = Literal["created", "updated", "unchanged", "failed"]


@dataclass
class DocumentOutcome:
    external_id: str
    title: str
    source: str
    status: Status
    document_id: uuid.UUID | None = None
    chunks: int = 0
    error: str | None = None


@dataclass
class IngestSummary:
    outcomes: list[DocumentOutcome] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_from_cache: int = 0
    seconds: float = 0.0
    bulk: BulkLoadStats | None = None  # None: not bulk mode, or nothing needed writing

    def count(self, status: Status) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.count(s) for s in ("created", "updated", "unchanged", "failed")}

    @property
    def failures(self) -> list[DocumentOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


ProgressCallback = Callable[[IngestSummary, int], None]  # (summary so far, chunks in the last group)
ChunkCallback = Callable[[int, int], None]  # (chunks with their vector so far, chunks prepared so far)


class ChunkCounter:
    """Chunks that have their vector (cached or embedded now) out of those prepared, as embedding goes:
    finer than ProgressCallback, which speaks once a group is written (one group, with atomic=True)."""

    def __init__(self, callback: ChunkCallback | None) -> None:
        self.callback = callback
        self.done = 0
        self.total = 0

    def planned(self, chunks: int, unchanged: int) -> None:
        self.total += chunks
        self.add(unchanged)

    def add(self, chunks: int) -> None:
        self.done += chunks
        if self.callback and chunks:
            self.callback(self.done, self.total)
