"""Chat: rewrite a follow-up, retrieve, answer with [n] citations, validate them, persist the sources."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import conversations as conversations_repo
from backend.errors import InvalidInput, NotFound
from backend.llm import LLM, Turn, load_prompt
from backend.services.context import BuiltContext, build_context
from backend.services.diagnostics import (
    ChatDiagnostics,
    CitationDiagnostics,
    ConfidenceSummary,
    ContextDiagnostics,
    RewriteDiagnostics,
)
from backend.services.evidence import Evidence, EvidenceOptions, gather_evidence
from backend.services.retrieval import RetrievalService, ScoredChunk
from backend.services.rewrite import RewriteMethod, rewrite_followup
from backend.text import detect_lang

_MARKER = re.compile(r"\[(\s*\d+(?:\s*[,，、]\s*\d+)*\s*)\]")
_SNIPPET_CHARS = 300


@dataclass
class ChatRequest:
    message: str
    conversation_id: uuid.UUID | None = None
    options: EvidenceOptions = field(default_factory=EvidenceOptions)


@dataclass
class ChatReply:
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    answer: str
    sources: list[dict[str, Any]]
    generator: str
    diagnostics: ChatDiagnostics


@dataclass
class _Prepared:
    conversation_id: uuid.UUID | None  # None: created with the first messages, atomically
    history: list[Turn]
    rewrite_query: str
    rewrite_method: RewriteMethod
    evidence: Evidence
    context: BuiltContext  # the first write_k evidence chunks, numbered [1..m], within the token budget
    extra: list[ScoredChunk]  # further evidence, numbered after the context, kept for citation resolution
    clarify: str | None  # a clarification question instead of an answer (need_hitl)
    started: float
    identity: Identity


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

    def __init__(self, db: Database, retrieval: RetrievalService, llm: LLM, settings: Settings) -> None:
        self.db = db
        self.retrieval = retrieval
        self.llm = llm
        self.settings = settings

    def chat(self, request: ChatRequest, *, identity: Identity) -> ChatReply:
        """One turn as `identity`: its conversations, its documents and the public ones (RLS)."""
        prepared = self._prepare(request, identity)
        fixed = self._fixed_reply(request, prepared)
        if fixed is not None:
            return self._finish(request, prepared, fixed)
        answer = "".join(self.llm.answer(request.message, prepared.context.sources, prepared.history))
        return self._finish(request, prepared, answer)

    def chat_stream(self, request: ChatRequest, *, identity: Identity) -> Iterator[dict[str, Any]]:
        """Events: {"type": "delta", "text"} ..., then {"type": "done", **reply}."""
        prepared = self._prepare(request, identity)
        fixed = self._fixed_reply(request, prepared)
        if fixed is not None:
            text = fixed
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

    def _prepare(self, request: ChatRequest, identity: Identity) -> _Prepared:
        started = time.perf_counter()
        message = request.message.strip()
        if not message:
            raise InvalidInput("message is empty")
        if len(message) > self.settings.max_query_chars:
            raise InvalidInput(
                f"message has {len(message)} characters; the limit is {self.settings.max_query_chars}"
            )
        history: list[Turn] = []
        conversation_id = request.conversation_id
        with self.db.as_user(identity, read_only=True) as conn:
            if conversation_id is not None:
                if not conversations_repo.conversation_exists(
                    conn, conversation_id=conversation_id, owner_id=identity.user_id
                ):
                    raise NotFound(f"conversation {conversation_id} does not exist")
                history = [
                    Turn(role, content)
                    for role, content in conversations_repo.recent_messages(
                        conn, conversation_id=conversation_id, limit=self.settings.chat_history_turns
                    )
                ]
        rewrite = rewrite_followup(message, history, self.llm)
        evidence = gather_evidence(
            rewrite.query, self.retrieval, self.llm, self.settings, request.options, identity=identity
        )
        clarify = self._clarification(message, evidence)
        context = build_context(evidence.chunks[: evidence.budget.write_k], self.settings.context_max_tokens)
        in_context = {c.chunk_id for c in context.chunks}
        seen = {c.content_hash for c in context.chunks}
        extra = []
        for chunk in evidence.chunks[evidence.budget.write_k :]:
            if chunk.chunk_id not in in_context and chunk.content_hash not in seen:
                seen.add(chunk.content_hash)
                extra.append(chunk)
        return _Prepared(
            conversation_id,
            history,
            rewrite.query,
            rewrite.method,
            evidence,
            context,
            extra,
            clarify,
            started,
            identity,
        )

    def _fixed_reply(self, request: ChatRequest, p: _Prepared) -> str | None:
        """The reply that needs no model: not found, or a clarification question."""
        if not p.context.sources:
            return self._not_found_text(request.message)
        return p.clarify

    def _clarification(self, message: str, evidence: Evidence) -> str | None:
        """Seed: need_hitl -> ask which of the top candidate documents the user means."""
        confidence = evidence.confidence
        s = self.settings
        if not (s.chat_clarify_enabled and confidence.get("need_hitl") and evidence.chunks):
            return None
        if confidence.get("confidence_level") not in s.chat_clarify_levels:
            return None
        titles = [p["title"] or p["parent_id"] for p in confidence.get("top_parents", [])[:3]]
        name = "clarify_zh" if detect_lang(message) == "zh" else "clarify_en"
        joiner = "、" if name == "clarify_zh" else ", "
        return load_prompt(name).render(
            candidates=joiner.join(f"《{t}》" if joiner == "、" else t for t in titles)
        )

    def _finish(self, request: ChatRequest, p: _Prepared, raw_answer: str) -> ChatReply:
        found = bool(p.context.sources)
        numbered = [*p.context.chunks, *p.extra] if found else []
        answer, cited, removed = validate_citations(raw_answer, len(numbered))
        in_context = len(p.context.chunks)
        sources = [
            self._source_record(n, chunk, n in cited, n <= in_context) for n, chunk in enumerate(numbered, 1)
        ]
        generator = "none" if not found else "clarify" if p.clarify else self.llm.generator
        confidence = p.evidence.confidence
        diagnostics = ChatDiagnostics(
            rewrite=RewriteDiagnostics(query=p.rewrite_query, method=p.rewrite_method),
            retrieval=p.evidence.search.diagnostics,
            evidence=p.evidence.diagnostics,
            confidence=ConfidenceSummary.model_validate(
                {k: confidence.get(k) for k in ConfidenceSummary.model_fields}
            ),
            context=ContextDiagnostics(
                sources=in_context,
                extra_sources=len(p.extra),
                used_tokens=p.context.used_tokens,
                budget_tokens=self.settings.context_max_tokens,
                dropped_duplicates=p.context.dropped_duplicates,
                truncated=p.context.truncated,
                dropped_for_budget=p.context.dropped_for_budget,
            ),
            citations=CitationDiagnostics(valid=sorted(cited), invalid_removed=removed),
            clarify=p.clarify is not None,
            generator=generator,
            llm=self.llm.name if generator == self.llm.generator else None,
        )
        metadata = {
            "generator": generator,
            "rewrite": diagnostics.rewrite.model_dump(),
            "citations": diagnostics.citations.model_dump(),
            "clarify": p.clarify is not None,
            "gap_queries": p.evidence.diagnostics.gap.queries,
            "options": p.evidence.diagnostics.options.model_dump(mode="json"),
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
        return ChatReply(conversation_id, message_id, answer, sources, generator, diagnostics)

    @staticmethod
    def _source_record(n: int, chunk: ScoredChunk, cited: bool, in_context: bool) -> dict[str, Any]:
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
            "in_context": in_context,
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
        "diagnostics": reply.diagnostics.model_dump(mode="json"),
    }
