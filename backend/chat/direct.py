"""Turns answered without a search: small talk (a short reply in the user's language; "what can you do"
describes the collection the caller can read) and instructions about the previous answer (「展开说说」,
"shorter please", "translate that": with a model, the previous answer reworked from its own sources,
re-cited; without one, a plain reply that this needs a model; with one but nothing to work on — no
document the previous answer cited still readable — a reply that says so).

Replies are prompt files (backend/llm/prompts/chat_*.md, collection*.md, needs_model_*.md,
sources_gone_*.md, instruction.md).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from backend.auth.identity import Identity
from backend.chat.citations import validate_citations
from backend.chat.conversations import PreviousAnswer
from backend.chat.diagnostics import ChatDiagnostics, CitationDiagnostics
from backend.chat.intent import Intent
from backend.chat.record import ChatReply, save_turn
from backend.confidence.routing import ChatRoute
from backend.db.database import Database
from backend.db.repositories import documents as documents_repo
from backend.llm import LLM, Turn, load_prompt
from backend.llm.base import Sampling, SourceText
from backend.llm.prompts import untrusted_block
from backend.text import detect_lang

COLLECTION_SCAN = 50  # documents read to pick the main titles from (the largest of the newest)
COLLECTION_TITLES = 5
_LANGUAGE = {"zh": "Chinese (简体中文)", "en": "English"}


@dataclass(frozen=True, kw_only=True)
class DirectTurn:
    """A turn that searches nothing: its fixed reply, or what the model is asked to write."""

    identity: Identity
    message: str
    conversation_id: uuid.UUID | None
    history: list[Turn]
    intent: Intent
    fixed: str | None  # the reply when no model writes it
    fixed_generator: str = "conversational"  # conversational, needs_model or nothing_to_rework
    question: str = ""  # the instruction as the model reads it (with the previous answer)
    sources: list[SourceText]  # the previous answer's sources, re-read, their numbers kept
    records: list[dict[str, Any]]  # the previous answer's stored sources, which this reply re-cites
    query: str = ""  # the previous turn's query, kept for the next follow-up
    started: float

    @property
    def route(self) -> ChatRoute:
        return "conversational" if self.intent.kind == "small_talk" else "instruction"

    def generator(self, llm: LLM) -> str:
        if self.fixed is None:
            return llm.generator
        return self.fixed_generator


def prepare(
    intent: Intent,
    message: str,
    *,
    conversation_id: uuid.UUID | None,
    identity: Identity,
    history: list[Turn],
    previous: PreviousAnswer | None,
    started: float,
    db: Database,
    llm: LLM,
) -> DirectTurn:
    """Small talk's fixed reply; an instruction's question and sources for the model (or, without a
    model, or with nothing left to work on, the reply that says so). Blocking: reads the database."""
    fixed, fixed_generator, question, sources = None, "conversational", "", list[SourceText]()
    if intent.kind == "small_talk":
        fixed = small_talk_reply(intent, db, identity)
    elif not writes_freely(llm):
        fixed, fixed_generator = load_prompt(f"needs_model_{intent.lang}").render(), "needs_model"
    else:  # an instruction is recognised only after an answer (intent.classify): `previous` is there
        if previous is not None:
            question, sources = instruction_parts(intent, message, previous, db, identity)
        if not sources:  # the model would write from nothing: no grounded rework is possible
            fixed, fixed_generator = load_prompt(f"sources_gone_{intent.lang}").render(), "nothing_to_rework"
    return DirectTurn(
        identity=identity,
        message=message,
        conversation_id=conversation_id,
        history=history,
        intent=intent,
        fixed=fixed,
        fixed_generator=fixed_generator,
        question=question,
        sources=sources,
        records=previous.sources if previous else [],
        query=previous.query if previous else "",
        started=started,
    )


def answer(turn: DirectTurn, llm: LLM, sampling: Sampling | None) -> Iterator[str]:
    """The model reworking the previous answer from its sources (an instruction, with a model)."""
    return llm.answer(turn.question, turn.sources, turn.history, sampling)


def record(turn: DirectTurn, raw_answer: str, *, db: Database, llm: LLM) -> ChatReply:
    """The turn stored like any other (its sources: the previous answer's, re-cited), and the reply."""
    text, sources, cited, removed = recite(raw_answer, turn)
    diag = diagnostics(turn, cited, removed, llm)
    with db.as_user(turn.identity) as conn:
        conversation_id, message_id = save_turn(
            conn,
            identity=turn.identity,
            conversation_id=turn.conversation_id,
            message=turn.message,
            answer=text,
            sources=sources,
            metadata=metadata(turn, diag),
        )
    diag.total_ms = round((time.perf_counter() - turn.started) * 1000, 3)
    return ChatReply(conversation_id, message_id, text, sources, diag.generator, diag)


def writes_freely(llm: LLM) -> bool:
    """Whether the generator can write new text (a language model), not only quote the sources."""
    return llm.generator != "extractive"


def small_talk_reply(intent: Intent, db: Database, identity: Identity) -> str:
    """The fixed reply to a greeting, thanks, goodbye, "who are you" or "what can you do"."""
    prompt = load_prompt(f"chat_{intent.name}_{intent.lang}")
    if intent.name != "capabilities":
        return prompt.render()
    return prompt.render(collection=describe_collection(intent.lang, db, identity))


def describe_collection(lang: str, db: Database, identity: Identity) -> str:
    """How many documents the caller can read (RLS) and a few of the main titles."""
    with db.as_user(identity, read_only=True) as conn:
        rows, total = documents_repo.list_documents(
            conn, viewer=identity.user_id, all_rows=identity.is_service, limit=COLLECTION_SCAN, offset=0
        )
    if not total:
        return load_prompt(f"collection_empty_{lang}").render()
    largest = sorted(rows, key=lambda r: -int(r.get("chunk_count") or 0))[:COLLECTION_TITLES]
    titles = [str(r["title"] or r["external_id"]) for r in largest]
    joined = "、".join(f"《{t}》" for t in titles) if lang == "zh" else ", ".join(f"“{t}”" for t in titles)
    return load_prompt(f"collection_{lang}").render(count=total, titles=joined)


def instruction_parts(
    intent: Intent, message: str, previous: PreviousAnswer, db: Database, identity: Identity
) -> tuple[str, list[SourceText]]:
    """What the model is asked (the instruction, the previous answer) and the previous answer's sources,
    their full text re-read as the caller (a source it can no longer read keeps its stored snippet)."""
    local_ids = [int(s["chunk_id"]) for s in previous.sources if s.get("chunk_id") is not None]
    with db.as_user(identity, read_only=True) as conn:
        texts = documents_repo.chunk_contents(
            conn, chunk_ids=local_ids, viewer=identity.user_id, all_rows=identity.is_service
        )
    sources = [
        SourceText(
            n=int(s["n"]),
            title=str(s.get("title") or ""),
            heading=str(s.get("heading") or ""),
            content=_text_of(s, texts),
        )
        for s in previous.sources
        if (s.get("cited") or s.get("in_context")) and not s.get("deleted")
    ]
    question = load_prompt("instruction").render(
        instruction=message,
        language=_LANGUAGE[_target_language(intent, previous)],
        answer=untrusted_block("conversation", previous.content),
    )
    return question, [s for s in sources if s.content]


def _text_of(source: dict[str, Any], texts: dict[int, str]) -> str:
    full = texts.get(int(source["chunk_id"])) if source.get("chunk_id") is not None else None
    return full or str(source.get("snippet") or "")


def _target_language(intent: Intent, previous: PreviousAnswer) -> str:
    if intent.name == "to_english":
        return "en"
    if intent.name == "to_chinese":
        return "zh"
    if intent.name == "translate":  # into the other language than the answer's
        return "en" if detect_lang(previous.content) == "zh" else "zh"
    return intent.lang


def recite(raw_answer: str, turn: DirectTurn) -> tuple[str, list[dict[str, Any]], set[int], int]:
    """The reply's citations checked against the previous answer's numbered sources, which it stores
    again with `cited` set anew (answer, sources, cited numbers, markers removed)."""
    if turn.fixed is not None:
        return raw_answer, [], set(), 0
    allowed = {s.n for s in turn.sources}
    answer, cited, removed = validate_citations(raw_answer, max(allowed, default=0))
    records = [
        {**r, "cited": int(r["n"]) in cited, "in_context": int(r["n"]) in allowed}
        for r in turn.records
        if not r.get("deleted")
    ]
    return answer, records, cited, removed


def diagnostics(turn: DirectTurn, cited: set[int], removed: int, llm: LLM) -> ChatDiagnostics:
    generator = turn.generator(llm)
    return ChatDiagnostics(
        route=turn.route,
        turn="conversational" if turn.intent.kind == "small_talk" else "instruction",
        intent=turn.intent.name,
        rewrite=None,
        retrieval=None,
        evidence=None,
        confidence=None,
        context=None,
        citations=CitationDiagnostics(valid=sorted(cited), invalid_removed=removed),
        clarify=False,
        generator=generator,
        llm=llm.name if generator == llm.generator else None,
    )


def metadata(turn: DirectTurn, diag: ChatDiagnostics) -> dict[str, Any]:
    """What the stored answer keeps of a direct turn (messages.metadata): the page redraws its badge,
    and the next follow-up reads the query it carried over."""
    return {
        "generator": diag.generator,
        "route": turn.route,
        "turn": diag.turn,
        "intent": turn.intent.name,
        "rewrite": {"query": turn.query, "method": "unchanged"},
        "citations": diag.citations.model_dump(),
        "clarify": False,
    }
