"""Background ingestion jobs: read, list, cancel, follow (submitted by /documents/upload or
/documents/batch with background=true)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.job_schemas import IngestJobOut, IngestJobPage
from backend.api.schemas import MAX_OFFSET
from backend.api.sse import sse_response

router = APIRouter(prefix="/ingest/jobs", tags=["ingest jobs"])


@router.get("", response_model=IngestJobPage, summary="The caller's ingestion jobs, newest first")
def list_jobs(
    services: ServicesDep,
    user: CurrentUser,
    limit: int = Query(20, ge=1, le=200),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> IngestJobPage:
    jobs, total = services.jobs.list_jobs(identity=user, limit=limit, offset=offset)
    return IngestJobPage(items=[IngestJobOut(**j) for j in jobs], total=total, limit=limit, offset=offset)


@router.get("/{job_id}", response_model=IngestJobOut, summary="A job: each file's status, error and progress")
def read_job(job_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> IngestJobOut:
    return IngestJobOut(**services.jobs.read_job(identity=user, job_id=job_id))


@router.get(
    "/{job_id}/events",
    summary="Server-Sent Events: the job (event `job`, as GET /ingest/jobs/{id}) each time it changes; "
    "the stream ends after the event whose status is done",
    response_class=StreamingResponse,
)
async def job_events(job_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> StreamingResponse:
    return await sse_response(
        _as_json(services.jobs.events(identity=user, job_id=job_id)), where="ingest job events"
    )


async def _as_json(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """Each `job` event exactly as GET /ingest/jobs/{id} answers (ISO dates, the same fields)."""
    async for event in events:
        if event["type"] == "job":
            job = {k: v for k, v in event.items() if k != "type"}
            event = {"type": "job", **IngestJobOut(**job).model_dump(mode="json")}
        yield event


@router.delete(
    "/{job_id}", response_model=IngestJobOut, summary="Cancel the job's queued files (started ones finish)"
)
def cancel_job(job_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> IngestJobOut:
    return IngestJobOut(**services.jobs.cancel_job(identity=user, job_id=job_id))
