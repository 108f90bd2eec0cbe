"""Request and response bodies of the background ingestion jobs (/ingest/jobs)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

FileStatus = Literal["queued", "running", "done", "failed", "cancelled"]


class IngestJobFileOut(BaseModel):
    id: uuid.UUID
    position: int = Field(description="The file's place in the request, from 0.")
    filename: str
    content_type: str | None
    status: FileStatus
    error: str | None = Field(description="Why the file failed (failed files only).")
    chunks_total: int | None = Field(description="Chunks the file makes; null until it is parsed.")
    chunks_done: int = Field(description="Chunks that have their vector so far.")
    outcome: dict[str, Any] | None = Field(
        description="For a done file: counts per status, each document's id, status and chunks."
    )
    attempts: int = Field(description="Times a worker started on it (more than 1: a worker stopped).")
    started_at: datetime | None
    finished_at: datetime | None


class IngestJobOut(BaseModel):
    id: uuid.UUID
    kind: Literal["upload", "batch"]
    collection_id: uuid.UUID | None = Field(
        description="The team collection the files go into (null: the caller's own)."
    )
    created_at: datetime
    status: Literal["queued", "running", "done"] = Field(
        description="done once every file ended (done, failed or cancelled)."
    )
    counts: dict[str, int] = Field(description="Files per status.")
    chunks_done: int
    chunks_total: int
    files: list[IngestJobFileOut]


class IngestJobPage(BaseModel):
    items: list[IngestJobOut]
    total: int
    limit: int
    offset: int


class QueuedFileOut(BaseModel):
    id: uuid.UUID
    filename: str
    status: FileStatus


class IngestJobAccepted(BaseModel):
    """The answer (202) to an upload or batch with background=true: follow the job by its id."""

    job_id: uuid.UUID
    status_url: str
    events_url: str
    files: list[QueuedFileOut]

    @classmethod
    def of(cls, job: dict[str, Any]) -> IngestJobAccepted:
        return cls(
            job_id=job["id"],
            status_url=f"/ingest/jobs/{job['id']}",
            events_url=f"/ingest/jobs/{job['id']}/events",
            files=[
                QueuedFileOut(id=f["id"], filename=f["filename"], status=f["status"]) for f in job["files"]
            ],
        )
