"""POST /chat: an answer with [n] citations, as JSON or Server-Sent Events."""

from __future__ import annotations

import json
from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.errors import error_payload, log_failure
from backend.api.schemas import ChatIn, ChatOut
from backend.services.chat import ChatRequest, reply_to_dict
from backend.services.evidence import EvidenceOptions

router = APIRouter(prefix="/chat", tags=["chat"])


@router.post(
    "",
    response_model=ChatOut,
    summary="Ask; with stream=true the answer arrives as SSE",
    responses={200: {"content": {"text/event-stream": {}}}},
)
def chat(body: ChatIn, services: ServicesDep, user: CurrentUser) -> dict | StreamingResponse:
    options = EvidenceOptions(
        mode=body.mode,
        filters=body.filters,
        top_k=body.top_k,
        step_top_k=body.step_top_k,
        write_top_k=body.write_top_k,
    )
    request = ChatRequest(message=body.message, conversation_id=body.conversation_id, options=options)
    if not body.stream:
        return reply_to_dict(services.chat.chat(request, identity=user))
    events = services.chat.chat_stream(request, identity=user)
    first = next(events)  # validation and retrieval errors surface here, as a normal 4xx
    return StreamingResponse(
        _sse(first, events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _sse(first: dict, events: Iterator[dict]) -> Iterator[str]:
    """The stream after the 200: whatever fails from here on (the model, the database write of the
    answer) ends the stream with an `error` event carrying the status it would have had, never with a
    cut connection."""
    yield _frame(first)
    try:
        for event in events:
            yield _frame(event)
    except Exception as exc:
        log_failure(exc, "POST /chat (stream)")
        status, body = error_payload(exc)
        yield _frame({"type": "error", "status": status, **body})


def _frame(event: dict) -> str:
    kind = event.pop("type")
    return f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False, default=str)}\n\n"
