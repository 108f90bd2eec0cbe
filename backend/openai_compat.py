"""The OpenAI chat-completions protocol over the chat and research services (issue 28, item 1).

A chat-completions client resends the whole conversation with every request and keeps no id. Here the
last user message is the question and the earlier user/assistant turns are the conversation: the
turn runs through ChatService (or ResearchService) exactly like /chat, in a pgrag conversation found
by the history the client sent (conversations.client_key, migration 022) - or, when none matches (a
new chat, an edited or regenerated turn), in a new one seeded with that history, so the follow-up
rewrite reads the same turns either way. System messages are the client's own instructions: pgrag
answers with its own prompt (answers from the documents, with [n] citations), so they are ignored.

Models: `pgrag` (chat), `pgrag-research` (deep research, RESEARCH_DEFAULT_PRESET) and
`pgrag-research-comprehensive`. The reply keeps its [n] markers; the sources travel in the
`pgrag` extension field, and (unless `pgrag.references` is false) as a Markdown list under the answer
so that a client that does not know pgrag still shows where each [n] points.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.auth.identity import Identity
from backend.chat.options import EvidenceOptions
from backend.chat.service import ChatRequest, ChatService, reply_to_dict
from backend.db.database import Database
from backend.db.repositories import conversations as conversations_repo
from backend.errors import InvalidInput
from backend.llm.base import Sampling
from backend.llm.token_count import EstimateCounter
from backend.research.service import ResearchService
from backend.research.types import ResearchRequest
from backend.search.web import WebChoice

CHAT_MODEL = "pgrag"
RESEARCH_MODELS: Mapping[str, Literal["lite", "comprehensive"] | None] = {
    "pgrag-research": None,  # RESEARCH_DEFAULT_PRESET
    "pgrag-research-comprehensive": "comprehensive",
}
MODELS: Mapping[str, str] = {
    CHAT_MODEL: "Answers from your documents with [n] citations (POST /chat); follow-ups read the history.",
    "pgrag-research": "Deep research: a cited report in sections (like POST /research, default preset).",
    "pgrag-research-comprehensive": "Deep research with the comprehensive preset (more searches, longer).",
}
CREATED = 1_767_225_600  # 2026-01-01: the models' "created" field (they are modes, not trained weights)
_SPACE = re.compile(r"\s+")
_ESTIMATE = EstimateCounter(1.0)


@dataclass(frozen=True)
class ClientTurn:
    role: Literal["user", "assistant"]
    content: str


@dataclass
class CompletionRequest:
    """What a chat-completions body asks, in pgrag's terms (validated by the route's schema)."""

    model: str
    question: str
    history: list[ClientTurn]
    stream: bool = False
    references: bool = True
    options: EvidenceOptions = field(default_factory=EvidenceOptions)
    web: WebChoice = "auto"
    conversation_id: uuid.UUID | None = None  # pgrag.conversation_id: continue this one explicitly
    sampling: Sampling | None = None  # temperature / max_tokens, for the generator (chat models)


def split_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[list[ClientTurn], str]:
    """(earlier user/assistant turns, the question): the last message must be the user's."""
    turns: list[ClientTurn] = []
    for i, message in enumerate(messages):
        role = message["role"]
        if role in ("system", "developer"):
            continue
        if role not in ("user", "assistant"):
            raise InvalidInput(f"messages[{i}].role: {role!r} is not supported (system, user, assistant)")
        turns.append(ClientTurn(role, message_text(message.get("content"), f"messages[{i}].content")))
    if not turns or turns[-1].role != "user":
        raise InvalidInput("messages: the last message must be the user's question")
    question = turns.pop().content
    if not question.strip():
        raise InvalidInput("messages: the last user message is empty")
    return turns, question


def message_text(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind != "text":
            raise InvalidInput(f"{where}[{j}]: only text parts are supported, not {kind!r}")
        texts.append(str(part.get("text", "")))
    return "\n".join(texts)


def client_key(turns: Sequence[ClientTurn]) -> str:
    """The history as the client sees it, hashed: whitespace-normalised (role, text) pairs."""
    normal = [[t.role, _SPACE.sub(" ", t.content).strip()] for t in turns]
    return hashlib.sha256(json.dumps(normal, ensure_ascii=False).encode()).hexdigest()


def reference_list(sources: Sequence[Mapping[str, Any]]) -> str:
    """The cited sources as a Markdown list to put under the answer ('' when none is cited)."""
    lines = []
    for source in sources:
        if not source.get("cited"):
            continue
        title = source.get("title") or source.get("external_id") or ""
        heading = f" › {source['heading']}" if source.get("heading") else ""
        url = source.get("url")
        label = f"[{title}]({url})" if url else title
        lines.append(f"[{source['n']}] {label}{heading}")
    return "\n\n---\n" + "\n".join(lines) if lines else ""


def usage(question: str, history: Sequence[ClientTurn], context_tokens: int, answer: str) -> dict[str, int]:
    """Tokens as the calibrated estimate counts them (pgrag's generator may be extractive: no model)."""
    prompt = sum(_ESTIMATE.count([question, *(t.content for t in history)]).tokens) + context_tokens
    completion = sum(_ESTIMATE.count([answer]).tokens) if answer else 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class OpenAICompat:
    """One chat-completions request: the conversation it continues, the turn, the reply's shape."""

    def __init__(self, db: Database, chat: ChatService, research: ResearchService) -> None:
        self._db, self._chat, self._research = db, chat, research

    def conversation(self, request: CompletionRequest, identity: Identity) -> uuid.UUID | None:
        """The conversation this turn belongs to (None: a first turn; the chat creates it)."""
        if request.conversation_id is not None or not request.history:
            return request.conversation_id
        key = client_key(request.history)
        with self._db.as_user(identity) as conn:
            found = conversations_repo.conversation_by_client_key(
                conn, owner_id=identity.user_id, client_key=key
            )
            if found is not None:
                return found
            first = next((t.content for t in request.history if t.role == "user"), request.question)
            created = conversations_repo.create_conversation(
                conn, owner_id=identity.user_id, title=first.strip()[:80]
            )
            for turn in request.history:
                conversations_repo.add_message(
                    conn, conversation_id=created, role=turn.role, content=turn.content
                )
            return created

    def remember(
        self, request: CompletionRequest, identity: Identity, conversation_id: uuid.UUID, shown: str
    ) -> None:
        """Key the conversation by the history the client will send next: this turn included."""
        turns = [*request.history, ClientTurn("user", request.question), ClientTurn("assistant", shown)]
        with self._db.as_user(identity) as conn:
            conversations_repo.set_client_key(
                conn, conversation_id=conversation_id, client_key=client_key(turns)
            )

    # --- the turn -------------------------------------------------------------------------------------

    def chat_request(self, request: CompletionRequest, conversation_id: uuid.UUID | None) -> ChatRequest:
        return ChatRequest(
            message=request.question,
            conversation_id=conversation_id,
            options=request.options,
            web=request.web,
            sampling=request.sampling,
            scope_from_conversation=request.options.collections is None,
        )

    def research_request(
        self, request: CompletionRequest, conversation_id: uuid.UUID | None
    ) -> ResearchRequest:
        return ResearchRequest(
            question=request.question,
            conversation_id=conversation_id,
            preset=RESEARCH_MODELS[request.model],
            web=request.web,
            filters=request.options.filters,
            collections=request.options.collections,
        )

    async def complete(self, request: CompletionRequest, identity: Identity) -> dict[str, Any]:
        """The whole reply as a chat.completion object."""
        conversation_id = await asyncio.to_thread(self.conversation, request, identity)
        if request.model == CHAT_MODEL:
            body = reply_to_dict(
                await self._chat.chat(self.chat_request(request, conversation_id), identity=identity)
            )
        else:
            run = await self._research.start(
                self.research_request(request, conversation_id), identity=identity
            )
            body = await self._research.run(run)
        return await self._completion(request, identity, body)

    async def stream(self, request: CompletionRequest, identity: Identity) -> AsyncIterator[dict[str, Any]]:
        """chat.completion.chunk objects: the role, the answer's deltas, then the last chunk with the
        finish reason, usage and the pgrag extension. Research streams its report when it is written."""
        conversation_id = await asyncio.to_thread(self.conversation, request, identity)
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        if request.model == CHAT_MODEL:
            events = self._chat.chat_stream(self.chat_request(request, conversation_id), identity=identity)
        else:
            run = await self._research.start(
                self.research_request(request, conversation_id), identity=identity
            )
            events = self._research.stream(run)
        first = await anext(events)  # a question the chat refuses fails here, before the first chunk
        yield _chunk(chunk_id, request.model, {"role": "assistant", "content": ""})
        async for event in _prepend(first, events):
            if event["type"] == "delta":
                yield _chunk(chunk_id, request.model, {"content": event["text"]})
            elif event["type"] == "heartbeat":
                yield {"type": "heartbeat"}
            elif event["type"] == "done":
                body = {k: v for k, v in event.items() if k != "type"}
                done = await self._completion(request, identity, body, chunk_id=chunk_id)
                if request.model != CHAT_MODEL:  # research sends its report in one piece
                    yield _chunk(chunk_id, request.model, {"content": body["report"]})
                tail = done["choices"][0]["message"]["content"][len(_answer_text(body)) :]
                if tail:
                    yield _chunk(chunk_id, request.model, {"content": tail})
                last = _chunk(chunk_id, request.model, {}, finish_reason="stop")
                yield {**last, "usage": done["usage"], "pgrag": done["pgrag"]}

    async def _completion(
        self,
        request: CompletionRequest,
        identity: Identity,
        body: dict[str, Any],
        *,
        chunk_id: str | None = None,
    ) -> dict[str, Any]:
        answer = _answer_text(body)
        shown = answer + (reference_list(body["sources"]) if request.references else "")
        conversation_id = body.get("conversation_id")
        if conversation_id:
            await asyncio.to_thread(self.remember, request, identity, uuid.UUID(str(conversation_id)), shown)
        diagnostics = body.get("diagnostics") or {}
        context = diagnostics.get("context") or {}
        context_tokens = int(context.get("used_tokens", 0)) + int(context.get("prompt_tokens", 0))
        return {
            "id": chunk_id or f"chatcmpl-{body.get('message_id') or uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": shown}, "finish_reason": "stop"}
            ],
            "usage": usage(request.question, request.history, context_tokens, answer),
            "pgrag": {
                "conversation_id": conversation_id,
                "message_id": body.get("message_id"),
                "run_id": body.get("run_id"),
                "generator": body.get("generator"),
                "sources": body["sources"],
                "route": _route(body),
            },
        }


async def _prepend(
    first: dict[str, Any], rest: AsyncIterator[dict[str, Any]]
) -> AsyncIterator[dict[str, Any]]:
    yield first
    async for event in rest:
        yield event


def _answer_text(body: Mapping[str, Any]) -> str:
    return str(body["answer"] if "answer" in body else body["report"])


def _route(body: Mapping[str, Any]) -> str:
    """answer, clarify, not_found, conversational, instruction (chat) or research."""
    generator = body.get("generator")
    if "report" in body:
        return "research"
    turn_route = (body.get("diagnostics") or {}).get("route")
    if turn_route in ("conversational", "instruction"):
        return str(turn_route)
    return generator if generator in ("clarify", "not_found") else "answer"


def _chunk(
    chunk_id: str, model: str, delta: dict[str, Any], *, finish_reason: str | None = None
) -> dict[str, Any]:
    return {
        "type": "chunk",
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
