"""POST /chat: an answer with [n] citations, as JSON or Server-Sent Events."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.limits import ChatLimit
from backend.api.schemas import ChatIn, ChatOut
from backend.api.sse import sse_response
from backend.chat.options import EvidenceOptions
from backend.chat.service import ChatRequest, reply_to_dict

router = APIRouter(prefix="/chat", tags=["chat"])


@router.post(
    "",
    response_model=ChatOut,
    summary="Ask; with stream=true the answer arrives as SSE (delta events, then done or error)",
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def chat(
    body: ChatIn, services: ServicesDep, user: CurrentUser, _: ChatLimit
) -> dict[str, Any] | StreamingResponse:
    options = EvidenceOptions(
        mode=body.mode,
        filters=body.filters,
        infer_filters=body.infer_filters,
        relax=body.relax,
        min_score=body.min_score,
        top_k=body.top_k,
        step_top_k=body.step_top_k,
        write_top_k=body.write_top_k,
        reranker=body.reranker,
        collections=body.collections,
    )
    request = ChatRequest(
        message=body.message,
        conversation_id=body.conversation_id,
        options=options,
        web=body.web,
        scope_from_conversation="collections" not in body.model_fields_set,
    )
    if not body.stream:
        return reply_to_dict(await services.chat.chat(request, identity=user))
    return await sse_response(services.chat.chat_stream(request, identity=user), where="POST /chat (stream)")
