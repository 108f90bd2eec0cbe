"""Bodies of the OpenAI-compatible routes (/v1/chat/completions, /v1/models), as OpenAI defines them
plus pgrag's extension field `pgrag` (docs/openai.md)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from backend.api.schemas import FILTERS_DESCRIPTION, RERANKER_DESCRIPTION, RerankerName, SourceOut


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_call_id, ...: accepted, not used

    role: str = Field(description="system / developer (the client's instructions: not used), user, assistant")
    content: str | list[dict[str, Any]] | None = Field(
        default=None, description="text, or a list of content parts of which only text parts are accepted"
    )


class PgragOptionsIn(BaseModel):
    """pgrag's own options (an extension: a client that does not know pgrag leaves it out)."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: uuid.UUID | None = Field(
        default=None,
        description="continue this pgrag conversation (default: the one whose history the messages resend)",
    )
    references: bool = Field(
        default=True, description="append the cited sources as a Markdown list under the answer"
    )
    filters: dict[str, Any] | None = Field(default=None, description="as on /chat:\n\n" + FILTERS_DESCRIPTION)
    web: bool | Literal["auto"] = Field(default="auto", description="as on /chat")
    mode: Literal["hybrid", "vector", "fulltext"] | None = None
    top_k: int | None = Field(default=None, ge=1)
    reranker: RerankerName | None = Field(default=None, description=RERANKER_DESCRIPTION)


class ChatCompletionIn(BaseModel):
    """OpenAI's chat-completions request. Sampling fields a RAG answer does not use (top_p, penalties,
    stop, seed, tools, ...) are accepted and ignored, so that any client works unchanged."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"model": "pgrag", "messages": [{"role": "user", "content": "pgrag 的检索分哪三个阶段？"}]},
                {
                    "model": "pgrag",
                    "stream": True,
                    "messages": [
                        {"role": "user", "content": "What is hybrid_search?"},
                        {"role": "assistant", "content": "It fuses full text and vectors [1]."},
                        {"role": "user", "content": "How is it tuned?"},
                    ],
                },
            ]
        },
    )

    model: str = Field(
        description="pgrag (chat), pgrag-research, pgrag-research-comprehensive (GET /v1/models)"
    )
    messages: list[MessageIn] = Field(min_length=1, max_length=500)
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=2, description="for the answer's generator")
    max_tokens: int | None = Field(default=None, ge=1, description="the answer's output-token limit")
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1, le=1, description="one choice only")
    pgrag: PgragOptionsIn | None = None


class CompletionMessageOut(BaseModel):
    role: Literal["assistant"]
    content: str


class ChoiceOut(BaseModel):
    index: int
    message: CompletionMessageOut
    finish_reason: str


class UsageOut(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class PgragReplyOut(BaseModel):
    conversation_id: str | None = Field(description="the pgrag conversation the turn was stored in")
    message_id: str | None
    run_id: str | None = Field(description="pgrag-research models: the research run")
    generator: str | None
    route: Literal["answer", "clarify", "not_found", "conversational", "instruction", "research"]
    sources: list[SourceOut] = Field(description="the numbered sources the answer's [n] point to")


class ChatCompletionOut(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChoiceOut]
    usage: UsageOut
    pgrag: PgragReplyOut


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "pgrag"
    description: str


class ModelListOut(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]
