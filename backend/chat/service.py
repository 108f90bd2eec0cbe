"""Chat: one turn reads prepare -> answer -> record. Prepare rewrites a follow-up, gathers the evidence
(backend/chat/evidence.py: the documents and, when they do not answer, the web) and builds the numbered
context; answer is the model's (or a fixed reply that needs none); record validates the citations and
stores the turn.

The turn is async: blocking work (the database, the local embedding model, the LLM SDK) runs in worker
threads, while the web leg runs on the event loop under a soft deadline (backend/web/softwait.py), so a
slow provider never holds a thread or the answer past WEB_SOFT_WAIT_MS.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.auth.identity import Identity
from backend.chat import direct
from backend.chat.assist import AssistTools
from backend.chat.citations import MARKER, Cited, cite, validate_citations
from backend.chat.context import BuiltContext, ContextBuilder
from backend.chat.conversations import PreviousAnswer, previous_answer, recent_turns, stored_scope
from backend.chat.diagnostics import (
    ChatDiagnostics,
    CitationDiagnostics,
    ConfidenceSummary,
    RewriteDiagnostics,
)
from backend.chat.direct import DirectTurn
from backend.chat.evidence import Evidence, EvidenceOptions, EvidenceSources, gather, gather_web_instead
from backend.chat.intent import classify
from backend.chat.record import ChatReply, reply_to_dict, save_turn
from backend.chat.rewrite import Rewrite, rewrite_followup
from backend.chat.short_answer import chat_short_answer
from backend.chat.verdict import model_verdict
from backend.config import Settings
from backend.db.database import Database
from backend.errors import InvalidInput
from backend.llm import LLM, Turn, load_prompt_for
from backend.llm.base import Sampling, ToolCallingLLM
from backend.llm.token_count import EstimateCounter
from backend.search.observe import observe_answer
from backend.search.service import RetrievalService
from backend.search.types import ScoredChunk, SearchResult
from backend.search.web import WebChoice
from backend.telemetry import Metrics
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
    # What the client asked of the generator (the OpenAI API's temperature / max_tokens); None: defaults.
    sampling: Sampling | None = None
    scope_from_conversation: bool = False  # no `collections` asked: the conversation's stored scope


@dataclass(frozen=True)
class FixedReply:
    """A reply that needs no model: a clarification question, or "not in the documents"."""

    text: str
    kind: Literal["clarify", "not_found"]


@dataclass(frozen=True, kw_only=True)
class PreparedTurn:
    identity: Identity
    message: str  # the user's message, stripped
    asked: str  # the message as sent: what the model answers
    conversation_id: uuid.UUID | None  # None: created with the first messages, atomically
    collections: list[uuid.UUID] | None = None  # the turn's scope, stored with the conversation
    history: list[Turn]
    rewrite: Rewrite
    evidence: Evidence
    context: BuiltContext  # the first write_k evidence chunks, numbered [1..m], within the token budget
    extra: list[ScoredChunk]  # further evidence, numbered after the context, kept for citation resolution
    fixed: FixedReply | None
    tools: AssistTools | None  # assist mode: the searches the model may run while answering
    started: float
    # The model read the documents' evidence and declined it; this turn's evidence is the web's.
    declined: bool = False

    def numbered(self) -> list[ScoredChunk]:
        """Every citable source in its number's order (the model's own searches last)."""
        return [*self.context.chunks, *self.extra, *(self.tools.found if self.tools else [])]


class ChatService:
    """One chat turn: the evidence pipeline, generation and persistence."""

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
        self.sources = EvidenceSources(retrieval, llm, web, settings)

    async def chat(self, request: ChatRequest, *, identity: Identity) -> ChatReply:
        """One turn as `identity`: its conversations, its documents and the public ones (RLS)."""
        turn = await self._prepare(request, identity)
        text = _fixed_text(turn)
        if text is None:
            text = await asyncio.to_thread(lambda: "".join(self._deltas(turn, request.sampling)))
            on_the_web = await self._web_instead(turn, request, text)
            if on_the_web is not None:
                turn = on_the_web
                text = await asyncio.to_thread(lambda: "".join(self._deltas(on_the_web, request.sampling)))
        return await asyncio.to_thread(self._store, turn, text)

    async def chat_stream(self, request: ChatRequest, *, identity: Identity) -> AsyncIterator[dict[str, Any]]:
        """Events: {"type": "delta", "text"} ..., then {"type": "done", **reply}. When the web may follow
        a declined answer, the deltas are held until the answer cites a source (then it streams on): a
        reply that declines is not shown when the web's answer replaces it."""
        turn = await self._prepare(request, identity)
        text = _fixed_text(turn)
        if text is not None:
            yield {"type": "delta", "text": text}
        else:
            held = self._web_may_follow(turn, request)
            parts: list[str] = []
            async for delta in _in_threads(self._deltas(turn, request.sampling)):
                parts.append(delta)
                if not held:
                    yield {"type": "delta", "text": delta}
                elif "]" in delta and MARKER.search("".join(parts)):
                    held = False  # it cites: an answer
                    yield {"type": "delta", "text": "".join(parts)}
            text = "".join(parts)
            on_the_web = await self._web_instead(turn, request, text) if held else None
            if on_the_web is not None:
                turn, parts = on_the_web, []
                async for delta in _in_threads(self._deltas(on_the_web, request.sampling)):
                    parts.append(delta)
                    yield {"type": "delta", "text": delta}
                text = "".join(parts)
            elif held:
                yield {"type": "delta", "text": text}
        reply = await asyncio.to_thread(self._store, turn, text)
        yield {"type": "done", **reply_to_dict(reply)}

    # --- the web after a declined answer -------------------------------------------------------

    def _web_may_follow(self, turn: PreparedTurn | DirectTurn, request: ChatRequest) -> bool:
        """web auto, a provider, a model that writes (it can decline), and no web leg or web tool yet."""
        return (
            isinstance(turn, PreparedTurn)
            and turn.fixed is None
            and request.web == "auto"
            and self.web.enabled
            and turn.evidence.web is None
            and turn.tools is None
            and direct.writes_freely(self.llm)
        )

    async def _web_instead(
        self, turn: PreparedTurn | DirectTurn, request: ChatRequest, text: str
    ) -> PreparedTurn | None:
        """The turn again on the web's evidence when the model declined the documents' (else None)."""
        if not isinstance(turn, PreparedTurn) or not self._web_may_follow(turn, request):
            return None
        answer, cited, _ = validate_citations(text, len(turn.numbered()))
        if model_verdict(answer, cited) != "declined":
            return None
        evidence = await gather_web_instead(
            turn.rewrite.query, turn.evidence, sources=self.sources, identity=turn.identity
        )
        if evidence is None:
            return None
        context, extra = await self._context(evidence, turn.message, turn.history, turn.identity)
        return dataclasses.replace(turn, evidence=evidence, context=context, extra=extra, declined=True)

    # --- prepare ---------------------------------------------------------------------------------

    async def _prepare(self, request: ChatRequest, identity: Identity) -> PreparedTurn | DirectTurn:
        started = time.perf_counter()
        message = self._checked(request.message)
        budget = request.options.budget(self.settings)  # the turn's one budget; a bad option is a 422 now
        history, previous = await asyncio.to_thread(self._history, request.conversation_id, identity)
        if request.scope_from_conversation and request.conversation_id is not None:
            stored = await asyncio.to_thread(stored_scope, self.db, request.conversation_id, identity)
            options = dataclasses.replace(request.options, collections=stored)
            request = dataclasses.replace(request, options=options)
        intent = classify(message, after_answer=previous is not None and previous.answered())
        if intent is not None:  # small talk, or an instruction about the previous answer: no search
            return await asyncio.to_thread(
                lambda: direct.prepare(
                    intent,
                    message,
                    conversation_id=request.conversation_id,
                    identity=identity,
                    history=history,
                    previous=previous,
                    started=started,
                    db=self.db,
                    llm=self.llm,
                )
            )
        rewrite = await asyncio.to_thread(rewrite_followup, message, history, self.llm, previous)
        evidence = await gather(
            rewrite.query, request.options, budget, request.web, sources=self.sources, identity=identity
        )
        fixed = self._fixed_reply(message, evidence)
        chunks = evidence.chunks if fixed is None or fixed.kind != "not_found" else _related(evidence.search)
        context, extra = await self._context(evidence, message, history, identity, chunks)
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
        return PreparedTurn(
            identity=identity,
            message=message,
            asked=request.message,
            conversation_id=request.conversation_id,
            collections=request.options.collections,
            history=history,
            rewrite=rewrite,
            evidence=evidence,
            context=context,
            extra=extra,
            fixed=fixed,
            tools=tools,
            started=started,
        )

    async def _context(
        self,
        evidence: Evidence,
        message: str,
        history: list[Turn],
        identity: Identity,
        chunks: list[ScoredChunk] | None = None,
    ) -> tuple[BuiltContext, list[ScoredChunk]]:
        """The numbered context of the first write_k chunks (the evidence's, unless given), and the rest
        as further citable evidence."""
        chunks = evidence.chunks if chunks is None else chunks
        write_k = evidence.budget.write_k
        context = await asyncio.to_thread(
            self.context_builder.build,
            chunks[:write_k],
            scope=identity.cache_scope,
            question=message,
            history=history,
        )
        return context, _extra(chunks[write_k:], context)

    def _checked(self, message: str) -> str:
        message = message.strip()
        if not message:
            raise InvalidInput("message is empty")
        if len(message) > self.settings.max_query_chars:
            raise InvalidInput(
                f"message has {len(message)} characters; the limit is {self.settings.max_query_chars}"
            )
        return message

    def _history(
        self, conversation_id: uuid.UUID | None, identity: Identity
    ) -> tuple[list[Turn], PreviousAnswer | None]:
        """The conversation's recent turns and its newest answer (not small talk)."""
        if conversation_id is None:
            return [], None
        with self.db.as_user(identity, read_only=True) as conn:
            turns = recent_turns(
                conn,
                conversation_id=conversation_id,
                identity=identity,
                limit=self.settings.chat_history_turns,
            )
            return turns, previous_answer(conn, conversation_id=conversation_id)

    def _fixed_reply(self, message: str, evidence: Evidence) -> FixedReply | None:
        """The reply that needs no model: a clarification question (two documents compete), or "not in
        the documents" (nothing relevant, or the documents do not answer and the web added nothing)."""
        if evidence.route == "clarify" and evidence.chunks:
            return FixedReply(_clarification(message, evidence), "clarify")
        if not evidence.chunks:
            if evidence.web is not None and evidence.web.local_timeout:
                # The documents were never searched: "not in the documents" would be a guess.
                return FixedReply(load_prompt_for("local_timeout", message).render().strip(), "not_found")
            return FixedReply(load_prompt_for("not_found", message).render().strip(), "not_found")
        return None

    # --- answer ----------------------------------------------------------------------------------

    def _answer(self, turn: PreparedTurn, sampling: Sampling | None) -> Iterator[str]:
        """The model's answer deltas (blocking): with the assist tools when the model can call them."""
        if turn.tools is not None and isinstance(self.llm, ToolCallingLLM):
            return self.llm.answer_with_tools(
                turn.asked, turn.context.sources, turn.history, turn.tools, sampling
            )
        # A generator that only quotes (extractive) reads no history: it picks sentences for the resolved
        # follow-up ("马飚毕业于哪所大学？"), not for 「它毕业于哪所大学？」 or 「为什么？」 alone.
        question = turn.asked if direct.writes_freely(self.llm) else turn.rewrite.query
        return self.llm.answer(question, turn.context.sources, turn.history, sampling)

    def _deltas(self, turn: PreparedTurn | DirectTurn, sampling: Sampling | None) -> Iterator[str]:
        if isinstance(turn, DirectTurn):
            return direct.answer(turn, self.llm, sampling)
        return self._answer(turn, sampling)

    # --- record ----------------------------------------------------------------------------------

    def _store(self, turn: PreparedTurn | DirectTurn, raw_answer: str) -> ChatReply:
        if isinstance(turn, DirectTurn):
            return direct.record(turn, raw_answer, db=self.db, llm=self.llm)
        return self._record(turn, raw_answer)

    def _record(self, turn: PreparedTurn, raw_answer: str) -> ChatReply:
        """The answer's citations validated, the turn stored as its caller, the reply and its metrics."""
        answerable = turn.fixed is None
        cited = cite(raw_answer, turn.numbered(), answerable=answerable, in_context=len(turn.context.chunks))
        generator = turn.fixed.kind if turn.fixed else self.llm.generator
        # The final reply declines: nothing the turn read (the documents, then perhaps the web) answered.
        declines = (
            answerable
            and direct.writes_freely(self.llm)
            and model_verdict(cited.answer, cited.cited) == "declined"
        )
        diagnostics = self._diagnostics(turn, cited, generator, declines)
        with self.db.as_user(turn.identity) as conn:
            conversation_id, message_id = save_turn(
                conn,
                identity=turn.identity,
                conversation_id=turn.conversation_id,
                message=turn.message,
                answer=cited.answer,
                sources=cited.sources,
                metadata=_metadata(turn, diagnostics, generator),
                collections=turn.collections,
            )
        diagnostics.total_ms = round((time.perf_counter() - turn.started) * 1000, 3)
        evidence = turn.evidence
        observe_answer(
            self.metrics, turn.context.chunks if answerable else [], evidence.web, evidence.search.reranker
        )
        return ChatReply(conversation_id, message_id, cited.answer, cited.sources, generator, diagnostics)

    def _diagnostics(
        self, turn: PreparedTurn, cited: Cited, generator: str, declines: bool
    ) -> ChatDiagnostics:
        answerable, evidence = turn.fixed is None, turn.evidence
        confidence = evidence.confidence
        return ChatDiagnostics(
            # The model declining overrides the score's route: what it read did not hold the answer.
            route="not_in_documents" if declines else evidence.route,
            model_verdict="declined" if declines or turn.declined else None,
            turn="question" if turn.rewrite.method == "unchanged" else "followup",
            rewrite=RewriteDiagnostics(query=turn.rewrite.query, method=turn.rewrite.method),
            retrieval=evidence.search.diagnostics,
            evidence=evidence.diagnostics,
            web=evidence.web,
            tool_calls=turn.tools.calls if turn.tools else [],
            confidence=ConfidenceSummary.model_validate(
                {k: confidence.get(k) for k in ConfidenceSummary.model_fields}
            ),
            context=turn.context.report(
                self.settings, shown=len(turn.context.chunks) if answerable else 0, extra=len(turn.extra)
            ),
            citations=CitationDiagnostics(valid=sorted(cited.cited), invalid_removed=cited.removed),
            clarify=turn.fixed is not None and turn.fixed.kind == "clarify",
            short_answer=chat_short_answer(turn.rewrite.query, cited, turn.numbered())
            if answerable and not declines
            else None,
            generator=generator,
            llm=self.llm.name if generator == self.llm.generator else None,
        )


def _fixed_text(turn: PreparedTurn | DirectTurn) -> str | None:
    """The reply that needs no model (small talk, a clarification, "not in the documents"), or None."""
    if isinstance(turn, DirectTurn):
        return turn.fixed
    return turn.fixed.text if turn.fixed else None


def _metadata(turn: PreparedTurn, diagnostics: ChatDiagnostics, generator: str) -> dict[str, Any]:
    """What the stored answer keeps of its turn (messages.metadata)."""
    evidence = turn.evidence
    return {
        "generator": generator,
        "route": diagnostics.route,
        "model_verdict": diagnostics.model_verdict,
        "turn": diagnostics.turn,
        "rewrite": diagnostics.rewrite.model_dump() if diagnostics.rewrite else None,
        "citations": diagnostics.citations.model_dump(),
        "clarify": diagnostics.clarify,
        "gap_queries": evidence.diagnostics.gap.queries,
        "options": evidence.diagnostics.options.model_dump(mode="json"),
        "web": evidence.web.model_dump(mode="json") if evidence.web else None,
        "tool_calls": turn.tools.calls if turn.tools else [],
        "confidence": evidence.confidence,
    }


def _extra(rest: list[ScoredChunk], context: BuiltContext) -> list[ScoredChunk]:
    """Evidence beyond write_k that the context does not hold already (by chunk or by text)."""
    in_context = {c.chunk_id for c in context.chunks}
    seen = {c.content_hash for c in context.chunks}
    extra = []
    for chunk in rest:
        if chunk.chunk_id not in in_context and chunk.content_hash not in seen:
            seen.add(chunk.content_hash)
            extra.append(chunk)
    return extra


def _clarification(message: str, evidence: Evidence) -> str:
    """Seed: need_hitl -> ask which of the top candidate documents the user means."""
    titles = [p["title"] or p["parent_id"] for p in evidence.confidence.get("top_parents", [])[:3]]
    prompt = load_prompt_for("clarify", message)
    joiner = "、" if prompt.name == "clarify_zh" else ", "
    return prompt.render(candidates=joiner.join(f"《{t}》" if joiner == "、" else t for t in titles))


def _related(search: SearchResult) -> list[ScoredChunk]:
    """The closest documents' best chunks, listed (uncited) under a "not in the documents" reply."""
    related: list[ScoredChunk] = []
    for chunk in search.results:
        if chunk.document_id not in {c.document_id for c in related}:
            related.append(chunk)
    return related[:RELATED_DOCUMENTS]


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
