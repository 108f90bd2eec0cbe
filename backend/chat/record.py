"""What a chat turn leaves behind: the user's message and the answer with its numbered sources and
metadata, stored in the caller's conversation (created with the first turn), and the reply as the API
returns it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

import psycopg

from backend.auth.identity import Identity
from backend.chat.diagnostics import ChatDiagnostics
from backend.db.repositories import conversations as conversations_repo


@dataclass
class ChatReply:
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    answer: str
    sources: list[dict[str, Any]]
    generator: str
    diagnostics: ChatDiagnostics


def save_turn(
    conn: psycopg.Connection,
    *,
    identity: Identity,
    conversation_id: uuid.UUID | None,
    message: str,
    answer: str,
    sources: list[dict[str, Any]],
    metadata: dict[str, Any],
    collections: list[uuid.UUID] | None | EllipsisType = ...,
) -> tuple[uuid.UUID, uuid.UUID]:
    """The question and the answer, in one transaction (`conn`, as `identity`): (conversation, message).
    A turn that searched stores its scope with the conversation (`collections`; None: everything), so
    a reload keeps it; one that did not (small talk: `...`) leaves the stored scope alone."""
    if conversation_id is None:
        conversation_id = conversations_repo.create_conversation(
            conn,
            owner_id=identity.user_id,
            title=message[:80],
            collections=None if collections is ... else collections,
        )
    elif collections is not ...:
        conversations_repo.set_scope(conn, conversation_id=conversation_id, collections=collections)
    conversations_repo.add_message(conn, conversation_id=conversation_id, role="user", content=message)
    message_id = conversations_repo.add_message(
        conn,
        conversation_id=conversation_id,
        role="assistant",
        content=answer,
        sources=sources,
        metadata=metadata,
    )
    return conversation_id, message_id


def reply_to_dict(reply: ChatReply) -> dict[str, Any]:
    return {
        "conversation_id": str(reply.conversation_id),
        "message_id": str(reply.message_id),
        "answer": reply.answer,
        "sources": reply.sources,
        "generator": reply.generator,
        "diagnostics": reply.diagnostics.model_dump(mode="json"),
    }
