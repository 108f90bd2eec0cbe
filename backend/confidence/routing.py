"""The route a question takes after retrieval: answer, clarify, web fallback, or "not in the documents".

One decision for /chat (and later /research), so none of them answers from evidence the confidence
rejected (issue #18): with no web provider (or web off for the request) a web-fallback question is
told the documents do not contain the answer instead of getting a guess from unrelated passages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Literal

from backend.config import Settings

Route = Literal["answer", "clarify", "web_fallback", "not_in_documents"]
# A chat turn's route: one of the above after a search, or one taken before any search
# (backend/chat/intent.py): small talk, and an instruction about the previous answer.
ChatRoute = Route | Literal["conversational", "instruction"]
ALL_LEVELS = ("low", "medium", "high")


def decide_route(
    confidence: Mapping[str, Any], *, web_available: bool, clarify_levels: Collection[str] = ALL_LEVELS
) -> Route:
    """clarify when need_hitl (at one of clarify_levels), web_fallback / not_in_documents when the
    confidence asks for the web, else answer.

    With policy v3, need_hitl already means two documents that each look like they hold the answer
    (and caps the level at medium), so the default clarify_levels of the chat (low, medium) and
    ALL_LEVELS decide alike; with v1/v2, CHAT_CLARIFY_LEVELS keeps its meaning.
    """
    if confidence.get("need_hitl") and confidence.get("confidence_level") in clarify_levels:
        return "clarify"
    if confidence.get("web_fallback"):
        return "web_fallback" if web_available else "not_in_documents"
    return "answer"


def route_for(confidence: Mapping[str, Any], settings: Settings, *, web_available: bool) -> Route:
    """The route of a search's confidence under the settings (overall-score-confidence.md §8): answer
    from the documents; ask which document is meant (two relevant ones compete; CHAT_CLARIFY_ENABLED,
    CHAT_CLARIFY_LEVELS); go to the web, or say they do not hold the answer when no web search is
    available for this request."""
    if not settings.chat_clarify_enabled:
        confidence = {**confidence, "need_hitl": False}
    return decide_route(confidence, web_available=web_available, clarify_levels=settings.chat_clarify_levels)
