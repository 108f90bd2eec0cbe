"""Chat: rewrite a follow-up, retrieve, answer with [n] citations, validate them, persist the sources."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from psycopg_pool import ConnectionPool

from backend.config import Settings
from backend.db.repositories import conversations as conversations_repo
from backend.errors import InvalidInput, NotFound
from backend.llm import LLM, Turn, load_prompt
from backend.services.context import BuiltContext, build_context
from backend.services.retrieval import RetrievalService, ScoredChunk, SearchRequest, SearchResult
from backend.services.rewrite import rewrite_followup
from backend.text import detect_lang

_MARKER = re.compile(r"\[(\s*\d+(?:\s*[,，、]\s*\d+)*\s*)\]")
_SNIPPET_CHARS = 300


@dataclass
class ChatRequest:
    message: str
    conversation_id: uuid.UUID | None = None
    owner_id: uuid.UUID | None = None


@dataclass
class ChatReply:
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    answer: str
    sources: list[dict[str, Any]]
    generator: str
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Prepared:
    conversation_id: uuid.UUID | None  # None: created with the first messages, atomically
    created_conversation: bool
    history: list[Turn]
    rewrite_query: str
    rewrite_method: str
    search: SearchResult
    context: BuiltContext
    started: float


def validate_citations(answer: str, n_sources: int) -> tuple[str, set[int], int]:
    """Drop markers that point at no source; returns (clean answer, cited numbers, removed count)."""
    cited: set[int] = set()
    removed = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal removed
        numbers = [int(x) for x in re.split(r"\s*[,，、]\s*", match.group(1).strip())]
        valid = [n for n in numbers if 1 <= n <= n_sources]
        removed += len(numbers) - len(valid)
        cited.update(valid)
        return "".join(f"[{n}]" for n in valid)

    clean = _MARKER.sub(fix, answer)
    return re.sub(r"[ \t]+([。.,，!！?？])", r"\1", clean), cited, removed


class ChatService:
    """One chat turn: the retrieval pipeline plus generation and persistence."""

    def __init__(
        self, pool: ConnectionPool, retrieval: RetrievalService, llm: LLM, settings: Settings
    ) -> None:
        self.pool = pool
        self.retrieval = retrieval
        self.llm = llm
        self.settings = settings

    def chat(self, request: ChatRequest) -> ChatReply:
        prepared = self._prepare(request)
        if not prepared.context.sources:
            return self._finish(request, prepared, self._not_found_text(request.message))
        answer = "".join(self.llm.answer(request.message, prepared.context.sources, prepared.history))
        return self._finish(request, prepared, answer)

    def chat_stream(self, request: ChatRequest) -> Iterator[dict[str, Any]]:
        """Events: {"type": "delta", "text"} ..., then {"type": "done", **reply}."""
        prepared = self._prepare(request)
        if not prepared.context.sources:
            text = self._not_found_text(request.message)
            yield {"type": "delta", "text": text}
        else:
            parts = []
            for delta in self.llm.answer(request.message, prepared.context.sources, prepared.history):
                parts.append(delta)
                yield {"type": "delta", "text": delta}
            text = "".join(parts)
        reply = self._finish(request, prepared, text)
        yield {"type": "done", **reply_to_dict(reply)}

    # --- steps -----------------------------------------------------------------------------------

    def _prepare(self, request: ChatRequest) -> _Prepared:
        started = time.perf_counter()
        message = request.message.strip()
        if not message:
            raise InvalidInput("message is empty")
        if len(message) > self.settings.max_query_chars:
            raise InvalidInput(
                f"message has {len(message)} characters; the limit is {self.settings.max_query_chars}"
            )
        history: list[Turn] = []
        created = request.conversation_id is None
        conversation_id = request.conversation_id
        with self.pool.connection() as conn:
            if conversation_id is not None:
                if not conversations_repo.conversation_exists(
                    conn, conversation_id=conversation_id, owner_id=request.owner_id
                ):
                    raise NotFound(f"conversation {conversation_id} does not exist")
                history = [
                    Turn(role, content)
                    for role, content in conversations_repo.recent_messages(
                        conn, conversation_id=conversation_id, limit=self.settings.chat_history_turns
                    )
                ]
        rewrite = rewrite_followup(message, history, self.llm)
        search = self.retrieval.search(SearchRequest(query=rewrite.query))
        relevant = [c for c in search.results if self._relevant(c)]
        context = build_context(relevant, self.settings.context_max_tokens)
        return _Prepared(
            conversation_id, created, history, rewrite.query, rewrite.method, search, context, started
        )

    def _relevant(self, chunk: ScoredChunk) -> bool:
        """Evidence worth showing the model: shares a significant term, or is semantically very close."""
        s = self.settings
        return chunk.keyword_coverage >= s.chat_min_keyword_coverage or (
            chunk.similarity is not None and chunk.similarity >= s.chat_min_similarity
        )

    def _finish(self, request: ChatRequest, p: _Prepared, raw_answer: str) -> ChatReply:
        answer, cited, removed = validate_citations(raw_answer, len(p.context.sources))
        sources = [
            self._source_record(i + 1, chunk, (i + 1) in cited) for i, chunk in enumerate(p.context.chunks)
        ]
        generator = self.llm.generator if p.context.sources else "none"
        diagnostics: dict[str, Any] = {
            "rewrite": {"query": p.rewrite_query, "method": p.rewrite_method},
            "retrieval": p.search.diagnostics,
            "context": {
                "sources": len(p.context.sources),
                "used_tokens": p.context.used_tokens,
                "budget_tokens": self.settings.context_max_tokens,
                "dropped_duplicates": p.context.dropped_duplicates,
                "truncated": p.context.truncated,
                "dropped_for_budget": p.context.dropped_for_budget,
                "irrelevant_dropped": len(p.search.results)
                - len(p.context.chunks)
                - p.context.dropped_duplicates
                - p.context.dropped_for_budget,
            },
            "citations": {"valid": sorted(cited), "invalid_removed": removed},
            "generator": generator,
            "llm": self.llm.name if p.context.sources else None,
        }
        with self.pool.connection() as conn, conn.transaction():
            conversation_id = p.conversation_id or conversations_repo.create_conversation(
                conn, owner_id=request.owner_id, title=request.message.strip()[:80]
            )
            conversations_repo.add_message(
                conn, conversation_id=conversation_id, role="user", content=request.message.strip()
            )
            message_id = conversations_repo.add_message(
                conn,
                conversation_id=conversation_id,
                role="assistant",
                content=answer,
                sources=sources,
                metadata={
                    "generator": generator,
                    "rewrite": diagnostics["rewrite"],
                    "citations": diagnostics["citations"],
                },
            )
        diagnostics["total_ms"] = round((time.perf_counter() - p.started) * 1000, 3)
        return ChatReply(conversation_id, message_id, answer, sources, generator, diagnostics)

    @staticmethod
    def _source_record(n: int, chunk: ScoredChunk, cited: bool) -> dict[str, Any]:
        snippet = (
            chunk.content if len(chunk.content) <= _SNIPPET_CHARS else chunk.content[:_SNIPPET_CHARS] + "…"
        )
        return {
            "n": n,
            "chunk_id": chunk.chunk_id,
            "document_id": str(chunk.document_id),
            "external_id": chunk.external_id,
            "title": chunk.title,
            "heading": chunk.heading,
            "snippet": snippet,
            "cited": cited,
            "content_hash": chunk.content_hash,
            "why": chunk.why(),
        }

    @staticmethod
    def _not_found_text(message: str) -> str:
        name = "not_found_zh" if detect_lang(message) == "zh" else "not_found_en"
        return load_prompt(name).render().strip()


def reply_to_dict(reply: ChatReply) -> dict[str, Any]:
    return {
        "conversation_id": str(reply.conversation_id),
        "message_id": str(reply.message_id),
        "answer": reply.answer,
        "sources": reply.sources,
        "generator": reply.generator,
        "diagnostics": reply.diagnostics,
    }
