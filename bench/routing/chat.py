"""/chat on a sample of questions (web off, extractive generator), as a user would see the replies."""

from __future__ import annotations

from backend.services.chat import ChatRequest, ChatService
from backend.services.container import Services
from bench.common import log
from bench.routing.records import ChatRecord
from bench.routing.split import Question

ANSWER_CHARS = 300  # of each reply kept for the failure examples


def outcome(generator: str) -> str:
    """ChatReply.generator -> outcome: "none" is the not-found reply, "clarify" the question back."""
    return {"none": "not_found", "clarify": "clarify"}.get(generator, "answer")


def contains_gold(answer: str, golds: tuple[str, ...]) -> bool:
    text = answer.casefold()
    return any(g.strip() and g.strip().casefold() in text for g in golds)


def chat_sample(services: Services, set_name: str, sample: list[Question]) -> list[ChatRecord]:
    """Each sampled question through ChatService twice: as shipped, and with clarification off."""
    no_clarify = ChatService(
        services.pool,
        services.retrieval,
        services.llm,
        services.settings.model_copy(update={"chat_clarify_enabled": False}),
    )
    out = []
    for n, q in enumerate(sample, 1):
        reply = services.chat.chat(ChatRequest(message=q.text))
        plain = no_clarify.chat(ChatRequest(message=q.text))
        out.append(
            ChatRecord(
                qid=q.qid,
                answerable=q.answerable,
                outcome=outcome(reply.generator),
                gold_in_answer=outcome(reply.generator) == "answer"
                and contains_gold(reply.answer, q.answers),
                generator_answer=outcome(plain.generator),
                generator_gold=outcome(plain.generator) == "answer"
                and contains_gold(plain.answer, q.answers),
                answer=reply.answer[:ANSWER_CHARS],
            )
        )
        if n % 50 == 0:
            log(f"  {set_name}: {n}/{len(sample)} chat turns")
    return out
