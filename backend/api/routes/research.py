"""POST /research: a cited report, as JSON or Server-Sent Events; GET the caller's runs."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.limits import ResearchLimit
from backend.api.research_schemas import ResearchIn, ResearchOut, ResearchRunOut, ResearchRunSummaryOut
from backend.api.schemas import MAX_OFFSET
from backend.api.sse import sse_response

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
    """Plan the question into at most four sections, research them in parallel (each with its own
    evidence pool, gap searches until sufficient or `RESEARCH_MAX_LOOPS`), write each from its pool and
    assemble a report citing `[n]`. The report is stored as an assistant message; the run is readable
    at `GET /research/{run_id}` (also after a lost stream). A budget that runs out (deadline, model
    calls, tokens, searches) ends research early: the report is then `partial`, with the reasons.

    With `stream: true` the answer is `text/event-stream`, events in this order: `plan` (run_id,
    sections with their queries, limits), per section `section_started`, `search` (one per query),
    `evidence`, `sufficiency` (repeated per gap round), `section_done`; then `writing`, and `done`
    (this endpoint's JSON body) or `error` (status, detail, run_id). `: keep-alive` comments are sent
    while nothing happens. Closing the stream cancels the run (status `cancelled`).
    """
    run = await services.research.start(body.to_request(), identity=user)  # bad input: 4xx, nothing runs
    if not body.stream:
        return await services.research.run(run)
    # The first event (the plan) is awaited before the 200; the run id is known before it.
    return await sse_response(
        services.research.stream(run),
        where="POST /research (stream)",
        headers={"X-Research-Run-Id": str(run.run_id)},
        error_fields={"run_id": str(run.run_id)},
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
