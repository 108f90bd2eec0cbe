"""/chat on a sample of questions (web off, extractive generator), as a user would see the replies."""

from __future__ import annotations

import asyncio

from backend.auth import LOCAL_IDENTITY
from backend.chat.service import ChatReply, ChatRequest, ChatService
from backend.composition import Services
from bench.common import log
from bench.routing.records import ChatRecord
from bench.routing.split import Question

ANSWER_CHARS = 300  # of each reply kept for the failure examples


def outcome(reply: ChatReply) -> str:
    """A reply's outcome: "not_found" is the not-in-the-documents reply - fixed, or a model that read the
    evidence and declined (backend/chat/verdict.py) - "clarify" the question back ("none" was the
    not-found reply before routes), else "answer"."""
    if reply.diagnostics.model_verdict == "declined":
        return "not_found"
    fixed = {"none": "not_found", "not_found": "not_found", "clarify": "clarify"}
    return fixed.get(reply.generator, "answer")


def contains_gold(answer: str, golds: tuple[str, ...]) -> bool:
    text = answer.casefold()
    return any(g.strip() and g.strip().casefold() in text for g in golds)


def chat_sample(services: Services, set_name: str, sample: list[Question]) -> list[ChatRecord]:
    """Each sampled question through ChatService twice: as shipped (web off), and with clarification off."""
    return asyncio.run(_chat_sample(services, set_name, sample))


async def _chat_sample(services: Services, set_name: str, sample: list[Question]) -> list[ChatRecord]:
    no_clarify = ChatService(
        services.db,
        services.retrieval,
        services.llm,
        services.settings.model_copy(update={"chat_clarify_enabled": False}),
        services.web,
    )
    out = []
    for n, q in enumerate(sample, 1):
        reply = await services.chat.chat(ChatRequest(message=q.text, web=False), identity=LOCAL_IDENTITY)
        plain = await no_clarify.chat(ChatRequest(message=q.text, web=False), identity=LOCAL_IDENTITY)
        out.append(
            ChatRecord(
                qid=q.qid,
                answerable=q.answerable,
                outcome=outcome(reply),
                gold_in_answer=outcome(reply) == "answer" and contains_gold(reply.answer, q.answers),
                generator_answer=outcome(plain),
                generator_gold=outcome(plain) == "answer" and contains_gold(plain.answer, q.answers),
                answer=reply.answer[:ANSWER_CHARS],
            )
        )
        if n % 50 == 0:
            log(f"  {set_name}: {n}/{len(sample)} chat turns")
    return out
