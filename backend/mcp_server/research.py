"""The research tool: a run of the research service, its events turned into MCP progress notifications.

Progress counts steps: the plan, each section done, the writing; total is known once the plan is (one
step per section plus the plan and the writing). A heartbeat repeats the last progress, so a client
whose timeout resets on progress does not give up on a long run.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, cast

from mcp.server.mcpserver import Context

from backend.auth.identity import Identity
from backend.mcp_server.shapes import sources
from backend.research.presets import PresetName
from backend.research.service import ResearchService
from backend.research.types import ResearchRequest


async def run_research(
    service: ResearchService,
    identity: Identity,
    ctx: Context,
    *,
    question: str,
    conversation_id: uuid.UUID | None,
    preset: PresetName | None,
) -> dict[str, Any]:
    request = ResearchRequest(question=question, conversation_id=conversation_id, preset=preset)
    run = await service.start(request, identity=identity)  # bad input: an error before anything runs
    progress = Progress()
    body: dict[str, Any] = {}
    # Closing the stream (the call was cancelled, the client went away) cancels the run.
    stream = cast(AsyncGenerator[dict[str, Any], None], service.stream(run))  # an async generator
    async with aclosing(stream) as events:
        async for event in events:
            if event["type"] == "done":
                body = event
                break
            step = progress.step(event)
            if step is not None:
                await ctx.report_progress(*step)
    return {
        "report": body["report"],
        "sections": [s["title"] for s in body["sections"]],
        "sources": sources(body["sources"]),
        "partial": body["partial"],
        "partial_reasons": body["partial_reasons"],
        "run_id": body["run_id"],
        "conversation_id": body["conversation_id"],
        "message_id": body["message_id"],
    }


class Progress:
    """(progress, total, message) for the events worth telling a client about."""

    def __init__(self) -> None:
        self.done = 0.0
        self.total: float | None = None
        self.message = "planning"

    def step(self, event: dict[str, Any]) -> tuple[float, float | None, str] | None:
        kind = event["type"]
        if kind == "plan":
            titles = [s["title"] for s in event["sections"]]
            self.total = float(len(titles) + 2)
            self._advance(f"planned {len(titles)} sections: {'; '.join(titles)}")
        elif kind == "section_started":
            self.message = f"researching: {event['title']}"
        elif kind == "section_done":
            self._advance(f"section done: {event['title']} ({event['pool']} passages)")
        elif kind == "writing":
            self._advance("writing the report")
        elif kind != "heartbeat":
            return None
        return self.done, self.total, self.message

    def _advance(self, message: str) -> None:
        self.done += 1
        self.message = message
