"""A prepared chat turn - what the pipeline gathered before the answer is written - and the helpers that
shape its reply: the fixed text that needs no model, the clarification question, the related documents
under "not in the documents", further citable evidence, the stored metadata, and the stream's hop from
a blocking generator to the event loop."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from backend.auth.identity import Identity
from backend.chat.assist import AssistTools
from backend.chat.context import BuiltContext
from backend.chat.diagnostics import ChatDiagnostics
from backend.chat.direct import DirectTurn
from backend.chat.evidence import Evidence
from backend.chat.rewrite import Rewrite
from backend.llm import Turn, load_prompt_for
from backend.search.types import ScoredChunk, SearchResult

RELATED_DOCUMENTS = 3  # a "not in the documents" reply lists this many closest documents, uncited


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


def fixed_text(turn: PreparedTurn | DirectTurn) -> str | None:
    """The reply that needs no model (small talk, a clarification, "not in the documents"), or None."""
    if isinstance(turn, DirectTurn):
        return turn.fixed
    return turn.fixed.text if turn.fixed else None


def turn_metadata(turn: PreparedTurn, diagnostics: ChatDiagnostics, generator: str) -> dict[str, Any]:
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


def extra_evidence(rest: list[ScoredChunk], context: BuiltContext) -> list[ScoredChunk]:
    """Evidence beyond write_k that the context does not hold already (by chunk or by text)."""
    in_context = {c.chunk_id for c in context.chunks}
    seen = {c.content_hash for c in context.chunks}
    extra = []
    for chunk in rest:
        if chunk.chunk_id not in in_context and chunk.content_hash not in seen:
            seen.add(chunk.content_hash)
            extra.append(chunk)
    return extra


def clarification(message: str, evidence: Evidence) -> str:
    """Seed: need_hitl -> ask which of the top candidate documents the user means."""
    titles = [p["title"] or p["parent_id"] for p in evidence.confidence.get("top_parents", [])[:3]]
    prompt = load_prompt_for("clarify", message)
    joiner = "、" if prompt.name == "clarify_zh" else ", "
    return prompt.render(candidates=joiner.join(f"《{t}》" if joiner == "、" else t for t in titles))


def related_documents(search: SearchResult) -> list[ScoredChunk]:
    """The closest documents' best chunks, listed (uncited) under a "not in the documents" reply."""
    related: list[ScoredChunk] = []
    for chunk in search.results:
        if chunk.document_id not in {c.document_id for c in related}:
            related.append(chunk)
    return related[:RELATED_DOCUMENTS]


async def in_threads(deltas: Iterator[str]) -> AsyncIterator[str]:
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
