"""The OpenAI-compatible API: POST /v1/chat/completions and GET /v1/models (docs/openai.md).

Any OpenAI client (the official SDKs, Open WebUI, LobeChat, Cherry Studio, ChatBox) talks to pgrag
with base URL `<server>/v1` and a personal API key (or an access token) as its API key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.errors import OPENAI_ERROR_RESPONSES, error_payload, log_failure, openai_error
from backend.api.limits import ChatLimit
from backend.api.openai_schemas import ChatCompletionIn, ChatCompletionOut, ModelListOut
from backend.chat.options import EvidenceOptions
from backend.errors import NotFound
from backend.llm.base import Sampling
from backend.openai_compat import CREATED, MODELS, CompletionRequest, split_messages

router = APIRouter(prefix="/v1", tags=["openai-compatible"], responses=OPENAI_ERROR_RESPONSES)
HEARTBEAT = ": keep-alive\n\n"


@router.get("/models", response_model=ModelListOut, summary="The models (modes) /v1/chat/completions offers")
def list_models(_: CurrentUser) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": name, "created": CREATED, "description": text} for name, text in MODELS.items()],
    }


@router.post(
    "/chat/completions",
    response_model=ChatCompletionOut,
    summary="OpenAI chat completions: the last user message is the question, earlier turns the conversation",
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def chat_completions(
    body: ChatCompletionIn, services: ServicesDep, user: CurrentUser, _: ChatLimit
) -> dict[str, Any] | StreamingResponse:
    if body.model not in MODELS:
        raise NotFound(
            f"model {body.model!r} does not exist; the models are {', '.join(MODELS)} (GET /v1/models)"
        )
    history, question = split_messages([m.model_dump() for m in body.messages])
    extra = body.pgrag
    request = CompletionRequest(
        model=body.model,
        question=question,
        history=history,
        stream=body.stream,
        references=extra.references if extra else True,
        options=EvidenceOptions(
            filters=extra.filters if extra else None,
            mode=extra.mode if extra else None,
            top_k=extra.top_k if extra else None,
            reranker=extra.reranker if extra else None,
            collections=extra.collections if extra else None,
        ),
        web=extra.web if extra else "auto",
        conversation_id=extra.conversation_id if extra else None,
        sampling=_sampling(body),
    )
    if not body.stream:
        return await services.openai.complete(request, user)
    events = services.openai.stream(request, user)
    first = await anext(events)  # the role chunk: bad input fails before the 200
    return StreamingResponse(
        _frames(first, events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _frames(first: dict[str, Any], events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    """OpenAI's stream: `data: <chunk>` frames, an error as `data: {"error": ...}`, then `data: [DONE]`."""
    yield _data(first)
    try:
        async for event in events:
            yield HEARTBEAT if event["type"] == "heartbeat" else _data(event)
    except Exception as exc:
        log_failure(exc, "POST /v1/chat/completions (stream)")
        yield f"data: {json.dumps(openai_error(*error_payload(exc))[1], ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


def _data(event: dict[str, Any]) -> str:
    chunk = {k: v for k, v in event.items() if k != "type"}
    return f"data: {json.dumps(chunk, ensure_ascii=False, default=str)}\n\n"


def _sampling(body: ChatCompletionIn) -> Sampling | None:
    """The client's temperature and output-token limit (max_completion_tokens wins over max_tokens)."""
    max_tokens = body.max_completion_tokens or body.max_tokens
    if body.temperature is None and max_tokens is None:
        return None
    return Sampling(temperature=body.temperature, max_tokens=max_tokens)
