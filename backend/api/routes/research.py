"""POST /research: a cited report, as JSON or Server-Sent Events; GET the caller's runs."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.errors import error_payload, log_failure
from backend.api.limits import ResearchLimit
from backend.api.research_schemas import ResearchIn, ResearchOut, ResearchRunOut, ResearchRunSummaryOut
from backend.api.schemas import MAX_OFFSET

router = APIRouter(prefix="/research", tags=["research"])


@router.post(
    "",
    response_model=ResearchOut,
    summary="Research a question; with stream=true progress and the report arrive as SSE",
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def research(
    body: ResearchIn, services: ServicesDep, user: CurrentUser, _: ResearchLimit
) -> dict[str, Any] | StreamingResponse:
    run = await services.research.start(body.to_request(), identity=user)  # bad input: 4xx, nothing runs
    if not body.stream:
        return await services.research.run(run)
    return StreamingResponse(
        _sse(services.research.stream(run), run.run_id),
        media_type="text/event-stream",
        headers={
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            "X-Research-Run-Id": str(run.run_id),
        },
    )


@router.get(
    "", response_model=list[ResearchRunSummaryOut], summary="The caller's research runs, newest first"
)
def list_runs(
    services: ServicesDep,
    user: CurrentUser,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> list[dict[str, Any]]:
    return services.research.list_runs(identity=user, limit=limit, offset=offset)


@router.get(
    "/{run_id}",
    response_model=ResearchRunOut,
    summary="One run: status, budget use, timings, and the report (e.g. after the stream was lost)",
)
def get_run(run_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> dict[str, Any]:
    return services.research.get_run(run_id, identity=user)


async def _sse(events: AsyncIterator[dict[str, Any]], run_id: uuid.UUID) -> AsyncIterator[str]:
    """Events as SSE frames; a failure after the 200 ends the stream with an `error` event (the status
    it would have had, the run id), never a cut connection. Quiet periods send a comment line."""
    try:
        async for event in events:
            if event["type"] == "heartbeat":
                yield ": keep-alive\n\n"
            else:
                yield _frame(event)
    except Exception as exc:
        log_failure(exc, "POST /research (stream)")
        status, body = error_payload(exc)
        yield _frame({"type": "error", "status": status, "run_id": str(run_id), **body})


def _frame(event: dict[str, Any]) -> str:
    data = {k: v for k, v in event.items() if k != "type"}
    return f"event: {event['type']}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"
