"""Server-Sent Events from an async stream of {"type": ..., **data} events.

The first event is awaited before the response starts, so validation and retrieval errors are an
ordinary 4xx. After the 200, whatever fails (the model, the database write of the answer) ends the
stream with an `error` event carrying the status it would have had, never with a cut connection.
A client that goes away cancels the stream (and so the work behind it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

from backend.api.errors import error_payload, log_failure


async def sse_response(events: AsyncIterator[dict[str, Any]], *, where: str) -> StreamingResponse:
    first = await anext(events)
    return StreamingResponse(
        _frames(first, events, where),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _frames(
    first: dict[str, Any], events: AsyncIterator[dict[str, Any]], where: str
) -> AsyncIterator[str]:
    yield frame(first)
    try:
        async for event in events:
            yield frame(event)
    except Exception as exc:
        log_failure(exc, where)
        status, body = error_payload(exc)
        yield frame({"type": "error", "status": status, **body})


def frame(event: dict[str, Any]) -> str:
    data = {k: v for k, v in event.items() if k != "type"}
    return f"event: {event['type']}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"
