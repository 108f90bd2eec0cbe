"""The conversation benchmark's chats, through the real ChatService (web off, extractive generator)."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from backend.auth import LOCAL_IDENTITY
from backend.chat.intent import classify
from backend.chat.service import ChatReply, ChatRequest
from backend.composition import Services
from bench.common import log
from bench.common.beir import load_dataset
from bench.conversation.lists import DEMO_QUESTIONS, SMALL_TALK
from bench.conversation.pairs import Pair
from bench.routing.chat import contains_gold, outcome

ANSWER_CHARS = 200  # of each reply kept in the results


async def ask(services: Services, message: str, conversation_id: uuid.UUID | None = None) -> ChatReply:
    request = ChatRequest(message=message, conversation_id=conversation_id, web=False)
    return await services.chat.chat(request, identity=LOCAL_IDENTITY)


def cites(reply: ChatReply, wanted: str, *, suffix: bool = False) -> bool:
    """A cited source is the wanted document (its external id, or for files the end of its path)."""
    return any(
        s.get("cited")
        and (s.get("external_id", "").endswith(wanted) if suffix else s.get("external_id") == wanted)
        for s in reply.sources
    )


def searched(reply: ChatReply) -> bool:
    """The turn ran a search (a conversational reply does not)."""
    retrieval = getattr(reply.diagnostics, "retrieval", None)
    return retrieval is not None


@dataclass
class Turn:
    outcome: str  # answer / not_found / clarify
    gold_cited: bool  # a cited source is the gold paragraph
    gold_string: bool  # answered, and the reply holds a gold answer string
    rewrite: str  # the query the turn searched with
    rewrite_method: str
    answer: str


def turn(reply: ChatReply, gold_doc: str, answers: tuple[str, ...]) -> Turn:
    kind = outcome(reply)
    return Turn(
        kind,
        cites(reply, gold_doc),
        kind == "answer" and contains_gold(reply.answer, answers),
        reply.diagnostics.rewrite.query if reply.diagnostics.rewrite else "",
        reply.diagnostics.rewrite.method if reply.diagnostics.rewrite else reply.diagnostics.route,
        reply.answer[:ANSWER_CHARS],
    )


async def run_pairs(services: Services, pairs: list[Pair]) -> list[dict[str, Any]]:
    """Each pair: turn 1 then the pronoun follow-up in one conversation; the follow-up alone; the
    original wording alone."""
    out = []
    for n, p in enumerate(pairs, 1):
        gold, answers = p.gold_doc, p.turn2.answers
        first = await ask(services, p.turn1.text)
        followup = await ask(services, p.followup, first.conversation_id)
        alone = await ask(services, p.followup)
        original = await ask(services, p.turn2.text)
        out.append(
            {
                "set": p.set,
                "gold_doc": gold,
                "title": p.title,
                "pronoun": p.pronoun,
                "turn1": p.turn1.text,
                "turn1_names_title": p.turn1_names_title,
                "turn1_outcome": outcome(first),
                "original": p.turn2.text,
                "followup": p.followup,
                "in_conversation": asdict(turn(followup, gold, answers)),
                "alone": asdict(turn(alone, gold, answers)),
                "original_alone": asdict(turn(original, gold, answers)),
            }
        )
        if n % 20 == 0:
            log(f"  {p.set}: {n}/{len(pairs)} pairs")
    return out


async def run_small_talk(services: Services) -> list[dict[str, Any]]:
    out = []
    for lang, message in SMALL_TALK:
        reply = await ask(services, message)
        out.append(
            {
                "lang": lang,
                "message": message,
                "outcome": outcome(reply),
                "generator": reply.generator,
                "route": reply.diagnostics.route,
                "intent": reply.diagnostics.intent,
                "sources": len(reply.sources),
                "searched": searched(reply),
                "answer": reply.answer[:ANSWER_CHARS],
            }
        )
    return out


def misread_questions(names: list[str], root: Path) -> dict[str, Any]:
    """Every question of the named development sets through the turn classifier, as if asked after an
    answer (instructions count too): how many would not be searched (the target is none)."""
    counts: dict[str, int] = {}
    misread: list[dict[str, str]] = []
    for name in names:
        queries = load_dataset(name, root).queries
        counts[name] = len(queries)
        for qid, text in queries:
            intent = classify(text, after_answer=True)
            if intent is not None:
                misread.append({"set": name, "qid": qid, "text": text, "intent": intent.name})
    return {"questions": counts, "misread": misread}


async def run_demo(services: Services) -> list[dict[str, Any]]:
    out = []
    for q in DEMO_QUESTIONS:
        reply = await ask(services, q.text)
        kind = outcome(reply)
        out.append(
            {
                "question": q.text,
                "source": q.source,
                "outcome": kind,
                "gold_string": kind == "answer" and contains_gold(reply.answer, q.answers),
                "source_cited": cites(reply, q.source, suffix=True),
                "confidence": c.confidence_level if (c := reply.diagnostics.confidence) else None,
                "answer": reply.answer[:ANSWER_CHARS],
            }
        )
    return out
