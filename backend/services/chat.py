"""Chat: rewrite a follow-up, retrieve (and, when the documents do not answer, search the web), answer
with [n] citations, validate them, persist the sources.

The turn is async: blocking work (the database, the local embedding model, the LLM SDK) runs in worker
threads, while the web leg runs on the event loop under a soft deadline (backend/web/softwait.py), so a
slow provider never holds a thread or the answer past WEB_SOFT_WAIT_MS.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import conversations as conversations_repo
from backend.errors import InvalidInput
from backend.llm import LLM, Turn, load_prompt
from backend.llm.base import ToolCallingLLM
from backend.llm.token_count import EstimateCounter
from backend.search.diagnostics import WebDiagnostics
from backend.search.observe import observe_answer
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchResult
from backend.services.assist import AssistTools
from backend.services.chat_record import ChatReply, reply_to_dict, source_record, validate_citations
from backend.services.context import BuiltContext, ContextBuilder
from backend.services.conversations import recent_turns
from backend.services.diagnostics import (
    ChatDiagnostics,
    CitationDiagnostics,
    ConfidenceSummary,
    ContextDiagnostics,
    RewriteDiagnostics,
)
from backend.services.evidence import (
    Evidence,
    EvidenceOptions,
    gather_evidence,
    main_search,
)
from backend.services.rewrite import RewriteMethod, rewrite_followup
from backend.services.web_evidence import WebChoice, search_beyond, web_passages
from backend.telemetry import Metrics
from backend.text import detect_lang
from backend.web import WebSearch

RELATED_DOCUMENTS = 3  # a "not in the documents" reply lists this many closest documents, uncited

__all__ = ["ChatReply", "ChatRequest", "ChatService", "reply_to_dict"]


@dataclass
class ChatRequest:
    message: str
    conversation_id: uuid.UUID | None = None
    options: EvidenceOptions = field(default_factory=EvidenceOptions)
    # auto: the web only when the documents do not hold the answer; True: always (in parallel with
    # the local search); False: never (no provider is called).
    web: WebChoice = "auto"


@dataclass
class _Prepared:
    conversation_id: uuid.UUID | None  # None: created with the first messages, atomically
    history: list[Turn]
    rewrite_query: str
    rewrite_method: RewriteMethod
    evidence: Evidence
    context: BuiltContext  # the first write_k evidence chunks, numbered [1..m], within the token budget
    extra: list[ScoredChunk]  # further evidence, numbered after the context, kept for citation resolution
    fixed: str | None  # a reply that needs no model: clarify, or not in the documents
    fixed_kind: str | None  # "clarify" | "not_found"
    web: WebDiagnostics | None
    tools: AssistTools | None  # assist mode: the searches the model may run while answering
    started: float
    identity: Identity


class ChatService:
    """One chat turn: the retrieval pipeline, the web when needed, generation and persistence."""

    def __init__(
        self,
        db: Database,
        retrieval: RetrievalService,
        llm: LLM,
        settings: Settings,
        web: WebSearch,
        *,
        context_builder: ContextBuilder | None = None,
    ) -> None:
        self.db = db
        self.retrieval = retrieval
        self.llm = llm
        self.settings = settings
        self.web = web
        self.metrics: Metrics = retrieval.metrics
        self.context_builder = context_builder or ContextBuilder(
            settings, EstimateCounter(settings.context_estimate_margin, self.metrics), self.metrics
        )

    async def chat(self, request: ChatRequest, *, identity: Identity) -> ChatReply:
        """One turn as `identity`: its conversations, its documents and the public ones (RLS)."""
        prepared = await self._prepare(request, identity)
        if prepared.fixed is not None:
            return await asyncio.to_thread(self._finish, request, prepared, prepared.fixed)
        answer = await asyncio.to_thread(lambda: "".join(self._answer(request, prepared)))
        return await asyncio.to_thread(self._finish, request, prepared, answer)

    async def chat_stream(self, request: ChatRequest, *, identity: Identity) -> AsyncIterator[dict[str, Any]]:
        """Events: {"type": "delta", "text"} ..., then {"type": "done", **reply}."""
        prepared = await self._prepare(request, identity)
        if prepared.fixed is not None:
            text = prepared.fixed
            yield {"type": "delta", "text": text}
        else:
            parts = []
            async for delta in _in_threads(self._answer(request, prepared)):
                parts.append(delta)
                yield {"type": "delta", "text": delta}
            text = "".join(parts)
        reply = await asyncio.to_thread(self._finish, request, prepared, text)
        yield {"type": "done", **reply_to_dict(reply)}

    def _answer(self, request: ChatRequest, p: _Prepared) -> Iterator[str]:
        """The model's answer deltas (blocking): with the assist tools when the model can call them."""
        if p.tools is not None and isinstance(self.llm, ToolCallingLLM):
            return self.llm.answer_with_tools(request.message, p.context.sources, p.history, p.tools)
        return self.llm.answer(request.message, p.context.sources, p.history)

    # --- steps -----------------------------------------------------------------------------------

    async def _prepare(self, request: ChatRequest, identity: Identity) -> _Prepared:
        started = time.perf_counter()
        message = request.message.strip()
        if not message:
            raise InvalidInput("message is empty")
        if len(message) > self.settings.max_query_chars:
            raise InvalidInput(
                f"message has {len(message)} characters; the limit is {self.settings.max_query_chars}"
            )
        request.options.budget(self.settings)  # a bad option is a 422 before any work
        history = await asyncio.to_thread(self._history, request.conversation_id, identity)
        rewrite = await asyncio.to_thread(rewrite_followup, message, history, self.llm)
        evidence, web = await self._evidence(rewrite.query, request, identity)
        fixed, fixed_kind = self._fixed_reply(message, evidence)
        chunks = evidence.chunks if fixed_kind != "not_found" else self._related(evidence.search)
        context = await asyncio.to_thread(
            self.context_builder.build,
            chunks[: evidence.budget.write_k],
            scope=identity.cache_scope,
            question=message,
            history=history,
        )
        in_context = {c.chunk_id for c in context.chunks}
        seen = {c.content_hash for c in context.chunks}
        extra = []
        for chunk in chunks[evidence.budget.write_k :]:
            if chunk.chunk_id not in in_context and chunk.content_hash not in seen:
                seen.add(chunk.content_hash)
                extra.append(chunk)
        tools = None
        if fixed is None and self.settings.chat_assist_tools and isinstance(self.llm, ToolCallingLLM):
            tools = AssistTools(
                retrieval=self.retrieval,
                web=self.web,
                loop=asyncio.get_running_loop(),
                settings=self.settings,
                identity=identity,
                question=evidence.search,
                options=request.options,
                pack=[*context.chunks, *extra],
                offer_web=request.web is not False,
            )
        return _Prepared(
            request.conversation_id,
            history,
            rewrite.query,
            rewrite.method,
            evidence,
            context,
            extra,
            fixed,
            fixed_kind,
            web,
            tools,
            started,
            identity,
        )

    def _history(self, conversation_id: uuid.UUID | None, identity: Identity) -> list[Turn]:
        if conversation_id is None:
            return []
        with self.db.as_user(identity, read_only=True) as conn:
            return recent_turns(
                conn,
                conversation_id=conversation_id,
                identity=identity,
                limit=self.settings.chat_history_turns,
            )

    async def _evidence(
        self, query: str, request: ChatRequest, identity: Identity
    ) -> tuple[Evidence, WebDiagnostics | None]:
        """The main search, the route its confidence decides, the web leg when the request and the route
        call for it (beside the local search when web=True, after it when auto), one fusion."""
        s, options = self.settings, request.options
        beyond = await search_beyond(
            lambda: main_search(query, self.retrieval, s, options, identity=identity),
            query,
            self.web,
            s,
            request.web,
            caller=identity.cache_scope,
        )
        search = beyond.search
        passages = await asyncio.to_thread(
            web_passages, beyond.hits, self.retrieval.embedder, search.embedding, s
        )
        if beyond.web is not None:
            beyond.web.passages = len(passages)
        evidence = await asyncio.to_thread(
            gather_evidence,
            query,
            self.retrieval,
            self.llm,
            s,
            options,
            identity=identity,
            search=search,
            route=beyond.route,
            web=passages,
        )
        return evidence, beyond.web

    def _fixed_reply(self, message: str, evidence: Evidence) -> tuple[str | None, str | None]:
        """The reply that needs no model: a clarification question (two documents compete), or "not in
        the documents" (nothing relevant, or the documents do not answer and the web added nothing)."""
        if evidence.route == "clarify" and evidence.chunks:
            return self._clarification(message, evidence), "clarify"
        if not evidence.chunks:
            return self._not_in_documents(message), "not_found"
        return None, None

    def _clarification(self, message: str, evidence: Evidence) -> str:
        """Seed: need_hitl -> ask which of the top candidate documents the user means."""
        titles = [p["title"] or p["parent_id"] for p in evidence.confidence.get("top_parents", [])[:3]]
        name = "clarify_zh" if detect_lang(message) == "zh" else "clarify_en"
        joiner = "、" if name == "clarify_zh" else ", "
        return load_prompt(name).render(
            candidates=joiner.join(f"《{t}》" if joiner == "、" else t for t in titles)
        )

    @staticmethod
    def _not_in_documents(message: str) -> str:
        name = "not_found_zh" if detect_lang(message) == "zh" else "not_found_en"
        return load_prompt(name).render().strip()

    @staticmethod
    def _related(search: SearchResult) -> list[ScoredChunk]:
        """The closest documents' best chunks, listed (uncited) under a "not in the documents" reply."""
        related: list[ScoredChunk] = []
        for chunk in search.results:
            if chunk.document_id not in {c.document_id for c in related}:
                related.append(chunk)
        return related[:RELATED_DOCUMENTS]

    def _finish(self, request: ChatRequest, p: _Prepared, raw_answer: str) -> ChatReply:
        numbered = [*p.context.chunks, *p.extra, *(p.tools.found if p.tools else [])]
        answerable = p.fixed is None
        answer, cited, removed = validate_citations(raw_answer, len(numbered) if answerable else 0)
        in_context = len(p.context.chunks)
        sources = [
            source_record(n, chunk, cited=n in cited, in_context=answerable and n <= in_context)
            for n, chunk in enumerate(numbered, 1)
        ]
        generator = p.fixed_kind or self.llm.generator
        confidence = p.evidence.confidence
        diagnostics = ChatDiagnostics(
            rewrite=RewriteDiagnostics(query=p.rewrite_query, method=p.rewrite_method),
            retrieval=p.evidence.search.diagnostics,
            evidence=p.evidence.diagnostics,
            web=p.web,
            tool_calls=p.tools.calls if p.tools else [],
            confidence=ConfidenceSummary.model_validate(
                {k: confidence.get(k) for k in ConfidenceSummary.model_fields}
            ),
            context=ContextDiagnostics(
                sources=in_context if answerable else 0,
                extra_sources=len(p.extra),
                used_tokens=p.context.used_tokens,
                budget_tokens=self.settings.context_max_tokens,
                dropped_duplicates=p.context.dropped_duplicates,
                truncated=p.context.truncated,
                dropped_for_budget=p.context.dropped_for_budget,
                reply_reserve_tokens=self.settings.context_reply_tokens,
                prompt_tokens=p.context.prompt_tokens,
                available_tokens=p.context.available_tokens,
                dropped_near_duplicates=p.context.dropped_near_duplicates,
                counter=p.context.counter,
                counted=p.context.counted,
                counter_error=p.context.counter_error,
                dropped=p.context.dropped,
                ms=p.context.ms,
            ),
            citations=CitationDiagnostics(valid=sorted(cited), invalid_removed=removed),
            clarify=p.fixed_kind == "clarify",
            generator=generator,
            llm=self.llm.name if generator == self.llm.generator else None,
        )
        metadata = {
            "generator": generator,
            "route": p.evidence.route,
            "rewrite": diagnostics.rewrite.model_dump(),
            "citations": diagnostics.citations.model_dump(),
            "clarify": p.fixed_kind == "clarify",
            "gap_queries": p.evidence.diagnostics.gap.queries,
            "options": p.evidence.diagnostics.options.model_dump(mode="json"),
            "web": p.web.model_dump(mode="json") if p.web else None,
            "tool_calls": p.tools.calls if p.tools else [],
            "confidence": confidence,
        }
        with self.db.as_user(p.identity) as conn:
            conversation_id = p.conversation_id or conversations_repo.create_conversation(
                conn, owner_id=p.identity.user_id, title=request.message.strip()[:80]
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
                metadata=metadata,
            )
        diagnostics.total_ms = round((time.perf_counter() - p.started) * 1000, 3)
        observe_answer(
            self.metrics, p.context.chunks if answerable else [], p.web, p.evidence.search.reranker
        )
        return ChatReply(conversation_id, message_id, answer, sources, generator, diagnostics)


async def _in_threads(deltas: Iterator[str]) -> AsyncIterator[str]:
    """A blocking generator (an LLM SDK's stream) consumed one item per worker-thread hop, so the event
    loop stays free; closing this iterator (the client went away) closes the generator too."""
    try:
        while True:
            item = await asyncio.to_thread(next, deltas, None)
            if item is None:
                return
            yield item
    finally:
        close = getattr(deltas, "close", None)
        if close is not None:
            await asyncio.to_thread(close)
